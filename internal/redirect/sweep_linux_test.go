package redirect

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/nftables"

	"github.com/vipstack/vipstack/internal/testnet"
)

// TestSweep checks that Sweep removes every redirect table and nothing
// else: the supervisor runs it when the node agent dies.
func TestSweep(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsUsw"})
	h := topo.Hosts[0]
	list := func() []string {
		t.Helper()
		var names []string
		err := h.Do(func() error {
			c, err := nftables.New()
			if err != nil {
				return err
			}
			ts, err := c.ListTables()
			for _, tb := range ts {
				names = append(names, tb.Name)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	a := New(netip.MustParseAddrPort("198.18.0.5:6443"), 9445)
	b := New(netip.MustParseAddrPort("[fd00:bb::5]:6443"), 9445)
	steps := []struct {
		name      string
		act       func() ([]string, error)
		wantSwept []string
		wantLeft  []string
	}{
		{name: "nothing to sweep", act: Sweep},
		{name: "two redirects and another table", act: func() ([]string, error) {
			if err := a.Enable(); err != nil {
				return nil, err
			}
			if err := b.Enable(); err != nil {
				return nil, err
			}
			c, err := nftables.New()
			if err != nil {
				return nil, err
			}
			c.AddTable(&nftables.Table{Name: "vxother", Family: nftables.TableFamilyINet})
			return nil, c.Flush()
		}, wantLeft: []string{a.Table(), b.Table(), "vxother"}},
		{name: "sweep", act: Sweep, wantSwept: []string{a.Table(), b.Table()}, wantLeft: []string{"vxother"}},
		{name: "sweep again", act: Sweep, wantLeft: []string{"vxother"}},
	}
	for _, st := range steps {
		var swept []string
		if err := h.Do(func() error {
			var err error
			swept, err = st.act()
			return err
		}); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if d := cmp.Diff(st.wantSwept, swept); d != "" {
			t.Errorf("%s: swept (-want +got):\n%s", st.name, d)
		}
		if d := cmp.Diff(st.wantLeft, list()); d != "" {
			t.Errorf("%s: tables left (-want +got):\n%s", st.name, d)
		}
	}
}
