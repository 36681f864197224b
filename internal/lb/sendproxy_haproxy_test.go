package lb

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/proxyproto"
)

// proxySink is a server behind send-proxy: it reads the PROXY header and
// the client's first line, and answers with the header's bytes in hex
// and that line.
func proxySink(c net.Conn) {
	c.SetDeadline(time.Now().Add(bound))
	r := bufio.NewReader(c)
	var buf []byte
	for {
		b, err := r.ReadByte()
		if err != nil {
			return
		}
		buf = append(buf, b)
		if _, n, err := proxyproto.Parse(buf); err == nil {
			buf = buf[:n]
			break
		} else if err != proxyproto.ErrTruncated {
			fmt.Fprintf(c, "bad header %q: %v\n", buf, err)
			return
		}
	}
	line, _ := r.ReadString('\n')
	fmt.Fprintf(c, "%s %s", hex.EncodeToString(buf), line)
}

// TestSendProxyMatchesHaproxy: servers with send-proxy and send-proxy-v2
// behind haproxy 2.6 and vipstack side by side. Each server gets, before
// the client's bytes, a header that says the client's address and the
// one it connected to, byte for byte the header proxyproto writes for
// them (whose golden files are haproxy's own).
func TestSendProxyMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	sink := startBackendFunc(t, "sink", proxySink).addr.String()
	conf := func(p1, p2 string) string {
		return strings.NewReplacer("{{P1}}", p1, "{{P2}}", p2, "{{SINK}}", sink).Replace(`defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend v1
  bind 127.0.0.1:{{P1}}
  default_backend v1
backend v1
  server s1 {{SINK}} send-proxy
frontend v2
  bind 127.0.0.1:{{P2}}
  default_backend v2
backend v2
  server s1 {{SINK}} send-proxy-v2
`)
	}
	ports := freePorts(t, 2)
	hout := peers.HAProxy(t, conf(ports[0], ports[1]))
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf("1", "2")))
	waitListening(t, "tcp", "127.0.0.1:"+ports[1])
	for _, tc := range []struct {
		who, section string
		version      int
		addr         string
	}{
		{"haproxy", "v1", 1, "127.0.0.1:" + ports[0]},
		{"haproxy", "v2", 2, "127.0.0.1:" + ports[1]},
		{"vipstack", "v1", 1, l.Addrs("v1")[0].String()},
		{"vipstack", "v2", 2, l.Addrs("v2")[0].String()},
	} {
		t.Run(tc.who+"/"+tc.section, func(t *testing.T) {
			c := dialFrom(t, "127.0.0.3", tc.addr)
			if _, err := io.WriteString(c, "hi\n"); err != nil {
				t.Fatal(err)
			}
			got, err := bufio.NewReader(c).ReadString('\n')
			if err != nil {
				t.Fatalf("%v (haproxy:\n%s)", err, hout.String())
			}
			want, err := proxyproto.Header{Version: tc.version, Src: netip.MustParseAddrPort(c.LocalAddr().String()),
				Dst: netip.MustParseAddrPort(tc.addr)}.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if w := hex.EncodeToString(want) + " hi\n"; got != w {
				t.Errorf("server got %q, want %q (header %q)", got, w, want)
			}
		})
	}
}
