//go:build linux

package story_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/redirect"
	"github.com/vipstack/vipstack/internal/render"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestStoryMixedLB is what an operator migrating node by node cares about:
// a client outside the nodes reaches the Kubernetes API through
// https://API-VIP:6443, whichever implementation holds the VIP, and the
// node holding it balances over every master.
//
// master-0 runs keepalived and haproxy from `vipstack render`; master-1
// and master-2 run `vipstack node` (LB on ports.lb, nftables redirect of
// VIP:6443 to it). Each master serves a stand-in API on :6443 whose every
// path, /readyz included, answers "ok from <master>", so the client sees
// which master answered.
//
// The haproxy pod `vipstack render` writes has OpenShift's
// haproxy-monitor beside haproxy: `vipstack redirect`, which redirects
// API-VIP:6443 to haproxy's port while haproxy's monitor URI answers
// (without it, the VIP's clients on an upstream master reach that
// master's own API server only: with it down, every request was refused
// while master-0 kept the VIP). The test runs the rendered command line
// and checks balancing through haproxy, the redirect leaving when haproxy
// stops, a handover to vipstack (keepalived stopped), back (the vipstack
// masters' LB checks failing, so keepalived preempts), and to vipstack
// again when master-0 crashes.
//
// Requests are sequential, one TLS connection each. Outside a handover
// none may fail; during one, the failures are bounded by the time the VIP
// may be unreachable by protocol: a master-down interval plus a margin,
// plus the timeout of a request already under way, over the request
// period.
func TestStoryMixedLB(t *testing.T) {
	st := startMixedLBStory(t, "vsMl")
	mc, cfg := st.mc, st.mc.cfg
	var (
		apiVIP, advert = st.apiVIP, st.advert
		m0, m1, m2     = mc.nodes[0], mc.nodes[1], mc.nodes[2]
		masters        = mc.nodes[:3]
		vipstacks      = []*mixedNode{m1, m2}
	)
	st.toKeepalived()

	// 1. The rendered files, the haproxy pod's haproxy-monitor (vipstack
	//    redirect) included: VIP:6443 on master-0 goes to haproxy, which
	//    balances over the three masters; with master-0's own API server
	//    down, over the other two, and no request fails.
	st.steady("keepalived+haproxy with the rendered haproxy-monitor holding the VIP", true)
	mc.wantClientNeigh(apiVIP, m0)
	setAPIBlock(t, m0.host, cfg.Ports.API, true)
	// Until haproxy's checks take master-0 out (fall x inter), a client
	// it sends there fails: haproxy retries the same server, a second
	// apart (bench/lb measures that window). Wait for its stats to say
	// DOWN.
	waitHAProxyDown(t, m0.host, cfg, "master-0")
	res := st.steady("keepalived+haproxy with the rendered haproxy-monitor holding the VIP, master-0's API down", true)
	if res.by["master-0"] > 0 {
		t.Fatalf("master-0's API is down, but it answered: %s", res)
	}
	setAPIBlock(t, m0.host, cfg.Ports.API, false)
	st.steady("keepalived+haproxy with the rendered haproxy-monitor holding the VIP, master-0's API back", true)
	mc.keeps(apiVIP, masters, m0, advert)
	mc.wantClientNeigh(apiVIP, m0)

	// 2. haproxy stops: its monitor URI no longer answers and the
	//    monitor's redirect goes (after redirect.WatchFall polls), and
	//    keepalived's LB check takes master-0 down to apiNoLB. Then
	//    haproxy is back: the redirect returns, and master-0 takes the VIP
	//    again.
	haproxyDown := m0.vrrp.Log()
	if err := m0.haproxy.Term(); err != nil {
		t.Fatal(err)
	}
	table := redirect.TableName(netip.AddrPortFrom(apiVIP, uint16(cfg.Ports.API)))
	redirected := func() bool {
		out, err := m0.host.Run("nft", "list", "tables")
		if err != nil {
			t.Fatalf("nft list tables on master-0: %v", err)
		}
		return strings.Contains(out, table)
	}
	for deadline := time.Now().Add(10 * time.Second); redirected(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the monitor's redirect (table %s) is still there 10 s after haproxy stopped", table)
		}
	}
	mc.waitKeepalivedPrio(m0, haproxyDown, st.apiName, st.apiNoLB, st.checkBound)
	back := m0.vrrp.Log()
	mc.startHAProxy(m0)
	for deadline := time.Now().Add(10 * time.Second); !redirected(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the monitor's redirect (table %s) is not back 10 s after haproxy restarted", table)
		}
	}
	for deadline := time.Now().Add(st.riseBound + st.masterDown); !mc.keepalivedPrioSince(m0, back, st.apiName, st.apiUp); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("keepalived on master-0 is not back at %d within %v of haproxy's restart", st.apiUp, st.riseBound+st.masterDown)
		}
	}
	st.toKeepalived()
	st.steady("keepalived+haproxy with the rendered haproxy-monitor holding the VIP after haproxy's restart", true)

	// 3. keepalived on master-0 stops (a priority-0 advert): a vipstack
	//    master takes the VIP while the client keeps sending.
	holder := st.keepalivedStops()

	// 4. keepalived comes back (as a backup, at equal priority it leaves
	//    the VIP); then the vipstack masters' LB checks fail and it
	//    preempts, while the client keeps sending.
	mc.startVRRP(m0)
	mc.keepsWhile(apiVIP, masters, holder, st.riseBound+st.masterDown+st.margin, func() bool {
		return mc.keepalivedPrioSince(m0, "", st.apiName, st.apiUp)
	})
	st.handover("vipstack's LB checks failing, back to keepalived", func() *mixedNode {
		mc.setLBBlocks(vipstacks, true)
		return mc.waitSole(apiVIP, masters, is(m0), 3*advert, st.checkBound)
	})
	// The block is on loopback only: haproxy's backends on master-1 and
	// master-2 (their :6443) still answer.
	st.steady("keepalived+haproxy holding the VIP again", true)
	mc.wantClientNeigh(apiVIP, m0)
	mc.setLBBlocks(vipstacks, false)
	mc.keepsWhile(apiVIP, masters, m0, st.riseBound+st.masterDown, func() bool {
		return mc.prio(m1, st.apiName) == st.apiUp && mc.prio(m2, st.apiName) == st.apiUp
	})

	// 5. master-0 crashes (keepalived and haproxy killed, cable pulled):
	//    nothing tells the backups, so the VIP is unreachable until a
	//    vipstack master's master-down timer runs out; the vipstack LB's
	//    checks take master-0 out of its rotation meanwhile.
	holder = st.handover("master-0 crashed, to vipstack", func() *mixedNode {
		mc.crash(m0)
		return mc.waitSole(apiVIP, masters, isVipstack, 3*advert, st.masterDown+st.margin)
	})
	st.steady("vipstack's "+holder.name+" holding the VIP, master-0 gone", true)
	mc.wantClientNeigh(apiVIP, holder)
}

