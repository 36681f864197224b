package main

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// trial runs one failover of impl in scenario s and returns the outage.
func (b *bench) trial(impl string, s scenario, n int) (oc outcome) {
	hosts := b.topo.Hosts
	dir := filepath.Join(b.work, fmt.Sprintf("%s-%s-%s-%d", impl, s.Timers.ID, s.Event, n))
	crashBound := scenario{Timers: s.Timers, Event: eventKill}.Bound()
	limit := s.limit()
	var nodes []*peers.Node
	defer func() {
		if oc.Err != nil && b.verbose {
			for _, nd := range nodes {
				fmt.Fprintf(b.out, "  --- %s log (last lines) ---\n%s\n", nodeName(nd.Host), tail(nd.Log(), 15))
			}
		}
		b.teardown(impl, s, nodes)
		b.saveLogs(nodes)
	}()
	if err := flushNeighbours(b.topo.Client); err != nil {
		return outcome{Err: err}
	}
	b.adverts.reset()

	flag := filepath.Join(dir, "check-fails")
	for i, h := range hosts {
		c := peers.Conf{Version: s.Timers.Version, Interval: s.Timers.Advert, VRID: vrid, Priority: priorities[i],
			Interface: h.Link, VIP: vip, Auth: s.Timers.Auth}
		if s.Event == eventCheck && i == 0 {
			c.Script, c.Weight = "/usr/bin/test ! -e "+flag, checkWeight
		}
		text, err := render(c, nodeName(h))
		if err != nil {
			return outcome{Err: fmt.Errorf("render keepalived.conf for %s: %w", nodeName(h), err)}
		}
		nd, err := peers.Start(h, peers.Impl(impl), text, filepath.Join(dir, nodeName(h)), b.vipBin)
		if err != nil {
			return outcome{Err: err}
		}
		nodes = append(nodes, nd)
	}
	b.say(impl, "started node1, node2, node3 at priorities 150, 100, 50")
	took, err := peers.WaitSoleHolder(hosts, vip.Addr(), hosts[0], 3*s.Timers.Advert+200*time.Millisecond, 4*crashBound+5*time.Second)
	if err != nil {
		for _, nd := range nodes {
			if !nd.Alive() {
				err = fmt.Errorf("%w; %s exited:\n%s", err, nodeName(nd.Host), tail(nd.Log(), 5))
			}
		}
		return outcome{Err: fmt.Errorf("before the event: %w", err)}
	}

	p := startProber(b.topo.Client, netip.AddrPortFrom(vip.Addr(), greetPort).String(), probeEvery, dialTimeout,
		int((baselineWait+limit)/probeEvery)+10)
	defer p.stop()
	answered := func(a attempt) bool { return a.From != 0 }
	if !p.waitFor(answered, time.Now().Add(baselineWait)) {
		return outcome{Err: fmt.Errorf("before the event, the client cannot reach %v: %v", vip.Addr(), lastErr(p.attempts()))}
	}
	if a, _ := first(p.attempts(), answered); a.From != 1 {
		return outcome{Err: fmt.Errorf("before the event, %v is answered by node%d, want node1", vip.Addr(), a.From)}
	}
	b.say(impl, "node1 holds %v (sole holder %v after the start); the client reaches it", vip.Addr(), took.Round(time.Millisecond))
	for _, nd := range nodes {
		if !nd.Alive() {
			return outcome{Err: fmt.Errorf("%s exited before the event:\n%s", nodeName(nd.Host), tail(nd.Log(), 10))}
		}
	}

	t0 := time.Now()
	switch s.Event {
	case eventKill:
		err = nodes[0].Kill()
		b.say(impl, "kill -9 node1 (its whole process group)")
	case eventTerm:
		err = nodes[0].Term()
		b.say(impl, "SIGTERM node1")
	case eventCheck:
		err = os.WriteFile(flag, nil, 0o644)
		b.say(impl, "node1's tracked script fails from now on")
	}
	if err != nil {
		return outcome{Err: fmt.Errorf("%s node1: %w", s.Event.label(), err)}
	}
	fromBackup := func(a attempt) bool { return a.From == 2 && a.Done.After(t0) }
	p.waitFor(fromBackup, t0.Add(limit))
	p.stop()
	log := p.attempts()
	won, ok := first(log, fromBackup)
	if !ok {
		hold, _ := peers.Holders(hosts, vip.Addr())
		return outcome{Err: fmt.Errorf("node2 did not answer within %v of the event (last attempt: %s; VIP held by %s)",
			limit, describe(log), names(hold))}
	}
	outage := won.Done.Sub(t0)
	oc = outcome{Outage: outage}
	if s.Event == eventKill {
		if last, ok := b.adverts.lastBefore(hosts[0].IPv4.Addr(), t0); ok {
			oc.SinceAdvert, oc.HasSinceAdvert = won.Done.Sub(last), true
			if t0.Sub(last) > 2*s.Timers.Advert {
				b.note("%s %s trial %d: node1's last advertisement came %v before the kill, advert_int is %v",
					impl, s.ID(), n, t0.Sub(last).Round(time.Millisecond), s.Timers.Advert)
			}
		} else {
			b.note("%s %s trial %d: the client saw no advertisement from node1 before the kill", impl, s.ID(), n)
		}
	}
	var old time.Duration
	var others []int
	for _, a := range log {
		if a.Done.After(t0) && a.From == 1 && a.Done.Sub(t0) > old {
			old = a.Done.Sub(t0)
		}
		if a.From == 3 {
			others = append(others, a.From)
		}
	}
	detail := ""
	switch {
	case old > 0 && s.Event == eventKill:
		detail = fmt.Sprintf(" (the crashed node1 kept the VIP and answered until +%s ms, when the client's ARP entry moved)", ms(old))
	case old > 0 && s.Event == eventTerm:
		detail = fmt.Sprintf(" (node1 answered until +%s ms, while it shut down)", ms(old))
	case old > 0:
		detail = fmt.Sprintf(" (node1 answered until +%s ms, while its check was failing)", ms(old))
	}
	if oc.HasSinceAdvert {
		detail += fmt.Sprintf("; %s ms after node1's last advert, which came %s ms before the kill", ms(oc.SinceAdvert), ms(oc.SinceAdvert-outage))
	}
	b.say(impl, "node2 answered after %s ms%s", ms(outage), detail)
	if len(others) > 0 {
		b.note("%s %s trial %d: node3 answered %d connections to the VIP", impl, s.ID(), n, len(others))
	}

	// Who holds the VIP now: node2, plus node1 after a crash.
	hold, err := peers.Holders(hosts, vip.Addr())
	if err != nil {
		return outcome{Err: err}
	}
	want := []*testnet.Host{hosts[1]}
	if s.Event == eventKill {
		want = []*testnet.Host{hosts[0], hosts[1]}
	}
	if names(hold) != names(want) {
		b.note("%s %s trial %d: after failover the VIP is held by %s, want %s", impl, s.ID(), n, names(hold), names(want))
	}
	for _, nd := range nodes[1:] {
		if !nd.Alive() {
			b.note("%s %s trial %d: %s exited during failover:\n%s", impl, s.ID(), n, nodeName(nd.Host), tail(nd.Log(), 10))
		}
	}
	return oc
}

