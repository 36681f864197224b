package engine

import (
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/peers"
)

// metricTotal sums the samples of the counter family name in reg.
func metricTotal(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// TestSendFailuresLoggedOnce: a master whose advertisements cannot leave
// (an nftables rule drops them on output: sendmsg fails with EPERM; here
// the node's sends fail so) logs the failure once, not once per
// advertisement (an audit counted 508 lines in 10 s at 100 ms adverts),
// and logs when sending works again.
func TestSendFailuresLoggedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := (&simSegment{}).node("node", "198.18.0.1/24")
		vip := netip.MustParseAddr("198.18.0.100")
		text := simConf(t, peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 53, Priority: 100,
			VIP: netip.PrefixFrom(vip, 32)}, node.name)
		reg := prometheus.NewRegistry()
		e, log := simEngine(t, node, text, nil, func(o *Options) { o.Registry = reg })
		simRun(t, e)
		simWaitSole(t, []*simNode{node}, vip, node, time.Second, 20*time.Second, "vipstack did not become master")

		node.failSends(syscall.EPERM)
		failed := func() int { return strings.Count(log.String(), `msg="sending advertisement failed"`) }
		simWaitFor(t, "a failed send is logged", func() (bool, string) { return failed() > 0, "no such line" })
		// Twenty failed advertisements, as the engine counts them.
		simWaitFor(t, "20 failed sends counted", func() (bool, string) {
			return metricTotal(t, reg, "vipstack_vrrp_advert_send_errors_total") >= 20, "fewer counted"
		})
		if got := failed(); got != 1 {
			t.Fatalf("%d lines for 20 or more failed sends, want 1", got)
		}
		node.failSends(nil)
		simWaitFor(t, "sending again is logged", func() (bool, string) {
			return strings.Contains(log.String(), `msg="sending advertisements again"`), "no such line"
		})
	})
}