// TestStoryMixedLBVipstackLB is TestStoryMixedLB's way out of the missing
// redirect that vipstack documents: master-0 keeps keepalived from
// `vipstack render` but runs `vipstack lb -f haproxy.cfg --redirect
// VIP:6443` on the rendered haproxy.cfg in place of haproxy (README,
// "vipstack lb"), which installs the redirect while a server is UP. The
// client reaches every master through master-0, also while master-0's
// own API server is down, and through vipstack when keepalived stops.
func TestStoryMixedLBVipstackLB(t *testing.T) {
	st := startMixedLBStory(t, "vsMlv")
	mc, cfg := st.mc, st.mc.cfg
	var (
		apiVIP, advert = st.apiVIP, st.advert
		m0             = mc.nodes[0]
		masters        = mc.nodes[:3]
	)
	// haproxy stops (README: before vipstack lb takes its ports), and
	// vipstack lb runs the same file with the redirect.
	if err := m0.haproxy.Term(); err != nil {
		t.Fatal(err)
	}
	// Its pod's haproxy-monitor goes with it: vipstack lb redirects the
	// VIP itself.
	if err := m0.monitor.Term(); err != nil {
		t.Fatal(err)
	}
	m0.monitor = nil
	haproxyCfg := filepath.Join(m0.dir, filepath.FromSlash(render.HAProxyCfgPath))
	redirectTo := netip.AddrPortFrom(apiVIP, uint16(cfg.Ports.API)).String()
	lb, err := peers.StartCmd(m0.host, m0.host.Command(mc.bin, "lb", "-f", haproxyCfg, "--redirect", redirectTo))
	if err != nil {
		t.Fatal(err)
	}
	m0.haproxy = lb // crash and the failure log treat it as master-0's balancer
	st.toKeepalived()

	st.steady("keepalived+vipstack lb holding the VIP", true)
	mc.wantClientNeigh(apiVIP, m0)
	setAPIBlock(t, m0.host, cfg.Ports.API, true)
	res := st.steady("keepalived+vipstack lb holding the VIP, master-0's API down", true)
	if res.by["master-0"] > 0 {
		t.Fatalf("master-0's API is down, but it answered: %s", res)
	}
	setAPIBlock(t, m0.host, cfg.Ports.API, false)
	mc.keeps(apiVIP, masters, m0, advert)

	st.keepalivedStops()
}

