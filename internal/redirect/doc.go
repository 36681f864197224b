// Package redirect sends TCP traffic for the API VIP to the local load
// balancer frontend with an nftables table of its own: a nat chain on the
// prerouting hook for remote clients and one on the output hook for
// clients on the node itself, each with `redirect to :PORT` (the kernel's
// REDIRECT target: destination NAT to an address of the receiving
// interface, or to the loopback address for local traffic), as nft(8)
// describes among its NAT statements.
//
// This is what OpenShift's on-prem networking does while haproxy's monitor
// URI answers: clients keep using VIP:6443 and reach every healthy API
// server through the balancer on the node that holds the VIP.
//
// The table is named after the VIP and port it captures
// (vipstack_redirect_198_18_0_5_6443), so redirects for several VIPs
// coexist, and enabling a redirect for the same VIP with a new frontend
// port replaces the old one atomically. Enable flushes and rebuilds the
// table in one netlink batch (one nftables transaction), so it is
// idempotent and never leaves a half-built table; Disable deletes it and
// does not mind when it is already gone.
//
// The rules redirect only while a lease runs: the table holds a set
// ("lease") with the VIP's port, added with a timeout (DefaultLease, 5 s),
// and the rules match `tcp dport @lease`. Enable starts a lease and Renew
// starts the next one; a Follower renews five times per lease while the
// redirect is enabled. A process that dies without Disable (SIGKILL, a
// panic, the OOM killer) leaves its table, but once the lease runs out the
// set is empty and the VIP's clients reach what listens on VIP:PORT itself
// (the node's API server) instead of a frontend that no longer runs. The
// node agent's supervisor also sweeps such tables when it restarts the
// agent (Sweep).
//
// Remote clients arrive at an address of the interface they came in on
// and local clients at 127.0.0.1 or ::1, so the frontend must listen on
// those: the seeds' `bind :::9445 v4v6` (every address, both families)
// does.
//
// A Follower's State says whether its redirect is in effect, the verdict it
// follows, and its failures in a row with the last error: the node agent's
// status reports it, since the load balancer's health alone does not say
// whether clients of the VIP reach it.
//
// A reload that moves the frontend to another port goes through a Mover:
// the balancer listens on both ports until every redirect has moved.
//
// Operations act on the network namespace of the calling thread. Render
// returns the same ruleset as `nft list table` text, for documentation and
// for tests that compare it with what the kernel holds.
package redirect
