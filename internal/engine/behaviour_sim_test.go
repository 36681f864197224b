package engine

import (
	"context"
	"fmt"
	"net/netip"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/peers"
)

// TestNotifyScripts: the generic notify script gets "INSTANCE name state
// priority" for BACKUP at start, MASTER, and STOP when the engine stops,
// and a STOP script that takes a moment has ended when Run returns;
// notify_master runs with the arguments its line gives, split as
// keepalived splits them. (In namespaces the vipstack binary ran them as
// root and got SIGTERM; here the engine runs them as the test's user, and
// Run's end is the SIGTERM. That the binary's exit does not kill a STOP
// script Run waited for is the binary's own matter.)
func TestNotifyScripts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, err := user.Current()
		if err != nil {
			t.Fatal(err)
		}
		n := (&simSegment{}).node("h", "198.18.0.1/24")
		dir := t.TempDir()
		notifyLog, masterLog := filepath.Join(dir, "notify.log"), filepath.Join(dir, "master.log")
		notify, master := filepath.Join(dir, "notify.sh"), filepath.Join(dir, "notify_master.sh")
		// The STOP call takes a little while, as real notify scripts do
		// (they send alerts, stop services): the engine must let it
		// finish, as keepalived does (it waits about a second).
		writeRecorder(t, notify, fmt.Sprintf("[ \"$3\" = STOP ] && sleep 0.2\necho \"$@\" >> %s\n", notifyLog))
		writeRecorder(t, master, fmt.Sprintf("printf '%%s|' master \"$@\" >> %s\necho >> %s\n", masterLog, masterLog))
		// notify_master's arguments are split as keepalived 2.2.7 splits
		// them (measured, 2026-11-24: it ran the script with aAz, bAz and
		// g\h): the quoted string's escapes, then the command line's,
		// inside single quotes too. vipstack split it with other rules and
		// passed ax41z, b\x41z and g\h.
		conf := fmt.Sprintf("global_defs {\n    script_user %s\n}\n"+
			"vrrp_instance VI_1 {\n    state BACKUP\n    interface eth0\n    virtual_router_id 51\n    priority 100\n    advert_int 1\n"+
			"    virtual_ipaddress {\n        198.18.0.100/32\n    }\n"+
			"    notify %q\n    notify_master \"%s "+`a\\x41z 'b\\x41z' g\\\\h`+"\"\n}\n", u.Username, notify, master)
		e, _ := simEngine(t, n, conf, nil)
		stop := simRun(t, e)
		simWaitFor(t, "notify BACKUP then MASTER", func() (bool, string) {
			l, err := ReadCallLines(notifyLog)
			return len(l) >= 2, fmt.Sprintf("%q (%v)", l, err)
		})
		stop()
		got, err := ReadCallLines(notifyLog)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"INSTANCE VI_1 BACKUP 100", "INSTANCE VI_1 MASTER 100", "INSTANCE VI_1 STOP 100"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("notify script calls when Run returned (-want +got):\n%s", diff)
		}
		gotMaster, err := ReadCallLines(masterLog)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{`master|aAz|bAz|g\h|`}, gotMaster); diff != "" {
			t.Errorf("notify_master calls (-want +got):\n%s", diff)
		}
	})
}

