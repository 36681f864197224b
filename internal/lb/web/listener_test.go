package web

import (
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestWebTimeoutsFallBack: an unset `timeout http-keep-alive` is `timeout
// http-request`, and an unset `timeout http-request` is `timeout client`,
// as in haproxy 2.6 (measured: `timeout http-request 3s` alone closes an
// idle keep-alive connection after 3 s).
func TestWebTimeoutsFallBack(t *testing.T) {
	for _, c := range []struct {
		to         lbconfig.Timeouts
		header, ka time.Duration
	}{
		{lbconfig.Timeouts{HTTPRequest: 30 * time.Second, Client: 86400 * time.Second}, 30 * time.Second, 30 * time.Second}, // seed000
		{lbconfig.Timeouts{HTTPRequest: time.Minute, HTTPKeepAlive: 10 * time.Second}, time.Minute, 10 * time.Second},       // seed001
		{lbconfig.Timeouts{Client: 5 * time.Second}, 5 * time.Second, 5 * time.Second},
		{lbconfig.Timeouts{HTTPKeepAlive: 2 * time.Second, Client: 5 * time.Second}, 5 * time.Second, 2 * time.Second},
		{lbconfig.Timeouts{}, 30 * time.Second, 10 * time.Second}, // none: lb's own bounds
	} {
		if got, want := TimeoutsOf(c.to), (Timeouts{ReadHeader: c.header, Idle: c.ka, Write: webWriteTimeout}); got != want {
			t.Errorf("TimeoutsOf(%+v) = %+v, want %+v", c.to, got, want)
		}
	}
}
