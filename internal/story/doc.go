// Package story holds the whole-cluster stories: `vipstack node`, the
// demo cluster, keepalived, haproxy and CoreDNS run as processes in network
// namespaces and play what the seeds' clusters go through (boot, checks
// failing, reloads, mixed clusters in mid-migration). It has tests only;
// the logic they exercise lives in internal/node and the packages it uses.
package story
