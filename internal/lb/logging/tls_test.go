package logging

import (
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestFrontendTLSMark: %ft is the frontend's name with "~" after it for
// a connection or request that came over an ssl bind, as haproxy writes
// it; %f never has it.
func TestFrontendTLSMark(t *testing.T) {
	to := &Dests{{}}
	cl, err := NewConnLog(&lbconfig.ConnLog{Format: "%f %ft"}, to)
	if err != nil {
		t.Fatal(err)
	}
	hl, err := NewHTTPLog("%f %ft", to)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	for _, tt := range []struct {
		tls  bool
		want string
	}{{false, "fe fe"}, {true, "fe fe~"}} {
		if got := string(cl.AppendLine(nil, &Fields{Frontend: "fe", TLS: tt.tls, AcceptAt: now}, now)); got != tt.want {
			t.Errorf("TCP, TLS %v: %q, want %q", tt.tls, got, tt.want)
		}
		if got := string(hl.AppendLine(nil, &HTTPFields{Frontend: "fe", TLS: tt.tls, AcceptAt: now})); got != tt.want {
			t.Errorf("HTTP, TLS %v: %q, want %q", tt.tls, got, tt.want)
		}
	}
}