// The client sends one request every period, each with its own timeout
// (mixedLBStory.reqTimeout); a steady phase is steadyRequests of them.
const (
	steadyRequests = 30
	period         = 100 * time.Millisecond
)

// mixedLBStory is the mixed cluster with a client that sends requests to
// the API VIP, and the bounds its steps use.
type mixedLBStory struct {
	t      *testing.T
	mc     *mixedCluster
	cl     *vipClient
	apiVIP netip.Addr

	apiName        string
	apiUp, apiNoLB int

	advert, masterDown, margin, checkBound, riseBound, reqTimeout time.Duration
	// handoverBound bounds the requests that fail during a handover.
	handoverBound int
}

// startMixedLBStory starts the mixed cluster on a topology with a client
// and waits until it has converged.
func startMixedLBStory(t *testing.T, prefix string) *mixedLBStory {
	t.Helper()
	testnet.RequireRoot(t)
	for _, p := range []string{"keepalived", "haproxy", "curl", "nft", "timeout"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("skipping: %s is not installed (the mixed cluster runs the rendered upstream configs)", p)
		}
	}
	mc := startMixedClusterOn(t, mixedYAML, testnet.Options{Hosts: 5, Client: true, Prefix: prefix})
	cfg := mc.cfg
	st := &mixedLBStory{
		t: t, mc: mc, apiVIP: cfg.APIVIPs[0], advert: cfg.VRRP.AdvertInterval,
		apiName: cfg.Name + "_API",
		apiUp:   cluster.PrioMasterAPI + cluster.WeightLB + cluster.WeightLBOrAPI,
		apiNoLB: cluster.PrioMasterAPI + cluster.WeightLBOrAPI,
	}
	// The bounds of TestStoryMixedCluster (docs/reliability.md): RFC
	// 3768's Master_Down_Interval at the lowest priority in play, Margin
	// = 2 x advert, Grace = advert + Margin.
	st.masterDown = 3*st.advert + time.Duration(256-cluster.PrioIngress)*st.advert/256
	st.margin = 2 * st.advert
	grace := st.advert + st.margin
	lbCheck := mc.check("master-0", "chk_ocp_lb")
	st.checkBound = time.Duration(lbCheck.Fall)*lbCheck.Interval + lbCheck.Timeout + st.advert + st.masterDown + st.margin
	st.riseBound = time.Duration(lbCheck.Rise)*lbCheck.Interval + lbCheck.Timeout + st.margin
	// A request's timeout is two adverts: a SYN lost to a moving VIP is
	// sent again after 1 s. During a handover the VIP may be unreachable
	// for at most a master-down interval plus the margin (the bound the
	// VIP takes to move in TestStoryMixedCluster); a request under way
	// when that starts may fail up to its timeout later.
	st.reqTimeout = 2 * st.advert
	unreachable := st.masterDown + st.margin
	st.handoverBound = int((unreachable+st.reqTimeout+period-1)/period) + 1
	st.cl = newVIPClient(mc.topo.Client, netip.AddrPortFrom(st.apiVIP, uint16(cfg.Ports.API)), st.reqTimeout)

	stopWatch := mc.watchSplitBrain([]netip.Addr{st.apiVIP}, grace)
	t.Cleanup(stopWatch)
	converge := st.riseBound + st.masterDown + 30*time.Second
	for _, n := range mc.nodes[1:3] {
		mc.waitPrio(n, st.apiName, st.apiUp, converge)
	}
	holder := mc.waitSole(st.apiVIP, mc.nodes[:3], nil, 3*st.advert, converge)
	t.Logf("converged: %s holds the API VIP; request period %v, timeout %v, at most %d failures per handover (%v unreachable + %v timeout)",
		holder.name, period, st.reqTimeout, st.handoverBound, unreachable, st.reqTimeout)
	return st
}

