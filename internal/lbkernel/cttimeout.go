package lbkernel

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DNATTimeWait is how long conntrack keeps a connection the kernel path
// DNATed once it reaches TIME_WAIT, instead of the host's
// nf_conntrack_tcp_timeout_time_wait (120 s by default). At a high rate
// of short connections from many clients, the 120 s entries fill the
// table (nf_conntrack_max, 262144 here) and conntrack drops new SYNs;
// with 10 s the entries of a given rate are 12 times fewer. The entry
// only translates late segments of a closed connection (a retransmitted
// last ACK or FIN, within 10 s covered); one that comes later is
// translated afresh or answered with a reset, as for an unknown
// connection. See docs/design/lb-kernel.md.
const DNATTimeWait = 10 * time.Second

// TCPStates are conntrack's TCP states in the kernel's order (the ct
// timeout object's policy attributes, CTA_TIMEOUT_TCP_*), as nft names
// them, with the sysctl that holds the host's timeout of each
// (syn_sent2 has none: it takes syn_sent's).
var TCPStates = []struct{ Name, Sysctl string }{
	{"syn_sent", "syn_sent"}, {"syn_recv", "syn_recv"}, {"established", "established"},
	{"fin_wait", "fin_wait"}, {"close_wait", "close_wait"}, {"last_ack", "last_ack"},
	{"time_wait", "time_wait"}, {"close", "close"}, {"syn_sent2", "syn_sent"},
	{"retransmit", "max_retrans"}, {"unacknowledged", "unacknowledged"},
}

// ctTimeoutObj names the ct timeout object of the DNATed connections.
const ctTimeoutObj = "dnated"

// DNATTimeouts are the per-state TCP timeouts (seconds, in TCPStates'
// order) for the connections the kernel path DNATs: the host's own,
// which read(sysctl name) returns, except TIME_WAIT, at most
// DNATTimeWait. Every state is given: a ct timeout object's missing
// states would take the library's defaults (established 12 h), not the
// host's (5 days by default), and close idle connections the host would
// keep.
func DNATTimeouts(read func(sysctl string) (string, error)) ([]uint32, error) {
	out := make([]uint32, len(TCPStates))
	for i, s := range TCPStates {
		name := "nf_conntrack_tcp_timeout_" + s.Sysctl
		v, err := read(name)
		if err != nil {
			return nil, fmt.Errorf("read net.netfilter.%s: %w", name, err)
		}
		v = strings.TrimSpace(v)
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("net.netfilter.%s: %q is not a number of seconds", name, v)
		}
		out[i] = uint32(n)
		if s.Name == "time_wait" {
			out[i] = min(out[i], uint32(DNATTimeWait/time.Second))
		}
	}
	return out, nil
}

// ctTimeoutText is the object's policy in nft's syntax.
func ctTimeoutText(ts []uint32) string {
	parts := make([]string, len(ts))
	for i, v := range ts {
		parts[i] = fmt.Sprintf("%s : %d", TCPStates[i].Name, v)
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}
