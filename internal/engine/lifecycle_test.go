package engine

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/track"
)

func TestLifeString(t *testing.T) {
	e := engineWith(nil, nil, nil)
	in := &instance{cfg: &keepalived.Instance{Name: "VI_1"}}
	steps := []struct {
		c       cond
		on      bool
		why     string
		changed bool
		want    string
		names   []string
	}{
		{c: condNoSource, on: true, why: "no address", changed: true, want: "no-source", names: []string{"no-source"}},
		{c: condNoSource, on: true, why: "no address", changed: false, want: "no-source", names: []string{"no-source"}},
		{c: condAbsent, on: true, why: "gone", changed: true, want: "absent+no-source", names: []string{"absent", "no-source"}},
		{c: condGroupFault, on: false, why: "none", changed: false, want: "absent+no-source", names: []string{"absent", "no-source"}},
		{c: condAbsent, on: false, why: "back", changed: true, want: "no-source", names: []string{"no-source"}},
		{c: condNoSource, on: false, why: "address back", changed: true, want: "running"},
	}
	for i, st := range steps {
		if got := e.setCond(in, st.c, st.on, st.why); got != st.changed {
			t.Errorf("step %d: setCond changed = %v, want %v", i, got, st.changed)
		}
		if got := in.life.String(); got != st.want {
			t.Errorf("step %d: life %q, want %q", i, got, st.want)
		}
		if diff := cmp.Diff(st.names, in.life.names()); diff != "" {
			t.Errorf("step %d: names (-want +got):\n%s", i, diff)
		}
		if st.on && in.life.reason(st.c) != st.why {
			t.Errorf("step %d: reason %q, want %q", i, in.life.reason(st.c), st.why)
		}
	}
}

// lifeLine matches the log line of a lifecycle change.
var lifeLine = regexp.MustCompile(`msg="instance lifecycle changed" instance=(\S+) from=(\S+) to=(\S+) reason=("(?:[^"\\]|\\.)*"|\S+)`)

// lifeChanges returns the lifecycle changes logged in text, as
// "VI_1: from -> to (reason)".
func lifeChanges(text string) []string {
	var out []string
	for _, m := range lifeLine.FindAllStringSubmatch(text, -1) {
		why := m[4]
		if u, err := strconv.Unquote(why); err == nil {
			why = u
		}
		out = append(out, m[1]+": "+m[2]+" -> "+m[3]+" ("+why+")")
	}
	return out
}

// lifeOf returns each instance's lifecycle conditions from the status
// report (instances holding none left out).
func lifeOf(e *Engine) map[string][]string {
	out := map[string][]string{}
	for _, s := range e.Status() {
		if len(s.Lifecycle) > 0 {
			out[s.Name] = s.Lifecycle
		}
	}
	return out
}

// heldProbe waits while hold is set, then fails while fail is set.
type heldProbe struct{ hold, fail *atomic.Bool }

