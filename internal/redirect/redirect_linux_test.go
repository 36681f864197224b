package redirect

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vipstack/vipstack/internal/testnet"
)

const frontendPort = 9445

// expiry is what `nft list` adds after a lease element: the time left.
var expiry = regexp.MustCompile(` expires [0-9dhms]+`)

// withoutExpiry drops the time left from nft's listing, which Render
// cannot know.
func withoutExpiry(listed string) string { return expiry.ReplaceAllString(listed, "") }

// TestRedirectCarriesTraffic runs the redirect in a real kernel: h1 holds
// the VIP and listens on the frontend port only; the client (another
// namespace on the bridge) and h1 itself connect to VIP:6443.
func TestRedirectCarriesTraffic(t *testing.T) {
	testnet.RequireRoot(t)
	tests := []struct {
		name   string
		vip    netip.AddrPort
		prefix int // of the VIP on h1's link
	}{
		{name: "ipv4", vip: netip.MustParseAddrPort("198.18.0.100:6443"), prefix: 24},
		{name: "ipv6", vip: netip.MustParseAddrPort("[fd00:bb::100]:6443"), prefix: 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo := testnet.New(t, testnet.Options{Hosts: 2, Client: true, Prefix: "vsUrd"})
			h1, h2, client := topo.Hosts[0], topo.Hosts[1], topo.Client
			if _, err := h1.Run("ip", "addr", "add", fmt.Sprintf("%s/%d", tt.vip.Addr(), tt.prefix), "dev", h1.Link, "nodad"); err != nil {
				t.Fatal(err)
			}
			startEchoServer(t, h1)
			r := New(tt.vip, frontendPort)

			// Each step acts, then checks every observable: the client's
			// connect, h1's own connect, the table as the kernel lists it.
			steps := []struct {
				name      string
				act       func() error
				wantTable bool
			}{
				{name: "before enable", act: func() error { return nil }},
				{name: "enable", act: r.Enable, wantTable: true},
				{name: "enable again", act: r.Enable, wantTable: true},
				{name: "disable", act: r.Disable},
				{name: "disable again", act: r.Disable},
				{name: "enable after disable", act: r.Enable, wantTable: true},
				{name: "disable at the end", act: r.Disable},
			}
			for _, st := range steps {
				if err := h1.Do(st.act); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				var enabled bool
				if err := h1.Do(func() (err error) { enabled, err = r.Enabled(); return err }); err != nil {
					t.Fatalf("%s: Enabled: %v", st.name, err)
				}
				if enabled != st.wantTable {
					t.Errorf("%s: Enabled() = %v, want %v", st.name, enabled, st.wantTable)
				}
				// The kernel's own view: exactly Render's text (one rule
				// per chain after any number of Enables), or no table.
				listed, err := h1.Run("nft", "list", "tables")
				if err != nil {
					t.Fatal(err)
				}
				if st.wantTable {
					got, err := h1.Run("nft", "list", "table", "inet", r.Table())
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(Render(tt.vip, frontendPort, r.Lease()), withoutExpiry(got)); diff != "" {
						t.Errorf("%s: nft list table (-Render +kernel):\n%s", st.name, diff)
					}
				} else if strings.TrimSpace(listed) != "" {
					t.Errorf("%s: nft list tables = %q, want none", st.name, listed)
				}
				for _, from := range []*testnet.Host{client, h1} {
					err := echo(from, tt.vip)
					switch {
					case st.wantTable && err != nil:
						t.Errorf("%s: connect from %s to %s: %v, want the frontend's echo", st.name, from.Name, tt.vip, err)
					case !st.wantTable && !errors.Is(err, syscall.ECONNREFUSED):
						t.Errorf("%s: connect from %s to %s: %v, want connection refused", st.name, from.Name, tt.vip, err)
					}
				}
			}

			// The redirect lives in h1's namespace only.
			if err := h1.Do(r.Enable); err != nil {
				t.Fatal(err)
			}
			var onH2 bool
			if err := h2.Do(func() (err error) { onH2, err = r.Enabled(); return err }); err != nil {
				t.Fatal(err)
			}
			if onH2 {
				t.Errorf("Enabled() in h2 after enabling in h1 = true, want false")
			}
		})
	}
}

// TestRedirectsCoexist enables an IPv4 and an IPv6 redirect side by side,
// replaces the IPv4 one's frontend port, and disables one without touching
// the other.
func TestRedirectsCoexist(t *testing.T) {
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsUrd"})
	h := topo.Hosts[0]
	v4 := New(netip.MustParseAddrPort("198.18.0.100:6443"), frontendPort)
	v4moved := New(v4.VIP(), 7443)
	v6 := New(netip.MustParseAddrPort("[fd00:bb::100]:6443"), frontendPort)
	steps := []struct {
		name string
		act  func() error
		want []*Redirect // the tables the kernel holds, each exactly as rendered
	}{
		{name: "both", act: func() error { return errors.Join(v4.Enable(), v6.Enable()) }, want: []*Redirect{v4, v6}},
		{name: "new frontend port for the IPv4 VIP", act: v4moved.Enable, want: []*Redirect{v4moved, v6}},
		{name: "disable IPv6", act: v6.Disable, want: []*Redirect{v4moved}},
		{name: "disable IPv4", act: v4.Disable},
	}
	for _, st := range steps {
		if err := h.Do(st.act); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		out, err := h.Run("nft", "list", "tables")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) == 3 {
				table, err := h.Run("nft", "list", "table", f[1], f[2])
				if err != nil {
					t.Fatal(err)
				}
				got[f[1]+" "+f[2]] = withoutExpiry(table)
			}
		}
		want := map[string]string{}
		for _, r := range st.want {
			want["inet "+r.Table()] = r.Ruleset()
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: tables in the kernel (-want +got):\n%s", st.name, diff)
		}
	}
}

