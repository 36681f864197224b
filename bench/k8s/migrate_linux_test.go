package main

import (
	"net/netip"
	"testing"
)

func TestLeftAddr(t *testing.T) {
	tests := []struct {
		i        int
		skipEnds bool
		want     string
	}{
		{i: 0, want: "198.18.16.0"},
		{i: 1023, want: "198.18.19.255"},
		{i: 0, skipEnds: true, want: "198.18.16.1"},
		{i: 254, skipEnds: true, want: "198.18.16.255"},
		{i: 255, skipEnds: true, want: "198.18.17.0"},
		{i: keepalivedMax - 1, skipEnds: true, want: "198.18.19.254"},
	}
	for _, tt := range tests {
		if got := leftAddr(tt.i, tt.skipEnds); got != netip.MustParseAddr(tt.want) {
			t.Errorf("leftAddr(%d, %v) = %s, want %s", tt.i, tt.skipEnds, got, tt.want)
		}
	}
}

func TestBlockName(t *testing.T) {
	for s, want := range map[string]string{scenarioAnnotated: "k8s", scenarioDefaultPool: "k8s-default-pool",
		scenarioFromKeepalived: "k8s-from-keepalived", scenarioFromMetalLB: "k8s-from-metallb"} {
		if got := blockName(s); got != want {
			t.Errorf("blockName(%q) = %q, want %q", s, got, want)
		}
	}
}