func (p heldProbe) Probe(ctx context.Context) error {
	for p.hold.Load() {
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if p.fail.Load() {
		return errors.New("exit status 1")
	}
	return nil
}

// TestLifecycle steps instances through their lifecycle conditions on the
// simulated segment and checks, after each step, the conditions the status
// report lists and the changes the log records (old and new lifecycle and
// why), in order.
func TestLifecycle(t *testing.T) {
	instance := func(name, iface string, vrid int, vip, extra string) string {
		return "vrrp_instance " + name + " {\n    state BACKUP\n    interface " + iface + "\n    virtual_router_id " + strconv.Itoa(vrid) +
			"\n    priority 100\n    advert_int 1\n    virtual_ipaddress {\n        " + vip + "\n    }\n" + extra + "}\n"
	}
	type step struct {
		name string
		do   func(n *simNode, hold, fail *atomic.Bool)
		want map[string][]string // conditions in the status report
		log  []string            // the lifecycle changes logged by the step
	}
	for _, tc := range []struct {
		name  string
		conf  string
		steps []step
	}{
		{name: "interface missing, then created",
			conf: instance("VI_1", "eth1", 51, "198.18.1.100/32", ""),
			steps: []step{
				{name: "start",
					want: map[string][]string{"VI_1": {"absent"}},
					log:  []string{"VI_1: running -> absent (interface eth1 does not exist)"}},
				{name: "eth1 created", do: func(n *simNode, _, _ *atomic.Bool) { n.addLink("eth1", "198.18.1.1/24") },
					want: map[string][]string{},
					log:  []string{"VI_1: absent -> running (interface eth1 now exists; the instance is built on it)"}},
			}},
		{name: "interface deleted and created again",
			conf: instance("VI_1", "eth0", 51, "198.18.0.100/32", ""),
			steps: []step{
				{name: "start", want: map[string][]string{}},
				{name: "eth0 deleted and created", do: func(n *simNode, _, _ *atomic.Bool) {
					n.delLink("eth0")
					synctest.Wait()
					n.addLink("eth0", "198.18.0.1/24")
				},
					want: map[string][]string{},
					log: []string{
						"VI_1: running -> recreated (interface eth0 was created again (index 3, was 2))",
						"VI_1: recreated -> running (built anew on the interface created again)",
					}},
			}},
		{name: "source address lost and back",
			conf: instance("VI_1", "eth0", 51, "198.18.0.100/32", ""),
			steps: []step{
				{name: "start", want: map[string][]string{}},
				{name: "primary address removed", do: func(n *simNode, _, _ *atomic.Bool) { n.delAddr("eth0", "198.18.0.1/24") },
					want: map[string][]string{"VI_1": {"no-source"}},
					log:  []string{"VI_1: running -> no-source (interface eth0 has no IPv4 address left to send from)"}},
				{name: "address back", do: func(n *simNode, _, _ *atomic.Bool) { n.addAddr("eth0", "198.18.0.1/24", false) },
					want: map[string][]string{},
					log:  []string{"VI_1: no-source -> running (interface eth0 has an IPv4 address to send from again)"}},
			}},
		{name: "sync group waits, then a member fails",
			conf: "vrrp_script chk {\n    script \"/bin/true\"\n    interval 1\n    timeout 20\n    weight 0\n    rise 1\n    fall 1\n}\n" +
				"vrrp_sync_group G {\n    group {\n        VI_1\n        VI_2\n    }\n}\n" +
				instance("VI_1", "eth0", 51, "198.18.0.101/32", "") +
				instance("VI_2", "eth0", 52, "198.18.0.102/32", "    track_script {\n        chk\n    }\n"),
			steps: []step{
				// VI_2's pending weight-0 script is a fault of its own, so
				// VI_1 holds its group's fault too while both wait.
				{name: "start, first probe held",
					want: map[string][]string{"VI_1": {"waiting", "group-fault"}, "VI_2": {"waiting"}},
					log: []string{
						"VI_1: running -> waiting (a weight-0 tracked script has no result yet: INIT until its first)",
						"VI_2: running -> waiting (a weight-0 tracked script has no result yet: INIT until its first)",
						"VI_1: waiting -> waiting+group-fault (sync group G: VI_2 in fault)",
					}},
				{name: "first probe passes", do: func(_ *simNode, hold, _ *atomic.Bool) { hold.Store(false) },
					want: map[string][]string{},
					log: []string{
						"VI_1: waiting+group-fault -> waiting (sync group G: no other member in fault)",
						"VI_1: waiting -> running (the first results of its tracked scripts came)",
						"VI_2: waiting -> running (the first results of its tracked scripts came)",
					}},
				{name: "VI_2's script fails", do: func(_ *simNode, _, fail *atomic.Bool) { fail.Store(true) },
					want: map[string][]string{"VI_1": {"group-fault"}},
					log:  []string{"VI_1: running -> group-fault (sync group G: VI_2 in fault)"}},
				{name: "it passes again", do: func(_ *simNode, _, fail *atomic.Bool) { fail.Store(false) },
					want: map[string][]string{},
					log:  []string{"VI_1: group-fault -> running (sync group G: no other member in fault)"}},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := (&simSegment{}).node("h", "198.18.0.1/24")
				var hold, fail atomic.Bool
				hold.Store(true)
				e, log := simEngine(t, n, "global_defs {\n    vrrp_version 2\n}\n"+tc.conf, nil,
					simProbes(func(*keepalived.Script) track.Check { return heldProbe{hold: &hold, fail: &fail} }))
				simRun(t, e)
				seen := 0
				for _, st := range tc.steps {
					if st.do != nil {
						st.do(n, &hold, &fail)
					}
					time.Sleep(3 * time.Second) // a few probes and adverts
					synctest.Wait()
					if diff := cmp.Diff(st.want, lifeOf(e)); diff != "" {
						t.Errorf("%s: lifecycle in the status (-want +got):\n%s", st.name, diff)
					}
					all := lifeChanges(log.String())
					if diff := cmp.Diff(st.log, all[seen:]); diff != "" {
						t.Errorf("%s: lifecycle changes logged (-want +got):\n%s", st.name, diff)
					}
					seen = len(all)
				}
			})
		})
	}
}
