package lb

import (
	"crypto/tls"
	"encoding/json"
	"net/netip"
	"regexp"

	"github.com/vipstack/vipstack/internal/healthcheck"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// httpCheckKey is an HTTP check as JSON, so that checkConf stays
// comparable with its headers; "" for none.
func httpCheckKey(c lbconfig.HTTPCheck) string {
	if c.Method == "" && c.URI == "" {
		return ""
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// httpProber is the prober for `option httpchk` and its `http-check`
// rules. `http-check connect port` replaces the port the check connects
// to, as a server's `port` does, and wins over it as in haproxy.
func httpProber(conf checkConf, addr netip.AddrPort, tlsConf *tls.Config) healthcheck.HTTP {
	var c lbconfig.HTTPCheck
	_ = json.Unmarshal([]byte(conf.http), &c)          // written by httpCheckKey
	expect, _ := lbconfig.StatusRanges(c.ExpectStatus) // checked by the reader
	if c.ExpectStatus == "" {
		expect = nil
	}
	if c.ConnectPort != 0 {
		addr = netip.AddrPortFrom(addr.Addr(), uint16(c.ConnectPort))
	}
	h := healthcheck.HTTP{Addr: addr, Method: c.Method, URI: c.URI, Version: c.Version, TLS: tlsConf, ExpectStatus: expect, Body: c.Body, SendProxy: conf.sendProxy, BufSize: conf.bufSize}
	for _, hd := range c.Headers {
		h.Headers = append(h.Headers, healthcheck.Header{Name: hd.Name, Value: hd.Value})
	}
	if e := c.ExpectBody; e != nil {
		m := &healthcheck.BodyMatch{Text: e.Text, Not: e.Not}
		if e.Regex {
			m.Re, _ = regexp.Compile(e.Text) // checked by the reader
		}
		h.ExpectBody = m
	}
	return h
}

// checkProxy is the PROXY header version a server's checks send first:
// its send-proxy's, as haproxy 2.6 does, unless the checks go elsewhere
// than the server's own port (`port`) or through an explicit connect
// rule (`tcp-check connect`, `http-check connect`), where haproxy sends
// none (measured: TestSendProxyChecksMatchHaproxy).
func checkProxy(b lbconfig.Backend, s lbconfig.Server) int {
	explicit := b.Check.Connect || len(b.TCPCheck) > 0 && b.TCPCheck[0].Connect
	if s.SendProxy == 0 || s.CheckPort != 0 || explicit {
		return 0
	}
	return s.SendProxy
}