// render is c's keepalived.conf for routerID; a tracked script fails
// after checkFall runs checkInterval apart.
func render(c peers.Conf, routerID string) (string, error) {
	if _, err := c.Render(routerID); err != nil {
		return "", err
	}
	cfg := c.Config(routerID)
	for _, sc := range cfg.Scripts {
		sc.Interval, sc.Timeout, sc.Fall = checkInterval, checkInterval, checkFall
	}
	return string(keepalived.Format(cfg)), nil
}

// teardown stops the nodes still running (SIGTERM, then SIGKILL to the
// group if that does not work), removes a VIP that stayed behind (on a
// crashed node), and flushes the client's neighbour cache.
func (b *bench) teardown(impl string, s scenario, nodes []*peers.Node) {
	var wg sync.WaitGroup
	for _, nd := range nodes {
		if !nd.Alive() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := nd.Term(); err != nil {
				b.note("%s %s: SIGTERM of %s: %v; killing it", impl, s.ID(), nodeName(nd.Host), err)
				_ = nd.Kill()
			}
		}()
	}
	wg.Wait()
	for i, h := range b.topo.Hosts {
		ok, err := h.HasAddr(vip.Addr())
		if err != nil || !ok {
			continue
		}
		// After kill -9 the VIP stays on node1 by design; anywhere else a
		// node that exited on SIGTERM left it behind.
		if !(i == 0 && s.Event == eventKill) {
			b.note("%s %s: %v still on %s after its node exited on SIGTERM", impl, s.ID(), vip.Addr(), nodeName(h))
		}
		if out, err := h.Run("ip", "addr", "del", vip.String(), "dev", h.Link); err != nil {
			b.note("remove %v from %s: %v %s", vip, nodeName(h), err, out)
		} else {
			b.say(impl, "removed the VIP left on %s", nodeName(h))
		}
	}
	if err := flushNeighbours(b.topo.Client); err != nil {
		b.note("%v", err)
	}
}

func (b *bench) saveLogs(nodes []*peers.Node) {
	for _, nd := range nodes {
		_ = os.WriteFile(filepath.Join(nd.Dir, "log.txt"), []byte(nd.Log()), 0o644)
	}
}

func flushNeighbours(h *testnet.Host) error {
	if _, err := h.Run("ip", "neigh", "flush", "all"); err != nil {
		return fmt.Errorf("flush the client's neighbour cache: %w", err)
	}
	return nil
}

func nodeName(h *testnet.Host) string { return fmt.Sprintf("node%d", h.Index) }

func names(hs []*testnet.Host) string {
	if len(hs) == 0 {
		return "nobody"
	}
	var s []string
	for _, h := range hs {
		s = append(s, nodeName(h))
	}
	return strings.Join(s, "+")
}

// describe says how the last attempt ended.
func describe(log []attempt) string {
	if len(log) == 0 {
		return "none"
	}
	a := log[len(log)-1]
	if a.Err != nil {
		return a.Err.Error()
	}
	return fmt.Sprintf("answered by node%d", a.From)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}
