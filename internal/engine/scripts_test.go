package engine

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/track"
)

// Tracked scripts on the simulated segment. A vrrp_script runs here as an
// in-process probe (keepalived.Script.Probe) that takes its time in virtual
// time, so a first probe of 0.9 s or a redefined check's first run of 6 s
// can be watched advert by advert.

// simProbes makes the engine read its configuration as Check does, but
// with each vrrp_script given the probe probe returns for it (nil: the
// script runs as a process, and is checked as Check checks it); a probe
// runs no file, so its path need not exist.
func simProbes(probe func(s *keepalived.Script) track.Check) func(*Options) {
	return func(o *Options) {
		path := o.ConfigPath
		o.Load = func() (*keepalived.Config, error) {
			cfg, err := keepalived.LoadID(path, "")
			if err != nil {
				return nil, err
			}
			for _, s := range cfg.Scripts {
				if p := probe(s); p != nil {
					s.Probe = p
				}
			}
			disableScripts(cfg, securityOf(cfg).Check)
			return cfg, nil
		}
	}
}

// slowProbe takes d of (virtual) time, then fails with err (nil: passes).
type slowProbe struct {
	d   time.Duration
	err error
}

func (p slowProbe) Probe(ctx context.Context) error {
	select {
	case <-time.After(p.d):
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// simNeverHolds samples, every 10 ms of virtual time for d, that other
// alone among nodes holds addr.
func simNeverHolds(t *testing.T, nodes []*simNode, addr netip.Addr, other *simNode, d time.Duration, why string) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		synctest.Wait()
		if got := simHolders(nodes, addr); len(got) != 1 || got[0] != other {
			var names []string
			for _, n := range got {
				names = append(names, n.name)
			}
			t.Fatalf("%s: %v is held by %v, want only %s", why, addr, names, other.name)
		}
	}
}

// TestFirstProbe: a tracked script whose first result has not come yet
// counts for nothing in keepalived 2.2.7 (measured, a script that sleeps
// 6 s before succeeding, priority 100: weight +30 and weight -30 instances
// both advertise 100 until it succeeds, then 130 and 100; an instance
// tracking it with weight 0 stays in FAULT, and goes BACKUP on its
// success). A node that starts beside a master at 100, at 80 with a +30
// script whose first probe takes 0.9 s and fails, or at 120 with a
// weight-0 one, must never take the VIP: the script has not passed.
// vipstack counted a pending script as passing: at 110 or 120 it preempted
// the master within a skew time, then dropped back when the first result
// came, and the VIP moved twice. VRRPv3 at 0.1 s, so the preemption would
// come well within the probe's 0.9 s. (In namespaces, as
// TestInteropFirstProbe, the master was keepalived and the script
// `timeout 0.9 sleep 5`; here the master is an engine and the script a
// probe that fails after 0.9 s of virtual time.)
func TestFirstProbe(t *testing.T) {
	for _, tc := range []struct {
		name     string
		priority int
		weight   int
	}{
		{name: "weight +30", priority: 80, weight: 30},
		{name: "weight 0", priority: 120, weight: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				seg := &simSegment{}
				master, node := seg.node("node1", "198.18.0.1/24"), seg.node("node2", "198.18.0.2/24")
				nodes := []*simNode{master, node}
				vip := netip.MustParseAddr("198.18.0.100")
				conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 51, Priority: 100, VIP: netip.PrefixFrom(vip, 32)}
				me, _ := simEngine(t, master, simConf(t, conf, master.name), nil)
				simRun(t, me)
				simWaitSole(t, nodes, vip, master, 300*time.Millisecond, 20*time.Second, "the master alone")

				conf.Priority = tc.priority
				conf.Script, conf.Weight = "/usr/bin/timeout 0.9 /bin/sleep 5", tc.weight
				probe := slowProbe{d: 900 * time.Millisecond, err: errors.New("exit status 124")}
				e, log := simEngine(t, node, simConf(t, conf, node.name), nil,
					simProbes(func(*keepalived.Script) track.Check { return probe }))
				simRun(t, e)
				simWaitFor(t, "the node started", func() (bool, string) {
					return strings.Contains(log.String(), `msg="starting VRRP instance"`), "no start in its log"
				})
				// Through the first probe and well after its result.
				simNeverHolds(t, nodes, vip, master, 2500*time.Millisecond, "the node's first probe never passed")
				if !strings.Contains(log.String(), `"tracked script now failing" script=chk`) {
					t.Errorf("the node's first probe did not fail as the test means it to")
				}
			})
		})
	}
}