// TestCrashLeftoversSwept: a master that dies without a word leaves its
// VIP behind, and its ledger listing it; started again with the same
// ledger as a backup (priority 50, while another node at 100 is master) it
// removes the leftover at start, so only the real master holds the VIP.
// (In namespaces the master was the vipstack binary killed with SIGKILL;
// here the first engine hands over (Handoff) to nobody, which leaves the
// addresses and the ledger as a kill -9 does and sends nothing more. What
// a kill -9 at any moment leaves in the ledger is the binary's matter.)
func TestCrashLeftoversSwept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		crashed, other := seg.node("node1", "198.18.0.1/24"), seg.node("node2", "198.18.0.2/24")
		nodes := []*simNode{crashed, other}
		vip := netip.MustParseAddr("198.18.0.100")
		conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 51, VIP: netip.PrefixFrom(vip, 32)}
		ledger := netif.Ledger{Path: filepath.Join(t.TempDir(), "node1.vips")}
		withLedger := func(o *Options) { o.Ledger = ledger }
		conf.Priority = 150
		first, _ := simEngine(t, crashed, simConf(t, conf, "node1"), nil, withLedger)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- first.Run(ctx) }()
		conf.Priority = 100
		oe, _ := simEngine(t, other, simConf(t, conf, "node2"), nil)
		simRun(t, oe)
		simWaitSole(t, nodes, vip, crashed, 300*time.Millisecond, 20*time.Second, "start")

		if _, err := first.Handoff(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		simWaitFor(t, "the other node takes over from the dead master", func() (bool, string) {
			return other.has(simLinkName, vip), "not yet"
		})
		if !crashed.has(simLinkName, vip) {
			t.Fatalf("precondition: the dead master should still hold the VIP")
		}
		if l, err := ledger.Load(); err != nil || len(l) != 1 {
			t.Fatalf("precondition: the dead master's ledger lists %v (%v), want its VIP", l, err)
		}

		conf.Priority = 50
		e, log := simEngine(t, crashed, simConf(t, conf, "node1"), nil, withLedger)
		simRun(t, e)
		simWaitSole(t, nodes, vip, other, 300*time.Millisecond, 20*time.Second, "restarted crashed node at priority 50")
		if !strings.Contains(log.String(), "removed VIP left by an earlier run") {
			t.Errorf("the restarted node did not log the removal of the leftover VIP")
		}
		if l, err := ledger.Load(); err != nil || len(l) != 0 {
			t.Errorf("ledger of a backup holds %v (%v), want nothing", l, err)
		}
	})
}

// TestStatusCountersFresh: between changes of state the loop does not
// republish the status, but Status still returns the counters as they
// are: a master's adverts sent grow with each advert interval.
func TestStatusCountersFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := (&simSegment{}).node("h", "198.18.0.1/24")
		conf := "vrrp_instance VI_1 {\n    state MASTER\n    interface eth0\n    virtual_router_id 51\n    priority 100\n    advert_int 1\n" +
			"    virtual_ipaddress {\n        198.18.0.100/32\n    }\n}\n"
		e, _ := simEngine(t, n, conf, nil)
		stop := simRun(t, e)
		defer stop()
		sent := func() (string, uint64) {
			st := e.Status()
			if len(st) != 1 {
				t.Fatalf("status lists %d instances, want 1", len(st))
			}
			return st[0].State, st[0].AdvertsSent
		}
		simWaitFor(t, "MASTER", func() (bool, string) {
			s, _ := sent()
			return s == "MASTER", s
		})
		_, before := sent()
		time.Sleep(5 * time.Second) // the bubble's clock: five advert intervals
		synctest.Wait()
		state, after := sent()
		if state != "MASTER" || after < before+4 {
			t.Errorf("after 5 s as master: %s with %d adverts sent, %d before; want MASTER and at least 4 more", state, after, before)
		}
	})
}