// toKeepalived moves the API VIP to keepalived's master-0 (or leaves it
// there): the vipstack masters' LB checks fail, so it is strictly higher;
// then they recover to an equal priority and leave it there.
func (st *mixedLBStory) toKeepalived() {
	st.t.Helper()
	mc := st.mc
	m0, vipstacks := mc.nodes[0], mc.nodes[1:3]
	mc.setLBBlocks(vipstacks, true)
	for _, n := range vipstacks {
		mc.waitPrio(n, st.apiName, st.apiNoLB, st.checkBound)
	}
	mc.waitSole(st.apiVIP, mc.nodes[:3], is(m0), 3*st.advert, st.checkBound)
	mc.setLBBlocks(vipstacks, false)
	mc.keepsWhile(st.apiVIP, mc.nodes[:3], m0, st.riseBound+st.masterDown, func() bool {
		return mc.prio(vipstacks[0], st.apiName) == st.apiUp && mc.prio(vipstacks[1], st.apiName) == st.apiUp
	})
	st.t.Logf("keepalived's master-0 holds the API VIP, every master at %d", st.apiUp)
}

// keepalivedStops stops keepalived on master-0 (a priority-0 advert) while
// the client keeps sending: a vipstack master takes the VIP within the
// handover bound, and then serves the client, balanced. It returns the
// new holder.
func (st *mixedLBStory) keepalivedStops() *mixedNode {
	st.t.Helper()
	mc := st.mc
	m0, masters := mc.nodes[0], mc.nodes[:3]
	holder := st.handover("keepalived stopped, to vipstack", func() *mixedNode {
		if err := m0.vrrp.Term(); err != nil {
			st.t.Error(err)
			return nil
		}
		return mc.waitSole(st.apiVIP, masters, isVipstack, 3*st.advert, st.masterDown+st.margin)
	})
	st.steady("vipstack's "+holder.name+" holding the VIP", true)
	mc.wantClientNeigh(st.apiVIP, holder)
	return holder
}

// steady sends steadyRequests requests: every one must be answered, and,
// when balanced, by more than one master.
func (st *mixedLBStory) steady(what string, balanced bool) loadResult {
	st.t.Helper()
	res := st.cl.run(steadyRequests, period, steadyRequests*(period+st.reqTimeout), nil)
	st.t.Logf("%s: %s", what, res)
	res.wantNoFailure(st.t, what)
	if balanced {
		res.wantBalanced(st.t, what)
	}
	return res
}

