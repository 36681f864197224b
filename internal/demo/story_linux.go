package demo

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/cluster"
)

// Bounds on each step's waits. The masters' API checks run every 2 s with
// rise 3, so reaching 65 takes up to ~10 s after start; a VIP move takes
// the master-down interval (~0.4 s) or, when a check must fall first,
// about two check intervals.
const (
	settleTimeout = 60 * time.Second
	moveTimeout   = 15 * time.Second
	clientTimeout = 20 * time.Second
	stable        = time.Second
)

// story is the demo's state between steps.
type story struct {
	c                  *Cluster
	api, dns, ingress  netip.Addr
	apiURL, ingressURL string
	ingressHost        string
	apiHolder          *Node
}

type step struct {
	title string
	run   func(s *story, ctx context.Context) error
}

// Run builds the demo cluster (a bootstrap node, 3 masters, 2 workers and a
// client), plays the story step by step with the live view, and removes
// everything. It returns an error naming the first step that did not hold.
// With opts.Keep the cluster stays up after the story until ctx ends.
func Run(ctx context.Context, opts Options) (res Result, err error) {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	if err := preflight(opts); err != nil {
		return res, err
	}
	fmt.Fprintf(out, "vipstack demo: an OpenShift-style cluster's virtual IPs, played out in network namespaces.\n\n%s\n\n", Legend)
	spec := Spec{Bootstrap: true, Masters: 3, Workers: 2}
	c, err := Start(ctx, spec, opts)
	if err != nil {
		return res, err
	}
	res.Tag, res.Dir = c.Tag, c.Dir
	defer func() {
		if c.keepDir {
			c.Printf("removing the cluster; the node agents' logs and state stay in %s\n", c.Dir)
		} else {
			c.Printf("removing the cluster\n")
		}
		c.Close()
		res.Elapsed = c.Elapsed()
		if err == nil {
			fmt.Fprintf(out, "vipstack demo: every step held; %s, everything removed.\n", roundS(res.Elapsed))
		}
	}()
	vips := VIPs()
	s := &story{c: c, api: vips[0].Addr, dns: vips[1].Addr, ingress: vips[2].Addr,
		apiURL:      "https://api." + Domain + ":6443/readyz",
		ingressHost: "console-openshift-console.apps." + Domain,
	}
	s.ingressURL = "http://" + s.ingressHost + "/"
	steps := []step{
		{"the bootstrap node holds the API VIP while the masters come up", (*story).bootstrapHolds},
		{"the installer removes the bootstrap node; a master takes the API VIP", (*story).pivot},
		{"the client reaches the masters' API through the API VIP and the load balancer", (*story).clientThroughLB},
		{"the master holding the API VIP crashes; another master takes over", (*story).masterCrash},
		{"a worker's router fails; the Ingress VIP moves to the other worker", (*story).routerFails},
	}
	for i, st := range steps {
		c.Printf("== step %d/%d: %s\n", i+1, len(steps), st.title)
		if ctx.Err() != nil {
			err = fmt.Errorf("demo: interrupted before step %d/%d: %w", i+1, len(steps), ctx.Err())
			c.Printf("%v\n", err)
			break
		}
		if serr := st.run(s, ctx); serr != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("demo: interrupted during step %d/%d (%s): %w", i+1, len(steps), st.title, ctx.Err())
				c.Printf("%v\n", err)
				break
			}
			err = fmt.Errorf("demo: step %d/%d (%s) did not hold: %w", i+1, len(steps), st.title, serr)
			c.Printf("FAILED: %v\n", err)
			c.printProblems()
			c.keepDir = true // the node agents' logs explain it
			break
		}
		res.Steps++
	}
	if err == nil {
		c.Printf("== all %d steps held\n", len(steps))
	}
	if opts.Keep && ctx.Err() == nil {
		c.printExplore()
		<-ctx.Done()
	}
	return res, err
}