// TestRedirectLeaseLapses: a redirect nobody renews (its process died
// without Disable) stops redirecting once its lease runs out, and the VIP's
// clients reach what listens on VIP:PORT itself (the node's API server);
// renewals keep it in effect; a renewal after a lapse brings it back.
func TestRedirectLeaseLapses(t *testing.T) {
	topo := testnet.New(t, testnet.Options{Hosts: 1, Client: true, Prefix: "vsUrd"})
	h, client := topo.Hosts[0], topo.Client
	vip := netip.MustParseAddrPort("198.18.0.100:6443")
	if _, err := h.Run("ip", "addr", "add", vip.Addr().String()+"/24", "dev", h.Link, "nodad"); err != nil {
		t.Fatal(err)
	}
	startEchoServer(t, h)                 // the frontend: echoes 'x'
	h.Greet(t, vip.String(), []byte{'D'}) // the API server on VIP:6443 itself
	const lease = 2 * time.Second
	r := NewLeased(vip, frontendPort, lease)
	t.Cleanup(func() { _ = h.Do(r.Disable) })
	// state connects first and reads the set after: a lease only runs out,
	// so the set may have lost its element since the connect (live false,
	// frontend true) but never the other way round.
	state := func() (live bool, frontend bool) {
		t.Helper()
		switch err := echo(client, vip); {
		case err == nil:
			frontend = true
		case strings.Contains(err.Error(), `echo 'D'`):
		default:
			t.Fatalf("connect to %s: %v, want the frontend's echo or the API server's 'D'", vip, err)
		}
		if err := h.Do(func() (err error) { live, err = r.Live(); return err }); err != nil {
			t.Fatal(err)
		}
		return live, frontend
	}

	if err := h.Do(r.Enable); err != nil {
		t.Fatal(err)
	}
	if live, fe := state(); !live || !fe {
		t.Fatalf("after Enable: live %v, frontend answers %v; want both", live, fe)
	}
	// Renewed every tenth of the lease for two leases: never a lapse.
	for i := 0; i < 20; i++ {
		if err := h.Do(r.Renew); err != nil {
			t.Fatal(err)
		}
		if live, fe := state(); !live || !fe {
			t.Fatalf("renewal %d: live %v, frontend answers %v; want both", i, live, fe)
		}
		time.Sleep(lease / 10) // pacing the renewals, as the Follower does
	}
	// Nobody renews: the lease runs out, the table stays.
	deadline := time.Now().Add(lease + 10*time.Second)
	for {
		live, fe := state()
		if !live && !fe {
			break
		}
		if live && !fe {
			t.Fatalf("the API server answered while the lease was still live: the set and the rule disagree")
		}
		if time.Now().After(deadline) {
			t.Fatalf("the redirect was still live %v after its lease of %v ran out", time.Since(deadline.Add(-lease-10*time.Second)), lease)
		}
		time.Sleep(50 * time.Millisecond) // polling the kernel
	}
	var enabled bool
	if err := h.Do(func() (err error) { enabled, err = r.Enabled(); return err }); err != nil || !enabled {
		t.Fatalf("after the lapse: Enabled() = %v, %v; want the table still there", enabled, err)
	}
	listed, err := h.Run("nft", "list", "table", "inet", r.Table())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(listed, "elements") {
		t.Errorf("after the lapse the lease set still lists an element:\n%s", listed)
	}
	// A renewal after the lapse (the process is back) restarts it.
	if err := h.Do(r.Renew); err != nil {
		t.Fatal(err)
	}
	if live, fe := state(); !live || !fe {
		t.Fatalf("renewal after the lapse: live %v, frontend answers %v; want both", live, fe)
	}
	// Renew on a table that is gone fails (the Follower enables again).
	if err := h.Do(r.Disable); err != nil {
		t.Fatal(err)
	}
	if err := h.Do(r.Renew); err == nil {
		t.Errorf("Renew after Disable = nil, want an error")
	}
}

// startEchoServer listens on the frontend port (dual-stack) in h's
// namespace and echoes one byte per connection.
func startEchoServer(t *testing.T, h *testnet.Host) {
	t.Helper()
	var ln net.Listener
	if err := h.Do(func() (err error) {
		ln, err = net.Listen("tcp", fmt.Sprintf("[::]:%d", frontendPort))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				var b [1]byte
				if _, err := io.ReadFull(c, b[:]); err == nil {
					_, _ = c.Write(b[:])
				}
			}()
		}
	}()
}

// echo connects from host to addr, sends a byte and expects it back.
func echo(from *testnet.Host, addr netip.AddrPort) error {
	return from.Do(func() error {
		c, err := net.DialTimeout("tcp", addr.String(), 3*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := c.SetDeadline(time.Now().Add(3 * time.Second)); err != nil {
			return err
		}
		if _, err := c.Write([]byte{'x'}); err != nil {
			return err
		}
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return fmt.Errorf("read echo: %w", err)
		}
		if b[0] != 'x' {
			return fmt.Errorf("echo %q, want %q", b[0], 'x')
		}
		return nil
	})
}