// handover runs act, which moves the VIP and returns its new holder, while
// the client sends requests; at most handoverBound may fail.
func (st *mixedLBStory) handover(what string, act func() *mixedNode) *mixedNode {
	st.t.Helper()
	var holder *mixedNode
	res := st.cl.during(period, st.handoverBound, st.reqTimeout, func() { holder = act() })
	if holder == nil {
		st.t.FailNow() // act failed the test
	}
	st.t.Logf("handover (%s, to %s): %s", what, holder.name, res)
	res.wantFailuresAtMost(st.t, st.handoverBound, "handover: "+what)
	return holder
}

// setLBBlocks is setLBBlock on each of ns.
func (mc *mixedCluster) setLBBlocks(ns []*mixedNode, block bool) {
	mc.t.Helper()
	for _, n := range ns {
		mc.setLBBlock(n, block)
	}
}

// wantClientNeigh checks that the client's neighbour entry for vip is
// n's MAC address: the requests just sent went to n.
func (mc *mixedCluster) wantClientNeigh(vip netip.Addr, n *mixedNode) {
	mc.t.Helper()
	c := mc.topo.Client
	out, err := c.Run("ip", "neigh", "show", vip.String(), "dev", c.Link)
	if err != nil {
		mc.t.Fatal(err)
	}
	f := strings.Fields(out)
	if i := slices.Index(f, "lladdr"); i < 0 || i+1 >= len(f) || !strings.EqualFold(f[i+1], n.host.MAC) {
		mc.t.Fatalf("the client's neighbour entry for %v is %q, want %s's MAC %s", vip, strings.TrimSpace(out), n.name, n.host.MAC)
	}
}

// setAPIBlock makes the API port of h refuse every connection, from
// other hosts and from h itself (its API server is down), or undoes it.
func setAPIBlock(t *testing.T, h *testnet.Host, port int, block bool) {
	t.Helper()
	const table = "vipstack_mixed_api_down"
	var cmds [][]string
	if block {
		cmds = [][]string{
			{"add", "table", "inet", table},
			{"add", "chain", "inet", table, "input", "{ type filter hook input priority filter; policy accept; }"},
			{"add", "rule", "inet", table, "input", "tcp", "dport", fmt.Sprint(port), "reject", "with", "tcp", "reset"},
		}
	} else {
		cmds = [][]string{{"delete", "table", "inet", table}}
	}
	for _, c := range cmds {
		if _, err := h.Run("nft", c...); err != nil {
			t.Fatal(err)
		}
	}
}

// vipClient sends HTTPS requests to the API VIP from the client's
// namespace, one new TCP connection each, and tells which master answered.
type vipClient struct {
	url  string
	http *http.Client
}

func newVIPClient(h *testnet.Host, vip netip.AddrPort, timeout time.Duration) *vipClient {
	tr := &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // the stand-in API's certificate is httptest's
		DialContext: func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
			err = h.Do(func() error {
				conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
				return err
			})
			return conn, err
		},
	}
	return &vipClient{url: "https://" + vip.String() + "/readyz", http: &http.Client{Timeout: timeout, Transport: tr}}
}

// get sends one request and returns the name of the master that answered.
func (c *vipClient) get() (string, error) {
	resp, err := c.http.Get(c.url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", err
	}
	body := string(b)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "ok from ") {
		return "", fmt.Errorf("%s: %q", resp.Status, body)
	}
	return strings.TrimPrefix(body, "ok from "), nil
}

// loadResult counts a run's answers by master and its failures.
type loadResult struct {
	sent, failed          int
	by                    map[string]int
	errs                  map[string]int // distinct errors (the first few) and their counts
	firstFail, lastFail   time.Time
	start, end            time.Time
	stoppedEarly, timeout bool
}

func (r loadResult) String() string {
	s := fmt.Sprintf("%d requests in %v, %d failed, answered by %v", r.sent, r.end.Sub(r.start).Round(time.Millisecond), r.failed, r.by)
	if r.failed > 0 {
		s += fmt.Sprintf(", failures over %v from +%v: %v", r.lastFail.Sub(r.firstFail).Round(time.Millisecond),
			r.firstFail.Sub(r.start).Round(time.Millisecond), r.errs)
	}
	return s
}