func roundS(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func (c *Cluster) ok(format string, args ...any) { c.Printf("   ok  "+format+"\n", args...) }

func (c *Cluster) byRole(r cluster.Role) []*Node {
	var out []*Node
	for _, n := range c.Nodes {
		if n.Role == r {
			out = append(out, n)
		}
	}
	return out
}

func isRole(r cluster.Role) func(*Node) bool { return func(n *Node) bool { return n.Role == r } }

// WaitLBs waits until the load balancer on each of on has exactly the
// servers named by up UP.
func (c *Cluster) WaitLBs(ctx context.Context, on, up []*Node, timeout time.Duration) error {
	want := map[string]bool{}
	for _, n := range up {
		want[n.Name] = true
	}
	return c.Poll(ctx, timeout, func(ctx context.Context) (bool, string, error) {
		var off []string
		for _, n := range on {
			st, err := n.Status(ctx)
			if err != nil || st.LB == nil {
				off = append(off, fmt.Sprintf("%s's node agent reports no load balancer yet", n.Name))
				continue
			}
			var wrong []string
			for _, b := range st.LB.Backends {
				for _, sv := range b.Servers {
					if sv.Up != want[sv.Name] {
						wrong = append(wrong, fmt.Sprintf("%s %s", sv.Name, upDown(sv.Up)))
					}
				}
			}
			if len(wrong) > 0 {
				off = append(off, fmt.Sprintf("%s's load balancer has %s", n.Name, strings.Join(wrong, ", ")))
			}
		}
		return len(off) == 0, strings.Join(off, "; "), nil
	})
}

func upDown(up bool) string {
	if up {
		return "UP"
	}
	return "DOWN"
}

// WaitPriorities waits until each named node's instance for kind reports
// the wanted effective priority.
func (c *Cluster) WaitPriorities(ctx context.Context, kind string, want map[string]int, timeout time.Duration) error {
	return c.Poll(ctx, timeout, func(ctx context.Context) (bool, string, error) {
		var off []string
		for _, name := range sortedKeys(want) {
			n := c.Node(name)
			if n == nil {
				return false, "", fmt.Errorf("no node %q", name)
			}
			in, err := n.Priority(ctx, kind)
			switch {
			case err != nil:
				off = append(off, fmt.Sprintf("%s's node agent does not report its %s instance yet", name, kind))
			case in.Priority != want[name]:
				off = append(off, fmt.Sprintf("%s %s priority %s, want %d", name, kind, strings.TrimSpace(cell(in, true)), want[name]))
			}
		}
		return len(off) == 0, strings.Join(off, "; "), nil
	})
}

func sortedKeys(m map[string]int) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

// expectResolve checks that name resolves to want at server.
func (s *story) expectResolve(ctx context.Context, server netip.Addr, via, name string, want netip.Addr) error {
	note, err := s.clientPoll(ctx, func(ctx context.Context) (bool, string, error) {
		got, err := s.c.Resolve(ctx, server, name)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(got) == 1 && got[0] == want, fmt.Sprintf("%s resolves to %v, want %s", name, got, want), nil
	})
	if err != nil {
		return fmt.Errorf("client DNS: %w", err)
	}
	s.c.ok("client: %s -> %s (asked %s %s)%s", name, want, via, server, note)
	return nil
}

// getFrom fetches url until it answers (bounded) and checks who answered.
// The note says how long that took if the first try failed.
func (s *story) getFrom(ctx context.Context, url string, from func(body string) bool, what string) (body, note string, err error) {
	note, err = s.clientPoll(ctx, func(ctx context.Context) (bool, string, error) {
		var err error
		body, err = s.c.Get(ctx, s.dns, url)
		if err != nil {
			return false, err.Error(), nil
		}
		return from(body), fmt.Sprintf("answered %q, want %s", body, what), nil
	})
	return body, note, err
}

// clientPoll polls a client request for up to clientTimeout. A request can
// fail for a moment after a VIP moved (the new holder's gratuitous ARP has
// not reached the client yet). When the first try failed, the note says
// how long the client waited and why, so the output shows it.
func (s *story) clientPoll(ctx context.Context, try func(ctx context.Context) (bool, string, error)) (string, error) {
	start := s.c.clk.Now()
	tries, first := 0, ""
	err := s.c.Poll(ctx, clientTimeout, func(ctx context.Context) (bool, string, error) {
		tries++
		done, why, err := try(ctx)
		if !done && first == "" {
			first = why
		}
		return done, why, err
	})
	if err != nil || tries == 1 {
		return "", err
	}
	return fmt.Sprintf(" [after %.1f s of retries; the first try: %s]", s.c.clk.Now().Sub(start).Seconds(), first), nil
}

func (s *story) bootstrapHolds(ctx context.Context) error {
	c := s.c
	want := map[string]int{}
	masters := c.byRole(cluster.Master)
	for _, m := range masters {
		want[m.Name] = cluster.PrioMasterAPI + cluster.WeightLB + cluster.WeightLBOrAPI
	}
	// The checks count as passing until their first probe says otherwise
	// (keepalived's initial script state), so wait for what they probe:
	// every master's LB has every master's API UP.
	if err := c.WaitLBs(ctx, masters, masters, settleTimeout); err != nil {
		return err
	}
	c.ok("every master's load balancer has every master's API UP (/readyz checks passed 3 times)")
	if err := c.WaitPriorities(ctx, KindAPI, want, settleTimeout); err != nil {
		return fmt.Errorf("the masters' API checks: %w", err)
	}
	c.ok("every master's API priority is 65 (40 +20 LB +5 LB-or-API)")
	boot := c.Node("bootstrap")
	for _, v := range []netip.Addr{s.api, s.dns} {
		if _, err := c.WaitHolder(ctx, v, func(n *Node) bool { return n == boot }, stable, moveTimeout); err != nil {
			return fmt.Errorf("the bootstrap node should hold %s (70 > 65): %w", v, err)
		}
	}
	c.ok("bootstrap holds the API VIP %s and the DNS VIP %s (70 beats the masters' 65)", s.api, s.dns)
	w, err := c.WaitHolder(ctx, s.ingress, isRole(cluster.Worker), stable, moveTimeout)
	if err != nil {
		return fmt.Errorf("a worker (its router answers) should hold the Ingress VIP: %w", err)
	}
	c.ok("%s holds the Ingress VIP %s (20 +50 router)", w.Name, s.ingress)
	if err := s.expectResolve(ctx, s.dns, "the DNS VIP", "api."+Domain, s.api); err != nil {
		return err
	}
	body, note, err := s.getFrom(ctx, s.apiURL, func(b string) bool { return b == "ok from bootstrap" }, "the bootstrap's API")
	if err != nil {
		return fmt.Errorf("client through the API VIP: %w", err)
	}
	c.ok("client: GET %s -> %q (the bootstrap serves the API until the pivot)%s", s.apiURL, body, note)
	return nil
}

func (s *story) pivot(ctx context.Context) error {
	c := s.c
	boot := c.Node("bootstrap")
	if err := boot.Shutdown(ctx); err != nil {
		return err
	}
	c.ok("bootstrap: node agent stopped (its VIPs left with a priority-0 advertisement), machine off")
	h, err := c.WaitHolder(ctx, s.api, isRole(cluster.Master), stable, moveTimeout)
	if err != nil {
		return fmt.Errorf("a master should take the API VIP: %w", err)
	}
	s.apiHolder = h
	c.ok("%s holds the API VIP %s (the masters tie at 65: the first to claim it keeps it, or the higher address if several claim it at once)", h.Name, s.api)
	d, err := c.WaitHolder(ctx, s.dns, isRole(cluster.Master), stable, moveTimeout)
	if err != nil {
		return fmt.Errorf("a master should take the DNS VIP: %w", err)
	}
	c.ok("%s holds the DNS VIP %s", d.Name, s.dns)
	return nil
}

func (s *story) clientThroughLB(ctx context.Context) error {
	c := s.c
	if err := s.expectResolve(ctx, s.dns, "the DNS VIP", "api."+Domain, s.api); err != nil {
		return err
	}
	m0 := c.byRole(cluster.Master)[0]
	if err := s.expectResolve(ctx, m0.Addr, m0.Name+"'s own DNS", "api-int."+Domain, s.api); err != nil {
		return err
	}
	isMaster := func(b string) bool { return strings.HasPrefix(b, "ok from master-") }
	body, note, err := s.getFrom(ctx, s.apiURL, isMaster, "a master's API")
	if err != nil {
		return fmt.Errorf("client through the API VIP: %w", err)
	}
	c.ok("client: GET %s -> %q%s", s.apiURL, body, note)
	seen, err := s.spread(ctx, 6, isMaster)
	if err != nil {
		return err
	}
	if len(seen) < 2 {
		return fmt.Errorf("6 requests through the API VIP were all answered by %v; the load balancer should spread them over the masters", seen)
	}
	c.ok("client: 6 x GET %s through %s's load balancer -> %s", s.apiURL, s.apiHolder.Name, countText(seen))
	return nil
}

// spread sends n requests to the API URL; each must answer and satisfy ok.
// It returns how many each server answered.
func (s *story) spread(ctx context.Context, n int, ok func(string) bool) (map[string]int, error) {
	seen := map[string]int{}
	for i := range n {
		body, err := s.c.Get(ctx, s.dns, s.apiURL)
		if err != nil {
			return nil, fmt.Errorf("request %d of %d through the API VIP: %w", i+1, n, err)
		}
		if !ok(body) {
			return nil, fmt.Errorf("request %d of %d through the API VIP answered %q", i+1, n, body)
		}
		seen[strings.TrimPrefix(body, "ok from ")]++
	}
	return seen, nil
}

func countText(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s x%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func (s *story) masterCrash(ctx context.Context) error {
	c := s.c
	// The master that holds the API VIP now (a stall may have moved it).
	dead, err := c.WaitHolder(ctx, s.api, func(n *Node) bool { return n.Role == cluster.Master }, stable, moveTimeout)
	if err != nil {
		return fmt.Errorf("a master should hold the API VIP: %w", err)
	}
	if err := dead.Crash(); err != nil {
		return err
	}
	c.ok("%s: power lost (node agent killed with SIGKILL, API server gone, cable pulled)", dead.Name)
	alive := func(n *Node) bool { return n.Role == cluster.Master && n != dead }
	h, err := c.WaitHolder(ctx, s.api, alive, stable, moveTimeout)
	if err != nil {
		return fmt.Errorf("another master should take the API VIP from %s: %w", dead.Name, err)
	}
	s.apiHolder = h
	c.ok("%s holds the API VIP %s (no advertisement from %s for the master-down interval)", h.Name, s.api, dead.Name)
	d, err := c.WaitHolder(ctx, s.dns, alive, stable, moveTimeout)
	if err != nil {
		return fmt.Errorf("a live master should hold the DNS VIP: %w", err)
	}
	c.ok("%s holds the DNS VIP %s", d.Name, s.dns)
	var live []*Node
	for _, m := range c.byRole(cluster.Master) {
		if m != dead {
			live = append(live, m)
		}
	}
	if err := c.WaitLBs(ctx, live, live, moveTimeout); err != nil {
		return fmt.Errorf("the load balancers should mark %s's API DOWN: %w", dead.Name, err)
	}
	c.ok("the load balancers on %s marked %s's API DOWN (its /readyz check failed twice)", nodeNames(live), dead.Name)
	fromLive := func(b string) bool { return strings.HasPrefix(b, "ok from master-") && b != "ok from "+dead.Name }
	body, note, err := s.getFrom(ctx, s.apiURL, fromLive, "a live master's API")
	if err != nil {
		return fmt.Errorf("client through the API VIP after the crash: %w", err)
	}
	c.ok("client: GET %s -> %q%s", s.apiURL, body, note)
	seen, err := s.spread(ctx, 4, fromLive)
	if err != nil {
		return err
	}
	c.ok("client: 4 x GET %s -> %s", s.apiURL, countText(seen))
	return nil
}

func (s *story) routerFails(ctx context.Context) error {
	c := s.c
	if err := s.expectResolve(ctx, s.dns, "the DNS VIP", s.ingressHost, s.ingress); err != nil {
		return err
	}
	from := func(n *Node) func(string) bool {
		return func(b string) bool { return strings.Contains(b, " "+n.Name+"'s router") }
	}
	// The worker that holds the Ingress VIP now: on a loaded machine a
	// stall may have moved it since step 2 (the view shows each move).
	old, err := c.WaitHolder(ctx, s.ingress, func(n *Node) bool { return n.Role == cluster.Worker }, stable, moveTimeout)
	if err != nil {
		return fmt.Errorf("a worker should hold the Ingress VIP: %w", err)
	}
	body, note, err := s.getFrom(ctx, s.ingressURL, from(old), old.Name+"'s router")
	if err != nil {
		return fmt.Errorf("client through the Ingress VIP: %w", err)
	}
	c.ok("client: GET %s -> %q%s", s.ingressURL, body, note)
	if err := old.SetRouter(RouterNotReady); err != nil {
		return err
	}
	c.ok("%s: router reports not ready (/healthz/ready 503)", old.Name)
	h, err := c.WaitHolder(ctx, s.ingress, func(n *Node) bool { return n.Role == cluster.Worker && n != old }, stable, moveTimeout)
	if err != nil {
		return fmt.Errorf("the other worker should take the Ingress VIP: %w", err)
	}
	c.ok("%s holds the Ingress VIP %s (70 beats %s's 20)", h.Name, s.ingress, old.Name)
	body, note, err = s.getFrom(ctx, s.ingressURL, from(h), h.Name+"'s router")
	if err != nil {
		return fmt.Errorf("client through the Ingress VIP after the move: %w", err)
	}
	c.ok("client: GET %s -> %q%s", s.ingressURL, body, note)
	return nil
}

// printProblems shows the warnings and errors the node agents logged last.
func (c *Cluster) printProblems() {
	for _, n := range c.Nodes {
		var lines []string
		for _, l := range strings.Split(n.Log(), "\n") {
			if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
				lines = append(lines, l)
			}
		}
		if len(lines) > 6 {
			lines = lines[len(lines)-6:]
		}
		if len(lines) > 0 {
			c.out.write(fmt.Sprintf("         last warnings of %s's node agent:\n", n.Name))
			for _, l := range lines {
				c.out.write("           " + l + "\n")
			}
		}
	}
}

// printExplore tells a person how to look around the kept cluster.
func (c *Cluster) printExplore() {
	var b strings.Builder
	b.WriteString("The cluster keeps running; press Ctrl-C to remove it.\n")
	fmt.Fprintf(&b, "  %-10s %-13s %-16s %s\n", "NODE", "ADDRESS", "NAMESPACE", "NODE AGENT")
	for _, n := range c.Nodes {
		agent := "pid " + strconv.Itoa(n.agentPid())
		if off := n.Off(); off != "" {
			agent = off
		}
		fmt.Fprintf(&b, "  %-10s %-13s %-16s %s\n", n.Name, n.Addr, n.Host.Name, agent)
	}
	fmt.Fprintf(&b, "  %-10s %-13s %-16s\n", "client", c.Client.IPv4.Addr(), c.Client.Name)
	var live *Node
	for _, n := range c.Nodes {
		if n.Role == cluster.Master && n.Off() == "" {
			live = n
		}
	}
	vips := VIPs()
	fmt.Fprintf(&b, "Try (as root; the view above keeps printing changes):\n")
	fmt.Fprintf(&b, "  ip netns exec %s dig +short @%s api.%s\n", c.Client.Name, vips[1].Addr, Domain)
	fmt.Fprintf(&b, "  ip netns exec %s curl -sk https://%s:6443/readyz\n", c.Client.Name, vips[0].Addr)
	if live != nil {
		fmt.Fprintf(&b, "  ip netns exec %s %s status\n", live.Host.Name, c.opts.Bin)
	}
	fmt.Fprintf(&b, "  kill <a node agent's pid>   (and watch its VIPs move)\n")
	fmt.Fprintf(&b, "  node agent logs: %s/<node>.log\n", c.Dir)
	c.Printf("%s", b.String())
}