// TestStatusWhenAsked: the loop makes the status when asked, not on its
// own: Status lists nothing before Run, the state as it is while the loop
// answers, the status the last call had while the loop is held up (here
// adding the VIP of its takeover, which takes the simulated kernel 10 s),
// and the status made as the loop stopped once Run returned.
func TestStatusWhenAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := (&simSegment{}).node("h", "198.18.0.1/24")
		conf := "vrrp_instance VI_1 {\n    state BACKUP\n    interface eth0\n    virtual_router_id 51\n    priority 100\n    advert_int 1\n" +
			"    virtual_ipaddress {\n        198.18.0.100/32\n    }\n}\n"
		e, log := simEngine(t, n, conf, nil)
		const heldUp = "the engine's loop did not answer"
		if st := e.Status(); len(st) != 0 {
			t.Fatalf("before Run the status lists %d instances, want none", len(st))
		}
		if strings.Contains(log.String(), heldUp) {
			t.Errorf("before Run the loop was said to be held up:\n%s", log)
		}
		n.mu.Lock()
		n.addDelay = 10 * time.Second
		n.mu.Unlock()
		stop := simRun(t, e)
		<-e.Started()
		state := func(when string) InstanceStatus {
			t.Helper()
			st := e.Status()
			if len(st) != 1 {
				t.Fatalf("%s: the status lists %d instances, want 1", when, len(st))
			}
			return st[0]
		}
		if s := state("at start"); s.State != "BACKUP" {
			t.Fatalf("at start: %s, want BACKUP", s.State)
		}
		// Master_Down (3 s and the skew) has run out: the loop is adding
		// the VIP.
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n.has(simLinkName, netip.MustParseAddr("198.18.0.100")) {
			t.Fatal("the VIP was added before the simulated kernel's delay ran out")
		}
		if s := state("while the loop adds the VIP"); s.State != "BACKUP" {
			t.Errorf("while the loop adds the VIP: %s, want the last status asked for (BACKUP)", s.State)
		}
		if !strings.Contains(log.String(), heldUp) {
			t.Errorf("while the loop adds the VIP: no warning that the status returned is an old one:\n%s", log)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		warned := strings.Count(log.String(), heldUp)
		if s := state("after the takeover"); s.State != "MASTER" || s.AdvertsSent == 0 {
			t.Errorf("after the takeover: %s with %d adverts sent, want MASTER and some sent", s.State, s.AdvertsSent)
		}
		stop()
		if s := state("after Run returned"); s.State == "MASTER" {
			t.Errorf("after Run returned: %s, want the state it stopped in", s.State)
		}
		if n := strings.Count(log.String(), heldUp); n != warned {
			t.Errorf("the loop was said to be held up %d times once it answered again (%d before)", n, warned)
		}
	})
}

// TestStalled: the engine counts as wedged (Stalled) once status requests
// have found its running loop not answering for stallLimit, here while it
// adds the VIP of its takeover, which takes the simulated kernel 40 s; not
// before the limit, not before Run, and not once the loop answers again.
func TestStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := (&simSegment{}).node("h", "198.18.0.1/24")
		conf := "vrrp_instance VI_1 {\n    state BACKUP\n    interface eth0\n    virtual_router_id 51\n    priority 100\n    advert_int 1\n" +
			"    virtual_ipaddress {\n        198.18.0.100/32\n    }\n}\n"
		e, _ := simEngine(t, n, conf, nil)
		e.Status()
		if s := e.Stalled(); s != "" {
			t.Fatalf("before Run: Stalled = %q, want none", s)
		}
		n.mu.Lock()
		n.addDelay = 40 * time.Second
		n.mu.Unlock()
		stop := simRun(t, e)
		<-e.Started()
		ask := func(when string, wantStalled bool) {
			t.Helper()
			e.Status()
			s := e.Stalled()
			if wantStalled != (s != "") || wantStalled && !strings.Contains(s, "the VRRP engine's loop has answered no status request since") {
				t.Errorf("%s: Stalled = %q, want stalled %v", when, s, wantStalled)
			}
		}
		ask("at start", false)
		// Master_Down (3 s and the skew) has run out: the loop is adding
		// the VIP.
		time.Sleep(5 * time.Second)
		synctest.Wait()
		ask("first asked while the loop adds the VIP", false)
		time.Sleep(stallLimit - time.Second)
		ask("asked again within the limit", false)
		time.Sleep(2 * time.Second)
		ask("asked again past the limit", true)
		time.Sleep(40 * time.Second)
		synctest.Wait()
		ask("once the VIP is added", false)
		stop()
		ask("after Run returned", false)
		// The requests of the stop's last moments go unanswered: a
		// stopped loop is not a held one.
		e.statusMu.Lock()
		e.unansweredAt = time.Now().Add(-time.Minute)
		e.statusMu.Unlock()
		ask("after Run returned, a request of its last moments unanswered", false)
	})
}
