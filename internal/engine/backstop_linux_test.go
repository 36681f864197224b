package engine_test

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// TestBackstopThreads runs `vipstack vrrp` as a master at advert_int
// 0.01 in a namespace: its engine keeps two backstop threads, each pinned
// to a CPU of its own, and the advertisements a listener hears are not
// doubled by them (the loop and the threads claim each one once).
func TestBackstopThreads(t *testing.T) {
	testnet.RequireRoot(t)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() < 2 {
		t.Skipf("needs two CPUs (%d, %v)", set.Count(), err)
	}
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vebs"})
	h, listener := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr("198.18.0.100")
	c := peers.Conf{Version: 3, Interval: 10 * time.Millisecond, VRID: 61, Priority: 150, Interface: h.Link, VIP: netip.PrefixFrom(vip, 32)}
	conf, err := c.Render(h.Name)
	if err != nil {
		t.Fatal(err)
	}
	n, err := peers.Start(h, peers.Vipstack, conf, t.TempDir(), bin)
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, n)
	if _, err := peers.WaitSoleHolder([]*testnet.Host{h}, vip, h, 100*time.Millisecond, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	pid, err := n.EnginePid()
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]int{} // CPU list -> threads
	deadline := time.Now().Add(5 * time.Second)
	for len(pinned) < 2 && time.Now().Before(deadline) {
		clear(pinned)
		for cpus, n := range threadCPUs(t, pid) {
			if !strings.ContainsAny(cpus, ",-") {
				pinned[cpus] += n
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(pinned) != 2 {
		t.Errorf("engine threads pinned to one CPU, by CPU: %v; want two threads on two CPUs", pinned)
	}

	// Count what the master sends in one second, heard on the other host.
	const window = time.Second
	var heard int
	if err := listener.Do(func() error {
		rx, err := transport.Listen(4)
		if err != nil {
			return err
		}
		defer rx.Close()
		ifi, err := net.InterfaceByName(listener.Link)
		if err != nil {
			return err
		}
		if err := rx.JoinGroup(ifi.Index, netip.MustParseAddr("224.0.0.18")); err != nil {
			return err
		}
		done := time.AfterFunc(window, func() { rx.Close() })
		defer done.Stop()
		for {
			p, err := rx.ReadPacket()
			if err != nil {
				return nil // closed at the window's end
			}
			if p.Src == h.IPv4.Addr() {
				heard++
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	// 100 a second; doubled sends would near 200. The bounds leave room
	// for a loaded machine, not for doubles.
	if heard < 20 || heard > 130 {
		t.Errorf("heard %d advertisements from the master in %v at advert_int 0.01, want about 100 (20..130)", heard, window)
	}
	t.Logf("engine %d: pinned threads by CPU %v; %d advertisements heard in %v (GOMAXPROCS of this test %d)", pid, pinned, heard, window, runtime.GOMAXPROCS(0))
}

// threadCPUs counts pid's threads by their Cpus_allowed_list.
func threadCPUs(t *testing.T, pid int) map[string]int {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				out[strings.TrimSpace(v)]++
			}
		}
	}
	return out
}
