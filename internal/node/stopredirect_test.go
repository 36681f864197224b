package node

import (
	"io"
	"log/slog"
	"testing"

	"github.com/vipstack/vipstack/internal/cluster"
)

// TestNoRedirectAfterStop checks that a reload that reaches the redirects
// after the agent stopped its load balancer (SIGTERM while a reload runs)
// starts no redirect: one would send the node's own clients of the VIP to
// a port nothing listens on until its lease ran out, and leave its table
// behind when the process exits.
func TestNoRedirectAfterStop(t *testing.T) {
	c, err := cluster.Parse("c.yaml", []byte(`name: c1
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
nodes:
  - {name: master-0, role: master, ips: [198.18.0.11]}
`))
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a.stopLB()
	a.syncRedirects(c)
	a.redirMu.Lock()
	n := len(a.followers)
	a.redirMu.Unlock()
	if n != 0 {
		t.Fatalf("%d redirects started after the load balancer stopped, want none", n)
	}
}
