// Package stats holds the load balancer's figures as haproxy 2.6 shows
// them: the Snapshot of every frontend, backend, server and monitor or
// stats section, its renderers (the stats page's HTML, `;csv`, `;json`
// and `show stat typed`), the filters of `show stat`, and the counters
// behind the rates and times (haproxy's freq_ctr and swrate). It knows
// nothing of the relay: internal/lb fills the snapshot.
// docs/design/lb.md has the design.
package stats
