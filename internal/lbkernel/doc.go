// Package lbkernel is the load balancer's kernel data path: mode tcp
// frontends served by nftables destination NAT (one table, "vipstack_lb",
// with a prerouting and an output chain), while the health checks stay in
// user space (internal/lb) and rewrite each backend's map of servers in
// one transaction when a server goes up, down, into maintenance or drain,
// or changes weight. Plan decides which frontends the kernel can serve as
// haproxy would and names the directive that keeps any other in user
// space; Ruleset prints the table in nft's syntax (nft's own listing
// differs in details: counters, set sizes, implied matches). See
// docs/design/lb-kernel.md.
package lbkernel
