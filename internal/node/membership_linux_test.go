package node

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vipstack/vipstack/internal/kubetest"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestLiveMembership runs `vipstack node` processes in network namespaces
// on a cluster file that names only the cluster and its VIPs, with a real
// API server (reached from each namespace through a forwarder on the
// kubeconfig's own loopback address) and mDNS:
//
//   - two masters learn each other, and their own role, from the Node list;
//   - a master that joins the Node list (a Node object, no process) shows
//     up in the masters' load balancer backends, DNS names, etcd-N and the
//     etcd SRV record, leaves etcd-N and SRV when its Node is not ready,
//     and leaves everything when its Node object is deleted;
//   - a worker that is not in the Node list starts (--role worker) and is
//     learnt over mDNS: its name is answered, and it stays backup for the
//     Ingress VIP (the holder took it as a unicast peer before its master
//     down timer ran out); its goodbye removes it again.
//
// The VIP holders are sampled throughout: no VIP moves. How long each
// change took to show is logged; the test fails only past 10 s.
func TestLiveMembership(t *testing.T) {
	testnet.RequireRoot(t)
	env := kubetest.Start(t)
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: "vmb"})
	worker, m1, m2 := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]

	// The kubeconfig's server is https://127.0.0.1:PORT: a forwarder on
	// that address in each namespace makes it work there unchanged.
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range topo.Hosts {
		forwardAPI(t, h, u.Host)
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(`name: live
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
membership: {kubernetes: true, mdns: true}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	master := map[string]string{"node-role.kubernetes.io/master": ""}
	createNode := func(name string, labels map[string]string, ip netip.Addr) {
		t.Helper()
		n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip.String()}}
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createNode("master-1.live.example.com", master, m1.IPv4.Addr())
	createNode("master-2.live.example.com", master, m2.IPv4.Addr())

	start := func(h *testnet.Host, name string, extra ...string) (*exec.Cmd, *syncbuf.Buffer) {
		t.Helper()
		log := &syncbuf.Buffer{}
		args := append([]string{"node", "--config", cfg, "--node", name, "--kubeconfig", env.Kubeconfig,
			"--state-dir", filepath.Join(dir, name), "--no-supervisor", "--watch-interval", "0"}, extra...)
		c := h.Command(bin, args...)
		c.Stdout, c.Stderr = log, log
		if err := h.StartFor(t, c); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("---- %s, last lines:\n%s", name, testutil.Tail(log.String(), 30))
			}
		})
		return c, log
	}
	start(m1, "master-1")
	start(m2, "master-2")

	apiVIP, ingressVIP := netip.MustParseAddr("198.18.0.5"), netip.MustParseAddr("198.18.0.7")
	sampler := sampleHolders(t, topo.Hosts, apiVIP, ingressVIP)
	waitFor(t, 60*time.Second, "each VIP held by one master", func() (bool, string) {
		h := sampler.now()
		return len(h[apiVIP]) == 1 && len(h[ingressVIP]) == 1, fmt.Sprint(h)
	})
	// Let the first elections settle, then every holder must stay.
	time.Sleep(3 * time.Second)
	sampler.freeze()
	t.Logf("holders: %v", sampler.now())

	// The masters' DNS and load balancers know both masters.
	query := func(h *testnet.Host, name string, qtype uint16) []string {
		return dnsQuery(t, h, m2.IPv4.Addr(), name, qtype)
	}
	backends := func(h *testnet.Host) []string {
		st := nodeStatus(t, h)
		var out []string
		if st.LB != nil {
			for _, b := range st.LB.Backends {
				if b.Name == "masters" {
					for _, s := range b.Servers {
						out = append(out, s.Name+" "+s.Addr)
					}
				}
			}
		}
		slices.Sort(out)
		return out
	}
	waitFor(t, 30*time.Second, "both masters in the SRV record and the backends", func() (bool, string) {
		srv, be := query(m2, "_etcd-server-ssl._tcp.live.example.com.", dns.TypeSRV), backends(m1)
		return len(srv) == 2 && len(be) == 2, fmt.Sprint(srv, be)
	})

	// A master joins the Node list, without a process: backends, names,
	// etcd-N and SRV follow on both masters.
	joined := netip.MustParseAddr("198.18.0.50")
	t0 := time.Now()
	createNode("master-3", master, joined)
	waitFor(t, 10*time.Second, "master-3 answered and balanced", func() (bool, string) {
		a, be := query(m2, "master-3.live.example.com.", dns.TypeA), backends(m1)
		e := query(m1, "etcd-3.live.example.com.", dns.TypeA)
		srv := query(m1, "_etcd-server-ssl._tcp.live.example.com.", dns.TypeSRV)
		ok := slices.Equal(a, []string{joined.String()}) && slices.Contains(be, "master-3 198.18.0.50:6443") &&
			slices.Equal(e, []string{joined.String()}) && len(srv) == 3
		return ok, fmt.Sprint(a, be, e, srv)
	})
	t.Logf("a master joining the Node list: answered and balanced after %v", time.Since(t0).Round(time.Millisecond))
	if ptr := query(m2, "50.0.18.198.in-addr.arpa.", dns.TypePTR); !slices.Contains(ptr, "master-3.live.example.com.") {
		t.Errorf("PTR for master-3's address: %v", ptr)
	}
	// Its kubelet stops: it leaves etcd-N and the SRV record, keeps its name.
	n3, err := cs.CoreV1().Nodes().Get(ctx, "master-3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n3.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown"}}
	t0 = time.Now()
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n3, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "master-3 out of the SRV record, still named", func() (bool, string) {
		a, e := query(m2, "master-3.live.example.com.", dns.TypeA), query(m1, "etcd-3.live.example.com.", dns.TypeA)
		srv := query(m1, "_etcd-server-ssl._tcp.live.example.com.", dns.TypeSRV)
		return len(a) == 1 && len(e) == 0 && len(srv) == 2, fmt.Sprint(a, e, srv)
	})
	t.Logf("a master whose Node is not ready: out of the SRV record after %v", time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	if err := cs.CoreV1().Nodes().Delete(ctx, "master-3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "master-3 gone", func() (bool, string) {
		a, be := query(m2, "master-3.live.example.com.", dns.TypeA), backends(m1)
		srv := query(m1, "_etcd-server-ssl._tcp.live.example.com.", dns.TypeSRV)
		return len(a) == 0 && !slices.Contains(be, "master-3 198.18.0.50:6443") && len(srv) == 2, fmt.Sprint(a, be, srv)
	})
	t.Logf("a master leaving the Node list: gone after %v", time.Since(t0).Round(time.Millisecond))

	// A worker the Node list does not have joins over mDNS.
	t0 = time.Now()
	wcmd, wlog := start(worker, "worker-1", "--role", "worker")
	waitFor(t, 10*time.Second, "worker-1 answered by the masters' DNS", func() (bool, string) {
		a1, a2 := query(m1, "worker-1.live.example.com.", dns.TypeA), query(m2, "worker-1.live.example.com.", dns.TypeA)
		want := []string{worker.IPv4.Addr().String()}
		return slices.Equal(a1, want) && slices.Equal(a2, want), fmt.Sprint(a1, a2)
	})
	t.Logf("a worker joining over mDNS: answered after %v", time.Since(t0).Round(time.Millisecond))
	// Its Ingress instance hears the holder's adverts: the holder took
	// it as a peer, and it stays backup.
	waitFor(t, 15*time.Second, "worker-1's Ingress instance backup, hearing the holder", func() (bool, string) {
		for _, in := range nodeStatus(t, worker).VRRP {
			if strings.HasSuffix(in.Name, "_INGRESS") {
				return in.State == "BACKUP" && in.AdvertsRecv > 0, fmt.Sprintf("%s %s, %d adverts received", in.Name, in.State, in.AdvertsRecv)
			}
		}
		return false, "no Ingress instance"
	})
	if !strings.Contains(wlog.String(), "live membership applied") {
		t.Errorf("worker-1 never applied the masters it learnt")
	}
	t0 = time.Now()
	if err := wcmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "worker-1 gone from the masters' DNS", func() (bool, string) {
		a := query(m1, "worker-1.live.example.com.", dns.TypeA)
		return len(a) == 0, fmt.Sprint(a)
	})
	t.Logf("a worker leaving (SIGTERM, mDNS goodbye): gone after %v", time.Since(t0).Round(time.Millisecond))
	sampler.stop()
}

// waitFor polls cond every 100 ms until it holds, failing after limit with
// cond's last description.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(limit)
	for {
		ok, desc := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v; last: %s", what, limit, desc)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// forwardAPI relays connections to addr inside h's namespace to addr in
// the test's own (the API server on loopback), until the test ends.
func forwardAPI(t *testing.T, h *testnet.Host, addr string) {
	t.Helper()
	var ln net.Listener
	if err := h.Do(func() error {
		if err := exec.Command("ip", "-n", h.Name, "link", "set", "lo", "up").Run(); err != nil {
			return err
		}
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	closed := false
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			c.Close()
			return false
		}
		conns[c] = true
		return true
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !track(c) {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				up, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					c.Close()
					return
				}
				if !track(up) {
					c.Close()
					return
				}
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
				<-done
				c.Close()
				up.Close()
			}()
		}
	}()
}

// dnsQuery asks server:53 from inside h's namespace and returns the
// answers' data (addresses, SRV targets, PTR names), sorted.
func dnsQuery(t *testing.T, h *testnet.Host, server netip.Addr, name string, qtype uint16) []string {
	t.Helper()
	var out []string
	err := h.Do(func() error {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		c := &dns.Client{Timeout: 2 * time.Second}
		r, _, err := c.Exchange(m, netip.AddrPortFrom(server, 53).String())
		if err != nil {
			return err
		}
		for _, rr := range r.Answer {
			switch v := rr.(type) {
			case *dns.A:
				out = append(out, v.A.String())
			case *dns.AAAA:
				out = append(out, v.AAAA.String())
			case *dns.SRV:
				out = append(out, v.Target)
			case *dns.PTR:
				out = append(out, v.Ptr)
			}
		}
		return nil
	})
	if err != nil {
		t.Logf("query %s %s in %s: %v", name, dns.TypeToString[qtype], h.Name, err)
	}
	slices.Sort(out)
	return out
}

// nodeStatus reads the node agent's status endpoint inside h's namespace
// (a zero Status when it does not answer yet).
func nodeStatus(t *testing.T, h *testnet.Host) Status {
	t.Helper()
	var st Status
	err := h.Do(func() error {
		c, err := net.DialTimeout("tcp", "127.0.0.1:9651", 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET /status HTTP/1.0\r\nHost: localhost\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&st)
	})
	if err != nil {
		t.Logf("status of %s: %v", h.Name, err)
	}
	return st
}

// holderSampler records which hosts hold each VIP every 200 ms; after
// freeze, a holder set other than the frozen one is an error (a VIP
// moved, or two nodes held it).
type holderSampler struct {
	t      *testing.T
	mu     sync.Mutex
	last   map[netip.Addr][]string
	frozen map[netip.Addr][]string
	moves  []string
	done   chan struct{}
	wg     sync.WaitGroup
}

func sampleHolders(t *testing.T, hosts []*testnet.Host, vips ...netip.Addr) *holderSampler {
	s := &holderSampler{t: t, done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			now := map[netip.Addr][]string{}
			for _, h := range hosts {
				for _, v := range vips {
					if ok, err := h.HasAddr(v); err == nil && ok {
						now[v] = append(now[v], h.Name)
					}
				}
			}
			s.mu.Lock()
			s.last = now
			if s.frozen != nil {
				for _, v := range vips {
					if !slices.Equal(now[v], s.frozen[v]) {
						s.moves = append(s.moves, fmt.Sprintf("%s: %s held by %v, was %v", time.Now().Format("15:04:05.000"), v, now[v], s.frozen[v]))
					}
				}
			}
			s.mu.Unlock()
			select {
			case <-s.done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *holderSampler) now() map[netip.Addr][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *holderSampler) freeze() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen = s.last
}

// stop ends the sampling and fails the test for every move it saw.
func (s *holderSampler) stop() {
	select {
	case <-s.done:
		return
	default:
		close(s.done)
	}
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.moves) > 0 {
		s.t.Errorf("VIPs moved (%d samples):\n%s", len(s.moves), strings.Join(s.moves, "\n"))
	}
}
