//lint:file-ignore SA1019 the test speaks HTTP/2 with prior knowledge over plain TCP, as h2c clients of haproxy do

package lb

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/vipstack/vipstack/internal/lb/web"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// h2Client sends every request over one HTTP/2 connection opened with
// the preface (prior knowledge, no TLS), and counts its dials.
func h2Client(dials *int) *http.Client {
	return &http.Client{Timeout: bound, Transport: &http2.Transport{AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			*dials++
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}}
}

// h2Answer is what a test compares of an HTTP/2 answer.
type h2Answer struct {
	code   int
	header http.Header
	body   string
}

func h2Get(t *testing.T, c *http.Client, method, url, user, pass string) h2Answer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("%s %s: answered in %s, want HTTP/2", method, url, resp.Proto)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, url, err)
	}
	return h2Answer{resp.StatusCode, resp.Header, string(b)}
}

// TestH2MatchesHaproxy runs haproxy 2.6 and vipstack with the same
// monitor and stats sections and sends both the same requests as HTTP/2
// streams, all on one connection per listener: each answer's status,
// header fields (as a set; TestH2FramesMatchHaproxy compares the order) and body
// must be haproxy's (of the stats CSV its heading line; the HTML page is
// vipstack's own), and both send one "Connect from" line per
// stream. Without HTTP/2 vipstack's listeners closed such a client
// without a word.
func TestH2MatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	m1 := startBackend(t, "m1")
	conf := func(fe, mon, stats string) string {
		c := webCompareText(m1.addr, fe, mon, stats)
		return strings.Replace(c, "defaults\n", "defaults\n  log stdout format raw local0\n", 1)
	}
	ports := freePorts(t, 3)
	hmon, hstats := ports[0], ports[1]
	hout := peers.HAProxy(t, conf(ports[2], hmon, hstats))
	var vout syncbuf.Buffer
	l := newLBOpts(t, Options{Clock: fakeClock(), Stdout: &vout}, parseOnLoopback(t, conf("1", "2", "3")))
	eventually(t, "haproxy's monitor", func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+hmon)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	type server struct {
		who, mon, stats string
		out             *syncbuf.Buffer
		answers         []h2Answer
	}
	servers := []*server{
		{who: "haproxy", mon: "127.0.0.1:" + hmon, stats: "127.0.0.1:" + hstats, out: hout},
		{who: "vipstack", mon: l.Addrs("health_check_http_url")[0].String(), stats: l.Addrs("stats")[0].String(), out: &vout},
	}
	type request struct{ method, path, user, pass string }
	monitorReqs := []request{
		{"GET", "/haproxy_ready", "", ""},
		{"HEAD", "/haproxy_ready", "", ""},
		{"GET", "/other", "", ""},
	}
	statsReqs := []request{
		{"GET", "/haproxy_stats;csv", "", ""},
		{"GET", "/haproxy_stats;csv", "Username", "Password"},
		{"GET", "/haproxy_stats", "Username", "Password"},
	}
	for _, s := range servers {
		for _, site := range []struct {
			addr string
			reqs []request
		}{{s.mon, monitorReqs}, {s.stats, statsReqs}} {
			dials := 0
			c := h2Client(&dials)
			for _, r := range site.reqs {
				s.answers = append(s.answers, h2Get(t, c, r.method, "http://"+site.addr+r.path, r.user, r.pass))
			}
			if dials != 1 {
				t.Errorf("%s: %d connections for %d streams, want 1", s.who, dials, len(site.reqs))
			}
		}
	}
	reqs := append(monitorReqs, statsReqs...)
	for i, r := range reqs {
		h, v := servers[0].answers[i], servers[1].answers[i]
		name := r.method + " " + r.path
		if r.user != "" {
			name += " (with auth)"
		}
		if h.code != v.code {
			t.Errorf("%s: status %d, haproxy %d", name, v.code, h.code)
		}
		for k := range h.header {
			if got, want := strings.Join(v.header[k], ","), strings.Join(h.header[k], ","); got != want {
				t.Errorf("%s: %s: %q, haproxy %q", name, k, got, want)
			}
		}
		for k := range v.header {
			if h.header[k] == nil {
				t.Errorf("%s: %s: %q, haproxy sends none", name, k, v.header[k])
			}
		}
		hb, vb := h.body, v.body
		switch {
		case r.path == "/haproxy_stats;csv" && h.code == 200: // the CSV's heading line
			hb, _, _ = strings.Cut(hb, "\n")
			vb, _, _ = strings.Cut(vb, "\n")
		case r.path == "/haproxy_stats" && h.code == 200: // an HTML page of vipstack's own
			hb, vb = "<html>", "<html>"
			if !strings.Contains(v.body, "<html") {
				t.Errorf("%s: body %.80q..., want an HTML page", name, v.body)
			}
		}
		if hb != vb {
			t.Errorf("%s: body %q, haproxy %q", name, vb, hb)
		}
	}
	// One "Connect from" line per stream, all from one client port.
	for _, s := range servers {
		for _, site := range []struct {
			addr string
			n    int
		}{{s.mon, len(monitorReqs)}, {s.stats, len(statsReqs)}} {
			var lines []string
			eventually(t, s.who+"'s Connect lines to "+site.addr, func() bool {
				lines = connectLines(s.out.String(), site.addr)
				return len(lines) >= site.n
			})
			ports := map[string]bool{}
			for _, ln := range lines {
				ports[strings.Fields(ln)[2]] = true
			}
			if len(lines) != site.n || len(ports) != 1 {
				t.Errorf("%s: Connect lines to %s: %q, want %d from one client", s.who, site.addr, lines, site.n)
			}
		}
	}
}

