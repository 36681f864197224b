package lb

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestStatsPageEscapesCheckText: a server's answer to its HTTP check
// reaches the HTML stats page (the reason phrase is the LastChk cell's
// last_chk, as haproxy shows it); markup in it is shown as text, never
// run: a server, or whoever answers on its address, must not put a
// script into the page of the people who read it.
func TestStatsPageEscapesCheckText(t *testing.T) {
	const reason = `<script>alert("x")</script><img src=x onerror=alert(1)>`
	b := startBackendFunc(t, "evil", func(c net.Conn) {
		defer c.Close()
		c.SetDeadline(time.Now().Add(bound))
		buf := make([]byte, 4096)
		c.Read(buf) // the check's request
		fmt.Fprintf(c, "HTTP/1.0 503 %s\r\nContent-Length: 0\r\n\r\n", reason)
	})
	cfg := webConfig(tcpConfig(lbconfig.RoundRobin, lbconfig.Server{Name: "s1", Addr: b.addr, Weight: 1, Check: true, Inter: 100 * time.Millisecond}))
	cfg.Backends[0].Check = lbconfig.HTTPCheck{Method: "GET", URI: "/readyz", Version: "HTTP/1.0"}
	l := newLB(t, nil, cfg)
	eventually(t, "the check's answer", func() bool { return l.serverStats(t, "be", "s1").CheckStatus == "L7STS" })

	page := get(t, "http://"+l.Addrs("stats")[0].String()+"/haproxy_stats", nil, "Username", "Password")
	if page.Code != 200 {
		t.Fatalf("stats page: %d", page.Code)
	}
	if strings.Contains(page.Body, "<script") || strings.Contains(page.Body, "<img") {
		t.Errorf("the check's reason is markup on the page:\n%s", page.Body)
	}
	if want := `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;`; !strings.Contains(page.Body, want) {
		t.Errorf("the page does not show the check's reason as text (%s):\n%s", want, page.Body)
	}
}