// TestReloadRedefinedScriptKeepsFailing: a backup held under a master at
// 90 by a failing vrrp_script (100-30 = 70 < 90) reloads with the script
// redefined (another path, a slower check). keepalived 2.2.7 keeps a
// redefined script's state ("VRRP_Script(chk) considered unsuccessful on
// reload"), and so must vipstack: it stays at 70 while the new check's
// first run takes its 6 s, and the master keeps the VIP. vipstack started
// the new check as passing: at 100 it preempted the master within a skew
// time. (In namespaces the master was keepalived and the checks scripts
// that exit 1, the second after sleeping 6 s; here the master is an engine
// and the checks probes taking the same time.)
func TestReloadRedefinedScriptKeepsFailing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		node, peer := seg.node("n1", "198.18.0.1/24"), seg.node("n2", "198.18.0.2/24")
		nodes := []*simNode{node, peer}
		vip := netip.MustParseAddr("198.18.0.100")
		const fast, slow = "/etc/keepalived/fast.sh", "/etc/keepalived/slow.sh"
		probes := simProbes(func(s *keepalived.Script) track.Check {
			switch s.Args[0] {
			case fast:
				return slowProbe{err: errors.New("exit status 1")}
			case slow:
				return slowProbe{d: 6 * time.Second, err: errors.New("exit status 1")}
			}
			return nil
		})
		base := peers.Conf{Version: 2, Interval: time.Second, VRID: 51, VIP: netip.PrefixFrom(vip, 32), Auth: "managed_api_vip"}
		ours, theirs := base, base
		ours.Priority, ours.Script, ours.Weight = 100, fast, -30
		theirs.Priority = 90

		e, log := simEngine(t, node, simConf(t, ours, "n1"), nil, probes)
		simRun(t, e)
		simWaitFor(t, "the node's check failing", func() (bool, string) {
			return strings.Contains(log.String(), `msg="tracked script now failing" script=chk`), "not in its log"
		})
		pe, _ := simEngine(t, peer, simConf(t, theirs, "n2"), nil)
		simRun(t, pe)
		simWaitSole(t, nodes, vip, peer, 3*time.Second, 20*time.Second, "the master at 90 over the node at 100-30")

		// The slower definition: its first result comes 6 s after the reload.
		ours.Script = slow
		text := replaceFirst(t, simConf(t, ours, "n1"), "    interval 1\n", "    interval 10\n    timeout 8\n")
		if err := os.WriteFile(e.opts.ConfigPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Reload(); err != nil {
			t.Fatal(err)
		}
		// Over the new check's first run and past it, the master stays
		// the only holder.
		simNeverHolds(t, nodes, vip, peer, 8*time.Second, "after the reload")
		if !strings.Contains(log.String(), `msg="tracked script redefined; it keeps its state until the new definition's results change it" script=chk ok=false`) {
			t.Errorf("the node's log does not say the redefined check kept its failing state")
		}
	})
}

// TestStateMasterWaits: an instance with `state MASTER` that starts under
// a higher master stays BACKUP and never holds the VIP, as keepalived
// 2.2.7 does (measured: "Entering BACKUP STATE (init)", and MASTER only
// after Master_Down_Interval when alone). vipstack took the VIP at start
// and announced it, so the hosts sent to the lower node until the master
// answered. (In namespaces the higher master was keepalived; here it is an
// engine.)
func TestStateMasterWaits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		version  int
		interval time.Duration
	}{
		{name: "v2", version: 2, interval: time.Second},
		{name: "v3", version: 3, interval: 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				seg := &simSegment{}
				master, node := seg.node("node1", "198.18.0.1/24"), seg.node("node2", "198.18.0.2/24")
				nodes := []*simNode{master, node}
				vip := netip.MustParseAddr("198.18.0.100")
				conf := peers.Conf{Version: tc.version, Interval: tc.interval, VRID: 51, VIP: netip.PrefixFrom(vip, 32)}
				high := conf
				high.Priority = 150
				me, _ := simEngine(t, master, simConf(t, high, master.name), nil)
				simRun(t, me)
				simWaitSole(t, nodes, vip, master, 2*tc.interval, 30*time.Second, "the master alone")

				low := conf
				low.Priority, low.StartMaster = 100, true
				e, log := simEngine(t, node, simConf(t, low, node.name), nil)
				simRun(t, e)
				simWaitFor(t, "the node started", func() (bool, string) {
					return strings.Contains(log.String(), `msg="VRRP state change" instance=VI_1 from=INIT`), "no state change in its log"
				})
				simWaitSole(t, nodes, vip, master, 5*tc.interval, 30*time.Second, "after the node started with state MASTER")
				if !strings.Contains(log.String(), `msg="VRRP state change" instance=VI_1 from=INIT to=BACKUP reason=start`) {
					t.Errorf("the node did not start in BACKUP")
				}
				if strings.Contains(log.String(), "to=MASTER") {
					t.Errorf("the node became MASTER under a higher master")
				}
				if got := node.announcements(); len(got) != 0 {
					t.Errorf("the node announced %v under a higher master", got)
				}
			})
		})
	}
}