// connectLines are the "Connect from SRC to DST (...)" lines of out to
// dst.
func connectLines(out, dst string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if ln := sc.Text(); strings.HasPrefix(ln, "Connect from ") && strings.Contains(ln, " to "+dst+" ") {
			lines = append(lines, ln)
		}
	}
	return lines
}

// TestH2Evictable: an HTTP/2 connection with no stream being answered is
// a waiting client (web/admit.go): at the listener's cap a new
// client takes its place, so idle HTTP/2 connections cannot keep the
// check script's poll from its answer. Each flood client opens HTTP/2
// and reads the server's SETTINGS, so it is being served when the next
// one comes.
func TestH2Evictable(t *testing.T) {
	a := startBackend(t, "a")
	at := closedPort(t)
	cfg := webConfig(tcpConfig(lbconfig.RoundRobin, srv("a", a)))
	cfg.Monitors[0].Binds = []lbconfig.Bind{{Addr: at}}
	cfg.Timeouts.HTTPRequest, cfg.Timeouts.HTTPKeepAlive = time.Hour, time.Hour
	newLB(t, fakeClock(), cfg)
	addr := at.String()
	const settings = "\x00\x00\x00\x04\x00\x00\x00\x00\x00" // an empty SETTINGS frame
	for i := range web.MaxConns + 10 {
		c := dialFrom(t, "127.0.0.2", addr)
		c.SetDeadline(time.Now().Add(bound))
		if _, err := io.WriteString(c, http2.ClientPreface+settings); err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 9)
		if _, err := io.ReadFull(c, head); err != nil || head[3] != 0x4 {
			t.Fatalf("HTTP/2 client %d of 127.0.0.2: frame %x, %v; want the server's SETTINGS", i, head, err)
		}
	}
	for i := range 3 {
		c := dialFrom(t, "127.0.0.1", addr)
		c.SetDeadline(time.Now().Add(bound))
		if got := poll(t, c, bufio.NewReader(c)); got != okHead+okBody {
			t.Fatalf("poll %d beside %d idle HTTP/2 connections: %q, want the monitor's 200", i, web.MaxConns+10, got)
		}
		c.Close()
	}
}

