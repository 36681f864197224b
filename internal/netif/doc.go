// Package netif manages virtual IP addresses (VIPs) and watches links through
// rtnetlink, the Linux routing socket described in RFC 3549 and netlink(7),
// rtnetlink(7).
//
// It adds and removes VIPs the way keepalived does: IPv6 VIPs carry
// IFA_F_NODAD so they are usable at once (RFC 4862 section 5.4 duplicate
// address detection would otherwise hold them "tentative" for about a
// second) and, unless VIP.Preferred is set, a preferred lifetime of 0 so the
// kernel does not pick them as the source of outgoing connections (RFC 4862
// section 5.5.4, "deprecated"); IPv4 VIPs may carry a label ("eth0:vip").
//
// A Ledger file records every VIP the process may hold before it is added,
// so that a later start (or a supervisor after kill -9) can Sweep addresses
// a crashed run left behind: without it two nodes would answer for one VIP.
//
// The work is Linux-only; on other systems Open returns ErrUnsupported.
package netif
