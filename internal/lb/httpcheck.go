package lb

import (
	"crypto/tls"
	"encoding/json"
	"net/netip"

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
	h := healthcheck.HTTP{Addr: addr, Method: c.Method, URI: c.URI, Version: c.Version, TLS: tlsConf, ExpectStatus: expect, Body: c.Body}
	for _, hd := range c.Headers {
		h.Headers = append(h.Headers, healthcheck.Header{Name: hd.Name, Value: hd.Value})
	}
	return h
}
