package serve

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLimits: the status endpoint answers a normal request, refuses
// headers past MaxHeaderBytes with 431, and holds at most MaxConns
// connections at once (the next one waits until one closes).
func TestLimits(t *testing.T) {
	s, err := JSON("127.0.0.1:0", "/status", func() any { return map[string]int{"ok": 1} })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url := "http://" + s.Addr.String() + "/status"
	get := func(header string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if header != "" {
			req.Header.Set("X-Big", header)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(""); code != 200 {
		t.Fatalf("plain request: %d, want 200", code)
	}
	if code := get(strings.Repeat("a", 2*MaxHeaderBytes)); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("%d-byte header: %d, want 431", 2*MaxHeaderBytes, code)
	}

	// Fill every slot with idle connections that have sent a request
	// line (so the server has accepted them), then check one more is not
	// served until a slot frees.
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := range MaxConns {
		c, err := net.DialTimeout("tcp", s.Addr.String(), 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		fmt.Fprintf(c, "GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
		buf := make([]byte, 1)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(buf); err != nil {
			t.Fatalf("connection %d got no answer: %v", i, err)
		}
		held = append(held, c)
	}
	extra, err := net.DialTimeout("tcp", s.Addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	fmt.Fprintf(extra, "GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
	extra.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := extra.Read(make([]byte, 1)); err == nil {
		t.Fatalf("connection %d was served while %d were open", MaxConns+1, MaxConns)
	}
	held[0].Close()
	held = held[1:]
	extra.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := extra.Read(make([]byte, 1)); err != nil {
		t.Fatalf("connection %d was not served after a slot freed: %v", MaxConns+1, err)
	}
}

// TestReusePort: two endpoints with ReusePort share a port (an agent and
// its successor on a node); without it the second is refused.
func TestReusePort(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	a, err := Handler("127.0.0.1:0", ok, ReusePort())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Handler(a.Addr.String(), ok, ReusePort())
	if err != nil {
		t.Fatalf("second endpoint with ReusePort on %s: %v", a.Addr, err)
	}
	defer b.Close()
	if c, err := Handler(a.Addr.String(), ok); err == nil {
		c.Close()
		t.Fatalf("an endpoint without ReusePort listened on %s beside two with it", a.Addr)
	}
	a.Close()
	// The kernel closes the first socket once its pending accept returns;
	// a connection hashed to it meanwhile is reset. Bounded retries.
	var err2 error
	for range 50 {
		var resp *http.Response
		if resp, err2 = http.Get("http://" + a.Addr.String() + "/"); err2 == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("after the first closed, the second does not answer: %v", err2)
}

// TestServed: with Served, each answered request has sent on the channel
// by the time its answer arrives (the send comes before the handler
// returns, and the server writes the answer after that), and a full
// channel does not hold the answer back; without it nothing is sent.
func TestServed(t *testing.T) {
	served := make(chan struct{}, 1)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	s, err := Handler("127.0.0.1:0", ok, Served(served))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plain, err := Handler("127.0.0.1:0", ok)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(addr net.Addr) {
		t.Helper()
		resp, err := client.Get("http://" + addr.String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d, want 200", addr, resp.StatusCode)
		}
	}
	sent := func() bool {
		select {
		case <-served:
			return true
		default:
			return false
		}
	}
	get(plain.Addr)
	if sent() {
		t.Fatal("the endpoint without Served sent")
	}
	get(s.Addr)
	if !sent() {
		t.Fatal("a request was answered and nothing was sent")
	}
	// The channel's one slot full: answers still come, the second send
	// is dropped.
	get(s.Addr)
	get(s.Addr)
	if !sent() {
		t.Fatal("the second request sent nothing")
	}
	if sent() {
		t.Fatal("a send that found the channel full was kept")
	}
}

// liveness is a status value that can say it is not live.
type liveness struct {
	Name string `json:"name"`
	Why  string `json:"why,omitempty"`
}

func (l liveness) Unhealthy() string { return l.Why }

// TestJSONUnhealthy: a status that says why its process is not live is
// served with 503 and the same body; one that does not, or a value that
// cannot say, with 200.
func TestJSONUnhealthy(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		code int
		body string
		why  string // the NotLiveHeader, on one line
	}{
		{"live", liveness{Name: "n1"}, http.StatusOK, `"name": "n1"`, ""},
		{"not live", liveness{Name: "n1", Why: "bgp: wedged\n  since 12:00"}, http.StatusServiceUnavailable, `"why": "bgp: wedged\n  since 12:00"`, "bgp: wedged since 12:00"},
		{"cannot say", map[string]int{"vips": 2}, http.StatusOK, `"vips": 2`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := JSON("127.0.0.1:0", "/status", func() any { return tc.v })
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + s.Addr.String() + "/status")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.body) || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("GET /status: %d %q, body %s; want %d, JSON with %s", resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.code, tc.body)
			}
			if why, want := resp.Header.Get(NotLiveHeader), tc.why; why != want {
				t.Errorf("%s header %q, want %q", NotLiveHeader, why, want)
			}
		})
	}
}
