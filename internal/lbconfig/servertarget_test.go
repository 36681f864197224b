package lbconfig

import (
	"net/netip"
	"testing"
)

func TestServerTarget(t *testing.T) {
	ap := netip.MustParseAddrPort
	tests := []struct {
		name        string
		addr, local string
		want        string
	}{
		{name: "an address and a port", addr: "198.18.0.10:6443", local: "198.18.0.1:443", want: "198.18.0.10:6443"},
		{name: "no IP: the client's destination", addr: "0.0.0.0:9900", local: "198.18.0.7:80", want: "198.18.0.7:9900"},
		{name: "no IP, IPv6 client", addr: "0.0.0.0:9900", local: "[fd00::7]:80", want: "[fd00::7]:9900"},
		{name: "::", addr: "[::]:9900", local: "198.18.0.7:80", want: "198.18.0.7:9900"},
		{name: "no port: the client's port", addr: "198.18.0.10:0", local: "198.18.0.1:8443", want: "198.18.0.10:8443"},
		{name: "neither", addr: "0.0.0.0:0", local: "198.18.0.1:8443", want: "198.18.0.1:8443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ServerTarget(ap(tt.addr), ap(tt.local)); got != ap(tt.want) {
				t.Errorf("ServerTarget(%s, %s) = %s, want %s", tt.addr, tt.local, got, tt.want)
			}
		})
	}
}
