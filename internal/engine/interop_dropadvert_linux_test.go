package engine_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// interopPrefix4 starts the namespace names of the tests in this file.
const interopPrefix4 = "vvt"

// TestInteropPriorityDropKeepalivedBackup: a vipstack master at 100 whose
// tracked script fails (weight -30, effective 70) sends priority 0 and then
// 70 at once (fsm.SetPriority). Beside it a backup at 90 and a keepalived
// backup at 60. keepalived 2.2.7 discards an advertisement below its own
// priority and keeps timing the master from its last higher one (measured
// with this test before the priority 0 was added, 2026-11-29: the 90 took
// over a master-down interval after the master's last advertisement at 100,
// having heard three at 70 at advert 1 s and four at 0.1 s). Now the 90 takes over after its skew time: its
// first advertisement follows the master's 0 and 70 with no advertisement
// of the master between (its next regular one is a whole interval away,
// the skew of priority 90 is 0.65 of one); the 60, whose timer the 70
// reset, never advertises. The order of the adverts on the wire says so,
// without timing anything; bench/failover's check-fails scenario times it.
func TestInteropPriorityDropKeepalivedBackup(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	for _, tc := range []struct {
		name     string
		version  int
		interval time.Duration
		backup   peers.Impl // the one at 90; the one at 60 is keepalived
	}{
		{name: "v2-keepalived", version: 2, interval: time.Second, backup: peers.Keepalived},
		{name: "v3-100ms-keepalived", version: 3, interval: 100 * time.Millisecond, backup: peers.Keepalived},
		{name: "v2-vipstack", version: 2, interval: time.Second, backup: peers.Vipstack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: interopPrefix4})
			masterH, highH, lowH := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
			vip := netip.MustParseAddr("198.18.0.100")
			conf := func(prio int) peers.Conf {
				c := peers.Conf{Version: tc.version, Interval: tc.interval, VRID: 51, Priority: prio, VIP: netip.PrefixFrom(vip, 32)}
				if tc.version == 2 {
					c.Auth = "secret1"
				}
				return c
			}
			flag := filepath.Join(t.TempDir(), "fail")
			mc := conf(100)
			mc.Script, mc.Weight = "/usr/bin/test ! -e "+flag, -30
			startText(t, masterH, peers.Vipstack, withLines(t, mc, masterH))
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, masterH, 500*time.Millisecond, 20*time.Second); err != nil {
				t.Fatalf("the master alone: %v", err)
			}
			high := startText(t, highH, tc.backup, withLines(t, conf(90), highH))
			low := startText(t, lowH, peers.Keepalived, withLines(t, conf(60), lowH))
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, masterH, 3*tc.interval+time.Second, 20*time.Second); err != nil {
				t.Fatalf("all three running: %v", err)
			}
			capt := captureVRRP(t, lowH, "")
			if err := os.WriteFile(flag, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, highH, 10*tc.interval, 30*time.Second); err != nil {
				t.Fatalf("script failed on the master (100-30 = 70 < 90): %v", err)
			}
			lines := capt.Lines()
			mAddr, hAddr, lAddr := masterH.IPv4.Addr().String(), highH.IPv4.Addr().String(), lowH.IPv4.Addr().String()
			zero := slices.Index(lines, mAddr+" vrid 51 prio 0")
			if zero < 0 {
				t.Fatalf("no priority 0 advert from the master captured: %q", lines)
			}
			after := lines[zero+1:]
			t.Logf("adverts from the master's priority 0 on: %q", after[:min(len(after), 4)])
			want := []string{mAddr + " vrid 51 prio 70", hAddr + " vrid 51 prio 90"}
			if len(after) < 2 || !slices.Equal(after[:2], want) {
				t.Errorf("after the master's priority 0: %q, want %q (its lowered priority at once, then the 90 after its skew time)", after[:min(len(after), 3)], want)
			}
			for _, l := range after {
				if strings.HasPrefix(l, lAddr+" ") {
					t.Errorf("the backup at 60 advertised after the master's drop (the 70 did not reset its timer): %q", l)
					break
				}
			}
			if strings.Contains(low.Log(), "Entering MASTER STATE") {
				t.Errorf("keepalived at 60 became master:\n%s", tail(low.Log(), 20))
			}
			if tc.backup == peers.Keepalived {
				for _, w := range []string{"Backup received priority 0 advertisement", fmt.Sprintf("received lower priority (70) advert from %s - discarding", mAddr)} {
					if !strings.Contains(high.Log(), w) {
						t.Errorf("keepalived at 90 did not log %q:\n%s", w, tail(high.Log(), 20))
					}
				}
			}
		})
	}
}
