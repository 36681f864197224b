package engine

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/keepalived"
)

// flagProbe fails while fail is set: a vrrp_script in-process.
type flagProbe struct{ fail *atomic.Bool }

func (p flagProbe) Probe(context.Context) error {
	if p.fail.Load() {
		return errors.New("exit status 1")
	}
	return nil
}

// TestSyncGroup: two instances in a vrrp_sync_group on one node. When a
// weight-0 script puts one of them in FAULT, the whole group leaves and
// the other node takes both VIPs; when it recovers, both come back. (In
// namespaces the script was `test ! -e flag` and the other node
// keepalived; here the script is an in-process probe, as
// keepalived.Script.Probe allows, and the other node an engine.)
func TestSyncGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		nodes := []*simNode{seg.node("node1", "198.18.0.1/24"), seg.node("node2", "198.18.0.2/24")}
		var fail atomic.Bool
		conf := func(prio int, script bool) string {
			var b strings.Builder
			b.WriteString("global_defs {\n    vrrp_version 3\n}\n")
			if script {
				b.WriteString("vrrp_script chk {\n    script \"/bin/true\"\n    interval 1\n    weight 0\n}\n")
			}
			b.WriteString("vrrp_sync_group G {\n    group {\n        VI_1\n        VI_2\n    }\n}\n")
			for i, vip := range []string{"198.18.0.101/32", "198.18.0.102/32"} {
				fmt.Fprintf(&b, "vrrp_instance VI_%d {\n    state BACKUP\n    interface eth0\n    virtual_router_id %d\n    priority %d\n    advert_int 0.1\n    virtual_ipaddress {\n        %s\n    }\n", i+1, 61+i, prio, vip)
				if script && i == 1 {
					b.WriteString("    track_script {\n        chk\n    }\n")
				}
				b.WriteString("}\n")
			}
			return b.String()
		}
		e, log := simEngine(t, nodes[0], conf(150, true), nil, func(o *Options) {
			path := o.ConfigPath
			o.Load = func() (*keepalived.Config, error) {
				cfg, err := Check(path)
				if err != nil {
					return nil, err
				}
				cfg.Scripts["chk"].Probe = flagProbe{fail: &fail}
				return cfg, nil
			}
		})
		simRun(t, e)
		other, _ := simEngine(t, nodes[1], conf(100, false), nil)
		simRun(t, other)

		vips := []netip.Addr{netip.MustParseAddr("198.18.0.101"), netip.MustParseAddr("198.18.0.102")}
		wait := func(owner int, why string) {
			t.Helper()
			for _, v := range vips {
				simWaitSole(t, nodes, v, nodes[owner], 300*time.Millisecond, 20*time.Second, why)
			}
		}
		wait(0, "start: node1 holds both")
		fail.Store(true)
		wait(1, "VI_2's script fails: the whole group moves to node2")
		if !strings.Contains(log.String(), "sync group G") {
			t.Errorf("node1's log does not explain the group fault")
		}
		fail.Store(false)
		wait(0, "script recovers: both come back")
	})
}