func (r loadResult) wantNoFailure(t *testing.T, what string) {
	t.Helper()
	if r.failed > 0 || r.sent == 0 {
		t.Fatalf("%s: %s, want every request answered", what, r)
	}
}

func (r loadResult) wantFailuresAtMost(t *testing.T, bound int, what string) {
	t.Helper()
	if r.failed > bound {
		t.Fatalf("%s: %s, want at most %d failures", what, r, bound)
	}
	if r.sent == r.failed {
		t.Fatalf("%s: %s, no request answered", what, r)
	}
}

// wantBalanced: the node holding the VIP balances, so over the run more
// than one master answered.
func (r loadResult) wantBalanced(t *testing.T, what string) {
	t.Helper()
	if len(r.by) < 2 {
		t.Fatalf("%s: %s, want more than one master answering", what, r)
	}
}

// run sends at most n requests, one every period (or right after the
// previous one when it took longer), and stops early when stop closes or
// when limit has passed.
func (c *vipClient) run(n int, period, limit time.Duration, stop <-chan struct{}) loadResult {
	r := loadResult{by: map[string]int{}, errs: map[string]int{}, start: time.Now()}
	next := r.start
	for r.sent < n {
		if time.Since(r.start) > limit {
			r.timeout = true
			break
		}
		if d := time.Until(next); d > 0 {
			select {
			case <-stop:
				r.stoppedEarly = true
			case <-time.After(d): // the request period, bounded by n and limit
			}
			if r.stoppedEarly {
				break
			}
		}
		next = time.Now().Add(period)
		at := time.Now()
		name, err := c.get()
		r.sent++
		if err != nil {
			r.failed++
			if r.firstFail.IsZero() {
				r.firstFail = at
			}
			r.lastFail = at
			if _, ok := r.errs[err.Error()]; ok || len(r.errs) < 3 {
				r.errs[err.Error()]++
			}
			continue
		}
		r.by[name]++
	}
	r.end = time.Now()
	return r
}

// during runs act while the client sends requests, one every period,
// and goes on for settle periods after act returns (the VIP has moved by
// then: act waits for it), bounded in count and time.
func (c *vipClient) during(period time.Duration, settle int, reqTimeout time.Duration, act func()) loadResult {
	// At most: act's time (bounded by its own waits, under a minute here)
	// plus the settling, in requests of period or their timeout.
	const maxAct = time.Minute
	limit := maxAct + time.Duration(settle)*(period+reqTimeout)
	stop, done := make(chan struct{}), make(chan struct{})
	var res loadResult
	go func() {
		defer close(done)
		res = c.run(int(limit/period), period, limit, stop)
	}()
	var once sync.Once
	finish := func() { once.Do(func() { close(stop); <-done }) }
	defer finish() // also when act fails the test
	act()
	time.Sleep(time.Duration(settle) * period) // a bounded tail of requests after the VIP has moved
	finish()
	return res
}

// waitHAProxyDown waits, for at most 10 s, until the haproxy on h (the
// rendered configuration: its stats page on cluster.LBStatsPort) reports
// server as DOWN.
func waitHAProxyDown(t *testing.T, h *testnet.Host, cfg *cluster.Cluster, server string) {
	t.Helper()
	// The client dials inside h's namespace (the dial runs on its own
	// goroutine, so the namespace is entered there).
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
			err = h.Do(func() error {
				conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
				return err
			})
			return conn, err
		},
	}}
	status := func() string {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s;csv", cluster.LBStatsPort, cluster.LBStatsURI), nil)
		req.SetBasicAuth("admin", cfg.Name+"-stats")
		resp, err := client.Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Split(l, ","); len(f) > 17 && f[0] == "masters" && f[1] == server {
				return f[17]
			}
		}
		return resp.Status + ": no line for " + server
	}
	for deadline := time.Now().Add(10 * time.Second); status() != "DOWN"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("haproxy on %s does not report %s DOWN after 10 s (status %q)", h.Name, server, status())
		}
	}
}