// TestH2StalledStreamEnds: a client that never opens its flow-control
// window (SETTINGS_INITIAL_WINDOW_SIZE 0) and asks for the stats page,
// larger than the HTTP/2 server's 4 KiB write buffer, gets the stream
// reset once the answer's write timeout passes (30 s; the test shortens
// it), as an HTTP/1 client that does not read has its connection closed:
// the connection is then waiting again, and evictable at the listener's
// cap. Before, the stream's handler waited for the window for ever, the
// connection counted as being answered, and web.MaxConns such clients
// (one stream each) took every slot of the listener for good.
func TestH2StalledStreamEnds(t *testing.T) {
	a := startBackend(t, "a")
	l := newLB(t, fakeClock(), webConfig(tcpConfig(lbconfig.RoundRobin, srv("a", a))))
	addr := l.Addrs("stats")[0].String()
	l.mu.Lock()
	for _, h := range l.httpLns {
		to := h.Timeouts()
		to.Write = 300 * time.Millisecond
		h.SetTimeouts(to)
	}
	l.mu.Unlock()

	fr := h2Open(t, addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", addr}, {":path", "/haproxy_stats"},
		{"authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("Username:Password"))}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	headers := false
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("no RST_STREAM for the stalled stream (HEADERS seen: %v): %v", headers, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			headers = true
		case *http2.DataFrame:
			if len(f.Data()) > 0 {
				t.Fatalf("%d bytes of DATA with a window of 0", len(f.Data()))
			}
		case *http2.RSTStreamFrame:
			if !headers {
				t.Fatalf("stream reset (%v) before its HEADERS: the answer did not start", f.ErrCode)
			}
			return
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v: want the stream reset, the connection kept", f.ErrCode)
		}
	}
}

// TestH2ReceiveWindows: the monitor and stats listeners take no request
// body, and hold what a stream sends until its answer is written, so
// their HTTP/2 receive windows stay at the protocol's initial 65535
// bytes, per stream and per connection, as haproxy 2.6.12 leaves them
// (measured: its SETTINGS carry MAX_CONCURRENT_STREAMS 100 and no
// INITIAL_WINDOW_SIZE, and no connection WINDOW_UPDATE follows). Before,
// x/net/http2's defaults opened both to 1 MiB: a client whose streams
// were being answered could have each of the 256 connections buffer
// 1 MiB of body it sends.
func TestH2ReceiveWindows(t *testing.T) {
	a := startBackend(t, "a")
	l := newLB(t, fakeClock(), webConfig(tcpConfig(lbconfig.RoundRobin, srv("a", a))))
	fr := h2Open(t, l.Addrs("health_check_http_url")[0].String())
	// The server's SETTINGS and window updates come before its ACK of
	// ours.
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("no SETTINGS ACK: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				return
			}
			if v, ok := f.Value(http2.SettingInitialWindowSize); ok && v > 65535 {
				t.Errorf("SETTINGS INITIAL_WINDOW_SIZE %d, want at most 65535 (haproxy sends none: 65535)", v)
			}
			fr.WriteSettingsAck()
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				t.Errorf("connection WINDOW_UPDATE +%d, want none (haproxy's window stays 65535)", f.Increment)
			}
		}
	}
}

// h2Open connects to addr, sends HTTP/2's preface and a SETTINGS frame
// with settings, and returns the connection's framer (raw frames, for
// what a client library would not send). The connection ends with the
// test and reads and writes within bound.
func h2Open(t *testing.T, addr string, settings ...http2.Setting) *http2.Framer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(bound))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(settings...); err != nil {
		t.Fatal(err)
	}
	return fr
}

