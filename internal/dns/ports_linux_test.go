package dns

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// portsPrefix starts the names of TestRootPortHeldByAnother's namespaces.
const portsPrefix = "vsAp"

// tryDNS runs `vipstack dns -conf <corefile>` in h and returns once it
// serves (serving true; it is stopped when t ends) or exits (its stderr).
func tryDNS(t *testing.T, h *testnet.Host, corefile string) (serving bool, stderr string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	c := h.Command(vipstackBin(t), "dns", "-conf", path)
	errb := &syncbuf.Buffer{}
	c.Stderr = errb
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.StartFor(t, c); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "vipstack dns: serving") {
				ready <- struct{}{}
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	select {
	case <-ready:
		return true, errb.String()
	case err := <-exited:
		if err == nil {
			t.Fatalf("vipstack dns exited 0 without serving\n%s", errb)
		}
		return false, errb.String()
	case <-time.After(30 * time.Second):
		t.Fatalf("vipstack dns neither served nor exited within 30s\n%s", errb)
	}
	return false, ""
}

// TestRootPortHeldByAnother runs vipstack dns processes in a namespace
// that also has systemd-resolved's listeners (127.0.0.53:53 and
// 127.0.0.54:53, UDP and TCP):
//
//   - bind 198.18.0.11 on port 53 serves: resolved's addresses are others;
//   - a second vipstack dns with the same Corefile exits 1 naming the
//     Corefile line, the address and port and the other process, where
//     CoreDNS's SO_REUSEPORT let both listen and split the queries;
//   - a block without bind (the wildcard, every address) on port 53 is
//     refused: resolved and the first process hold addresses of it;
//   - bind fd00:bb::11 on port 53 serves beside the first process's IPv4
//     address.
func TestRootPortHeldByAnother(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: portsPrefix})
	h := topo.Hosts[0]
	err := h.Do(func() error {
		for _, a := range []string{"127.0.0.53:53", "127.0.0.54:53"} {
			pc, err := net.ListenPacket("udp", a)
			if err != nil {
				return err
			}
			t.Cleanup(func() { pc.Close() })
			ln, err := net.Listen("tcp", a)
			if err != nil {
				return err
			}
			t.Cleanup(func() { ln.Close() })
		}
		return nil
	})
	if err != nil {
		t.Fatalf("resolved's listeners: %v", err)
	}
	v4, v6 := h.IPv4.Addr().String(), h.IPv6.Addr().String()
	corefile := func(bind, api string) string {
		return ".:53 {\n" + bind + "    clusterdns managed.example.com {\n        api " + api + "\n    }\n}\n"
	}

	first := corefile("    bind "+v4+"\n", "198.18.0.5")
	if ok, stderr := tryDNS(t, h, first); !ok {
		t.Fatalf("bind %s on port 53 beside resolved's 127.0.0.53 and 127.0.0.54: exited\n%s", v4, stderr)
	}

	for _, tt := range []struct {
		name, corefile, want string
	}{
		{
			name:     "the same address and port",
			corefile: corefile("    bind "+v4+"\n", "198.18.0.6"),
			want: `Corefile:1: server block "\.:53" \(its bind, line 2\): udp ` + regexp.QuoteMeta(v4) + `:53: another process already listens on this address and port ` +
				`\(listen udp ` + regexp.QuoteMeta(v4) + `:53: bind: address already in use\); accepted: an address and port no other process listens on`,
		},
		{
			name:     "every address",
			corefile: corefile("", "198.18.0.6"),
			want:     `Corefile:1: server block "\.:53": udp :53 \(every address, IPv4 and IPv6\): another process already listens on this address and port`,
		},
	} {
		ok, stderr := tryDNS(t, h, tt.corefile)
		if ok {
			t.Errorf("%s: a second vipstack dns serves beside the first\n%s", tt.name, stderr)
			continue
		}
		if !regexp.MustCompile(tt.want).MatchString(stderr) {
			t.Errorf("%s: stderr does not match %q:\n%s", tt.name, tt.want, stderr)
		}
	}

	if ok, stderr := tryDNS(t, h, corefile("    bind "+v6+"\n", "198.18.0.7")); !ok {
		t.Errorf("bind %s on port 53 beside another process's %s:53: exited\n%s", v6, v4, stderr)
	}

	// DNS over gRPC listens on TCP alone, with SO_REUSEPORT as well: a
	// second server on its address and port is refused the same way (it
	// was not probed at all before), and a plain DNS block on the same
	// port takes UDP beside it and is refused on TCP.
	grpc := "grpc://.:9053 {\n    bind " + v4 + "\n    clusterdns managed.example.com {\n        api 198.18.0.5\n    }\n}\n"
	if ok, stderr := tryDNS(t, h, grpc); !ok {
		t.Fatalf("grpc:// on %s:9053: exited\n%s", v4, stderr)
	}
	for _, tt := range []struct{ name, corefile, want string }{
		{"a second gRPC server", grpc,
			`Corefile:1: server block "grpc://\.:9053" \(its bind, line 2\): tcp ` + regexp.QuoteMeta(v4) + `:9053: another process already listens on this address and port`},
		{"plain DNS on the gRPC port", ".:9053 {\n    bind " + v4 + "\n}\n",
			`Corefile:1: server block "\.:9053" \(its bind, line 2\): tcp ` + regexp.QuoteMeta(v4) + `:9053: another process already listens on this address and port`},
	} {
		ok, stderr := tryDNS(t, h, tt.corefile)
		if ok {
			t.Errorf("%s: serves beside the first gRPC server\n%s", tt.name, stderr)
			continue
		}
		if !regexp.MustCompile(tt.want).MatchString(stderr) {
			t.Errorf("%s: stderr does not match %q:\n%s", tt.name, tt.want, stderr)
		}
	}

	// The first process still answers every query on its address.
	c := &dns.Client{Timeout: 3 * time.Second}
	for range 8 {
		var r *dns.Msg
		err := h.Do(func() (err error) {
			r, _, err = c.Exchange(new(dns.Msg).SetQuestion("api.managed.example.com.", dns.TypeA), net.JoinHostPort(v4, "53"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Answer) != 1 || !strings.HasSuffix(r.Answer[0].String(), "198.18.0.5") {
			t.Fatalf("api.managed.example.com at %s: answer %v, want the first process's 198.18.0.5", v4, r.Answer)
		}
	}
}
