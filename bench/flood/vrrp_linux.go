package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/vrrpflood"
)

// startVRRP starts impl on h with conf; the daemons log at their normal
// level (keepalived without -D, vipstack at info).
func (b *bench) startVRRP(h *testnet.Host, impl, conf, dir string) (*peers.Node, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	var args []string
	name := b.bin
	switch impl {
	case implKeepalived:
		name = "keepalived"
		args = []string{"-n", "-l", "--vrrp", "-f", path, "-p", filepath.Join(dir, "keepalived.pid"), "-r", filepath.Join(dir, "vrrp.pid")}
	case implVipstack:
		args = []string{"vrrp", "-f", path, "--state-dir", dir, "--metrics-addr", "127.0.0.1:9660"}
	}
	n, err := peers.StartCmd(h, h.Command(name, args...))
	if err != nil {
		return nil, err
	}
	b.atClose(func() {
		if n.Alive() {
			n.Kill()
		}
	})
	return n, nil
}

// vrrp floods keepalived and vipstack in turn with the same packets.
func (b *bench) vrrp(o options) ([]vrrpFigures, error) {
	b.say("vrrp: building three namespaces")
	topo, err := b.topology(testnet.Options{Hosts: 3, Prefix: "vf"})
	if err != nil {
		return nil, err
	}
	master, backup, attacker := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
	fl, err := vrrpflood.NewFlooder(attacker)
	if err != nil {
		return nil, err
	}
	defer fl.Close()
	var watch []*vrrpflood.AddrWatcher
	for _, h := range []*testnet.Host{master, backup} {
		w, err := vrrpflood.NewAddrWatcher(h)
		if err != nil {
			return nil, err
		}
		defer w.Close()
		watch = append(watch, w)
	}
	var figs []vrrpFigures
	for _, impl := range []string{implKeepalived, implVipstack} {
		f, err := b.vrrpOne(o, impl, topo, fl, watch)
		if err != nil {
			return figs, fmt.Errorf("%s: %w", impl, err)
		}
		figs = append(figs, f)
	}
	return figs, nil
}

func (b *bench) vrrpOne(o options, impl string, topo *testnet.Topology, fl *vrrpflood.Flooder, watch []*vrrpflood.AddrWatcher) (vrrpFigures, error) {
	f := vrrpFigures{Impl: impl, Counted: -1}
	master, backup := topo.Hosts[0], topo.Hosts[1]
	var nodes []*peers.Node
	for i, n := range []struct {
		h, peer *testnet.Host
		prio    int
	}{{master, backup, 150}, {backup, master, 100}} {
		node, err := b.startVRRP(n.h, impl, vrrpflood.Conf(fmt.Sprintf("n%d", i+1), n.prio, n.h.IPv4.Addr(), n.peer.IPv4.Addr(), "0.1"),
			filepath.Join(b.work, impl, strconv.Itoa(i+1)))
		if err != nil {
			return f, err
		}
		nodes = append(nodes, node)
	}
	defer func() {
		for _, n := range nodes {
			if n.Alive() {
				n.Term()
			}
		}
	}()
	b.say("vrrp: %s master and backup started; waiting for the master to hold both VIPs", impl)
	for _, vip := range vrrpflood.VIPs {
		if _, err := peers.WaitSoleHolder(topo.Hosts[:2], vip, master, 2*time.Second, 30*time.Second); err != nil {
			return f, fmt.Errorf("before the flood: %w\n%s", err, tailLog(nodes[0].Log()))
		}
	}
	cpu := func() (time.Duration, time.Duration, error) {
		m, err1 := groupCPU(nodes[0].Pid())
		bk, err2 := groupCPU(nodes[1].Pid())
		return m, bk, errorsJoin(err1, err2)
	}
	window := time.Duration(o.vrrpPackets) * time.Second / time.Duration(o.vrrpRate)
	window = min(window, o.vrrpLimit)
	m0, b0, err := cpu()
	if err != nil {
		return f, err
	}
	b.say("vrrp: %s idle for %v", impl, window.Round(time.Millisecond))
	time.Sleep(window) // the idle window measured
	m1, b1, err := cpu()
	if err != nil {
		return f, err
	}
	f.MasterIdle, f.BackupIdle = m1-m0, b1-b0

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			mh, err1 := watch[0].Holds(vrrpflood.VIPs)
			bh, err2 := watch[1].Holds(vrrpflood.VIPs)
			f.Samples++
			if err1 != nil || err2 != nil {
				f.Violations++
				continue
			}
			if slices.Contains(mh, false) || slices.Contains(bh, true) {
				f.Violations++
			}
			for i := range vrrpflood.VIPs {
				if !mh[i] || bh[i] {
					f.Moved[i]++
				}
			}
		}
	}()
	b.say("vrrp: flooding %s: %d packets at %d/s", impl, o.vrrpPackets, o.vrrpRate)
	res := fl.Flood(vrrpflood.Classes(), master.IPv4.Addr(), o.vrrpPackets, o.vrrpRate, o.vrrpLimit, 1)
	f.Sent, f.Flood = res.Total, res.Duration
	close(stop)
	wg.Wait()
	m2, b2, err := cpu()
	if err != nil {
		return f, err
	}
	f.MasterCPU, f.BackupCPU = m2-m1, b2-b1
	if f.Violations > 0 {
		// What the nodes said about their states, for the report.
		var why []string
		for _, l := range strings.Split(nodes[0].Log()+nodes[1].Log(), "\n") {
			if strings.Contains(l, "Entering") || strings.Contains(l, "higher priority") || strings.Contains(l, "MASTER") {
				why = append(why, l)
			}
		}
		if len(why) > 20 {
			why = why[:20]
		}
		b.say("vrrp: %s: mastership moved in %d of %d samples; the nodes logged:\n  %s", impl, f.Violations, f.Samples, strings.Join(why, "\n  "))
	}
	if impl == implVipstack {
		time.Sleep(500 * time.Millisecond) // let the engine read what is still queued before counting
		if text, err := httpGetIn(master, "127.0.0.1:9660", "/metrics"); err == nil {
			f.Counted = metricTotal(text, "vipstack_vrrp_packets_dropped_total")
		}
	}
	return f, nil
}

func errorsJoin(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func tailLog(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > 30 {
		l = l[len(l)-30:]
	}
	return strings.Join(l, "\n")
}

// metricTotal sums every series of metric name in a Prometheus text
// exposition.
func metricTotal(text, name string) float64 {
	var total float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			total += v
		}
	}
	return total
}