// TestH2FramesMatchHaproxy sends haproxy 2.6 and vipstack the same
// streams, one connection per listener, with raw frames, and compares
// what each stream gets: its HEADERS' fields in their order (HPACK
// decoded), whether the HEADERS end the stream, and any RST_STREAM or
// GOAWAY. haproxy writes the length first, then its other fields in the
// order of its HTTP/1 answers; it answers a 401 over HTTP/2 and serves
// the connection's next streams (no GOAWAY, no reset: measured, 2.6.12,
// where its HTTP/1 401 closes the connection); a 303 or a HEAD answer
// ends its stream on the HEADERS. Before, x/net's server wrote the
// fields alphabetically with the length last, and the 303 with an empty
// DATA frame after.
func TestH2FramesMatchHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	m1 := startBackend(t, "m1")
	conf := func(fe, mon, stats string) string {
		return webCompareText(m1.addr, fe, mon, stats)
	}
	ports := freePorts(t, 3)
	peers.HAProxy(t, conf(ports[2], ports[0], ports[1]))
	l := newLB(t, fakeClock(), parseOnLoopback(t, conf("1", "2", "3")))
	eventually(t, "haproxy's monitor", func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+ports[0])
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	type request struct{ method, path, auth string }
	monitor := []request{{"GET", "/haproxy_ready", ""}, {"HEAD", "/haproxy_ready", ""}, {"GET", "/other", ""}}
	stats := []request{
		{"GET", "/haproxy_stats;csv", ""},
		{"GET", "/haproxy_stats;csv", "Username:wrong"},
		{"GET", "/haproxy_stats;csv", "Username:Password"},
		{"GET", "/haproxy_stats", "Username:Password"},
		{"HEAD", "/haproxy_stats", "Username:Password"},
		{"POST", "/haproxy_stats", "Username:Password"},
		{"GET", "/haproxy_stats;norefresh", "Username:Password"},
	}
	transcript := func(addr string, reqs []request) []string {
		fr := h2Open(t, addr)
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		var out []string
		for i, r := range reqs {
			id := uint32(2*i + 1)
			var hb bytes.Buffer
			enc := hpack.NewEncoder(&hb)
			fs := [][2]string{{":method", r.method}, {":scheme", "http"}, {":authority", addr}, {":path", r.path}}
			if r.auth != "" {
				fs = append(fs, [2]string{"authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(r.auth))})
			}
			for _, f := range fs {
				enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
			}
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
				out = append(out, "write: "+err.Error())
				return out
			}
			out = append(out, r.method+" "+r.path+" "+r.auth)
			for ended := false; !ended; {
				f, err := fr.ReadFrame()
				if err != nil {
					out = append(out, "  read: connection ended")
					return out
				}
				switch f := f.(type) {
				case *http2.SettingsFrame:
					if !f.IsAck() {
						fr.WriteSettingsAck()
					}
				case *http2.MetaHeadersFrame:
					for _, hf := range f.Fields {
						out = append(out, "  "+hf.Name+": "+hf.Value)
					}
					if ended = f.StreamEnded(); ended {
						out = append(out, "  (end of stream on HEADERS)")
					}
				case *http2.DataFrame:
					ended = f.StreamEnded()
				case *http2.RSTStreamFrame:
					out = append(out, "  RST_STREAM "+f.ErrCode.String())
					ended = f.StreamID == id
				case *http2.GoAwayFrame:
					out = append(out, "  GOAWAY "+f.ErrCode.String())
				}
			}
		}
		return out
	}
	for _, tt := range []struct {
		name, haproxy, vipstack string
		reqs                    []request
	}{
		{"monitor", "127.0.0.1:" + ports[0], l.Addrs("health_check_http_url")[0].String(), monitor},
		{"stats", "127.0.0.1:" + ports[1], l.Addrs("stats")[0].String(), stats},
	} {
		want := transcript(tt.haproxy, tt.reqs)
		got := transcript(tt.vipstack, tt.reqs)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: HTTP/2 answers differ from haproxy's (-haproxy +vipstack):\n%s", tt.name, diff)
		}
	}
}
