// Package announce sends unsolicited address announcements, so that hosts
// and switches on a link learn at once that a virtual IP moved to this node:
//
//   - gratuitous ARP for IPv4: an ARP request (RFC 826) for the address from
//     the address itself, broadcast, sender = target = the VIP, as
//     RFC 5227 section 3 ("ARP Announcement") describes and keepalived
//     sends (target hardware address ff:ff:ff:ff:ff:ff, as keepalived);
//   - unsolicited Neighbor Advertisements for IPv6, RFC 4861 section 7.2.6:
//     from the VIP to the all-nodes group ff02::1, hop limit 255, Override
//     set, Solicited and Router clear, with the Target Link-Layer Address
//     option.
//
// MarshalGARP and MarshalNA build the exact bytes (they match frames captured
// from keepalived 2.2.7, kept in testdata/). An Announcer sends them on one
// interface; a Pacer spreads many announcements over time on an injected
// clock, so thousands of VIPs do not flood the switch, and repeats them the
// way keepalived's garp_master_repeat and garp_master_delay do.
//
// Sending is Linux-only; on other systems New returns ErrUnsupported.
package announce
