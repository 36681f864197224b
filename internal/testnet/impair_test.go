package testnet

import (
	"strings"
	"testing"
)

// TestImpair: 100 % loss with the nftables rule (the path a kernel without
// netem takes) stops the host's traffic, and zero loss removes the table;
// a delay without netem is refused. With netem, the same loss through tc.
func TestImpair(t *testing.T) {
	RequireRoot(t)
	topo, err := Build(Options{Hosts: 2, Prefix: "vsti"})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	reach := func() bool {
		_, err := h1.Run("ping", "-c1", "-W1", h2.IPv4.Addr().String())
		return err == nil
	}
	if !reach() {
		t.Fatal("h2 unreachable before any impairment")
	}
	netems := []bool{false}
	if h1.ProbeNetem() {
		netems = append(netems, true)
	} else {
		t.Log("no tc netem in this kernel: only the nftables path is tested")
	}
	for _, netem := range netems {
		if err := h1.Impair(100, 0, netem); err != nil {
			t.Fatalf("netem %v: %v", netem, err)
		}
		if reach() {
			t.Errorf("netem %v: h2 reachable through 100%% loss", netem)
		}
		if err := h1.Impair(0, 0, netem); err != nil {
			t.Fatalf("netem %v: removing: %v", netem, err)
		}
		if !reach() {
			t.Errorf("netem %v: h2 unreachable after the impairment was removed", netem)
		}
	}
	if out, _ := h1.Run("nft", "list", "tables"); strings.Contains(out, ImpairTable) {
		t.Errorf("%s left behind:\n%s", ImpairTable, out)
	}
	if err := h1.Impair(0, 5e6, false); err == nil || !strings.Contains(err.Error(), "needs tc netem") {
		t.Errorf("a delay without netem: %v, want an error naming netem", err)
	}
	if err := h1.Impair(101, 0, false); err == nil || !strings.Contains(err.Error(), "want 0..100%") {
		t.Errorf("101%% loss: %v, want an error naming the range", err)
	}
}

// TestLossScript: the nftables script drops by the link alone or by a set
// of the link and its uppers; 100 % has no numgen match (nft refuses
// "< 100" against 0-99) and 0 % only deletes the table.
func TestLossScript(t *testing.T) {
	const head = "table inet vxchaos_loss\ndelete table inet vxchaos_loss\n"
	chain := func(rule string) string {
		return head + "table inet vxchaos_loss {\n\tchain out {\n\t\ttype filter hook output priority filter; policy accept;\n\t\t" + rule + "\n\t}\n}\n"
	}
	tests := []struct {
		name  string
		links []string
		loss  int
		want  string
	}{
		{name: "link alone", links: []string{"eth0"}, loss: 30, want: chain(`oifname "eth0" numgen random mod 100 < 30 drop`)},
		{name: "link and macvlans", links: []string{"eth0", "vrrp4-51", "vrrp6-53"}, loss: 5,
			want: chain(`oifname { "eth0", "vrrp4-51", "vrrp6-53" } numgen random mod 100 < 5 drop`)},
		{name: "everything", links: []string{"eth0", "vrrp4-51"}, loss: 100, want: chain(`oifname { "eth0", "vrrp4-51" } drop`)},
		{name: "removal", links: []string{"eth0", "vrrp4-51"}, loss: 0, want: head},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lossScript(tt.links, tt.loss); got != tt.want {
				t.Errorf("lossScript(%q, %d) =\n%s\nwant\n%s", tt.links, tt.loss, got, tt.want)
			}
		})
	}
}

// TestImpairWithUpper: without netem, Impair leaves what a macvlan on the
// link sends alone (the output hook names the macvlan); ImpairWith naming
// it drops that too.
func TestImpairWithUpper(t *testing.T) {
	RequireRoot(t)
	topo, err := Build(Options{Hosts: 2, Prefix: "vfmu"})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	src := "198.18.0.250"
	for _, args := range [][]string{
		{"link", "add", "vsmv0", "link", h1.Link, "type", "macvlan", "mode", "bridge"},
		{"addr", "add", src + "/32", "dev", "vsmv0"},
		{"link", "set", "vsmv0", "up"},
		{"route", "add", h2.IPv4.Addr().String() + "/32", "dev", "vsmv0", "src", src},
	} {
		if _, err := h1.Run("ip", args...); err != nil {
			t.Fatal(err)
		}
	}
	reach := func() bool {
		_, err := h1.Run("ping", "-c1", "-W1", "-I", src, h2.IPv4.Addr().String())
		return err == nil
	}
	if !reach() {
		t.Fatal("h2 unreachable through the macvlan before any impairment")
	}
	if err := h1.Impair(100, 0, false); err != nil {
		t.Fatal(err)
	}
	if !reach() {
		t.Error("Impair on the link alone stopped the macvlan's traffic: the test's premise is wrong")
	}
	if err := h1.ImpairWith(100, 0, false, "vsmv0"); err != nil {
		t.Fatal(err)
	}
	if reach() {
		t.Error("h2 reachable through the macvlan under ImpairWith(100%) naming it")
	}
	if err := h1.ImpairWith(0, 0, false, "vsmv0"); err != nil {
		t.Fatal(err)
	}
	if !reach() {
		t.Error("h2 unreachable after the impairment was removed")
	}
}
