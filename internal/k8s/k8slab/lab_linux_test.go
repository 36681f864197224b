package k8slab

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// holders returns the names of the nodes holding vip.
func holders(t *testing.T, s *Sampler, l *Lab, i int) []string {
	t.Helper()
	snaps, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for n, sn := range snaps {
		if slices.Contains(sn.Addrs, l.VIPs[i]) {
			out = append(out, l.Nodes[n].Name)
		}
	}
	return out
}

// TestRestartSweepsWithoutAPI: an agent killed with -9 while it held an
// address (its supervisor too, as when the pod is killed) leaves the
// address behind; the next start must remove it at once, even when the
// API server cannot be reached then (it used to wait for the API caches
// to sync first, so the address stayed on two nodes as long as the API
// was away). With the API back, the node takes its address back.
func TestRestartSweepsWithoutAPI(t *testing.T) {
	testnet.RequireRoot(t)
	if os.Getenv("VIPSTACK_SKIP_KUBE") == "1" {
		t.Skip("VIPSTACK_SKIP_KUBE=1: skipping a test that needs kube-apiserver and etcd")
	}
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, capErr := exec.LookPath("capsh")
	ctx := t.Context()
	l := Start(ctx, t, Options{Nodes: 3, Prefix: "ckL", Bin: bin, Advert: 100 * time.Millisecond, Services: 1,
		Supervisor: true, Caps: capErr == nil})
	s, err := l.NewSampler()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs := holders(t, s, l, 0)
	if len(hs) != 1 {
		t.Fatalf("%s held by %v, want one node", l.VIPs[0], hs)
	}
	var h *Node
	for _, n := range l.Nodes {
		if n.Name == hs[0] {
			h = n
		}
	}
	h.SetAPI(false)
	if err := h.KillAgent(); err != nil {
		t.Fatal(err)
	}
	// Another node takes over; the killed one keeps the address meanwhile.
	testutil.Eventually(t, 10*time.Second, func() error {
		if got := holders(t, s, l, 0); len(got) != 2 || !slices.Contains(got, h.Name) {
			return fmt.Errorf("%s held by %v, want %s (left behind) and a new master", l.VIPs[0], got, h.Name)
		}
		return nil
	})
	if err := h.StartAgent(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	testutil.Eventually(t, 5*time.Second, func() error {
		if got := holders(t, s, l, 0); slices.Contains(got, h.Name) {
			return fmt.Errorf("%s still on %s %v after its agent started again without the API (held by %v)", l.VIPs[0], h.Name, time.Since(began).Round(time.Millisecond), got)
		}
		return nil
	})
	t.Logf("the restarted agent removed the address it left in %v, without the API", time.Since(began).Round(time.Millisecond))
	h.SetAPI(true)
	// The agent's client retries the API with a back-off; once its caches
	// sync, its engine starts and takes its address back.
	testutil.Eventually(t, 60*time.Second, func() error {
		if got := holders(t, s, l, 0); len(got) != 1 || got[0] != h.Name {
			return fmt.Errorf("with the API back, %s is held by %v, want %s (its preferred master)", l.VIPs[0], got, h.Name)
		}
		return nil
	})
}

// TestStartRejectsOptions: options that cannot make a lab are refused
// before anything is built (no root needed).
func TestStartRejectsOptions(t *testing.T) {
	ok := Options{Nodes: 3, Bin: "vipstack", Advert: 100 * time.Millisecond}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{name: "no nodes", edit: func(o *Options) { o.Nodes = 0 }, want: "Options.Nodes = 0"},
		{name: "advert", edit: func(o *Options) { o.Advert = 15 * time.Millisecond }, want: "Options.Advert = 15ms"},
		{name: "own pool with the lab's Services", edit: func(o *Options) { o.Pool, o.Services = "198.18.16.0/22", 1 },
			want: `Options.Pool = "198.18.16.0/22" with Options.Services = 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			p := &Program{}
			defer p.Close()
			err := p.Do(func() { Start(t.Context(), p, o) })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Start(%+v) = %v, want an error containing %q", o, err, tc.want)
			}
		})
	}
}

func TestNewService(t *testing.T) {
	for _, tc := range []struct {
		name string
		addr netip.Addr
		want string // Spec.LoadBalancerIP
	}{
		{name: "fixed", addr: PoolAddr(3), want: "198.18.0.203"},
		{name: "from the pool", addr: netip.Addr{}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewService("x", tc.addr)
			if diff := cmp.Diff(tc.want, s.Spec.LoadBalancerIP); diff != "" {
				t.Errorf("LoadBalancerIP (-want +got):\n%s", diff)
			}
			if s.Namespace != ServiceNamespace || s.Annotations[k8s.GroupAnnotation] != Group {
				t.Errorf("Service %s/%s annotated %v, want in %s for %s", s.Namespace, s.Name, s.Annotations, ServiceNamespace, Group)
			}
		})
	}
}
