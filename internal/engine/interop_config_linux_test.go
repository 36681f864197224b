package engine_test

// Interop tests of configurations peers disagree on, and of VIP prefix lengths.

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestInteropMisconfiguredPeer: vipstack and keepalived on one VRID
// whose configurations differ in what RFC 3768 7.1 and keepalived check on
// receipt. keepalived 2.2.7 drops such adverts (measured: each case's
// keepalivedSays is in its log), so each side becomes master and holds its VIP, as two
// keepalived nodes configured so would. vipstack must drop keepalived's
// adverts alike, and say so ("VRID conflict", with the kind), or, at the
// lower priority, it would be keepalived's backup while keepalived ignores
// it. PASS passwords that differ after their 8th character are the same on
// the wire (the seeds' managed_api_vip and managed_ingress_vip are both
// "managed_"), and VRRPv3 carries no authentication: those are one group,
// and the higher priority alone holds the VIP. Both directions: vipstack
// below keepalived (checks vipstack's receive rules) and above it
// (keepalived's).
func TestInteropMisconfiguredPeer(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	other := netip.MustParseAddr("198.18.0.101")
	for _, tc := range []struct {
		name       string
		version    int
		vipstack   func(*peers.Conf) // applied after the common settings
		keepalived func(*peers.Conf)
		oneGroup   bool   // agree on the wire: only the higher one holds
		kind       string // vipstack's conflict kind when they disagree
		// keepalivedSays is what keepalived 2.2.7 logged here (measured).
		keepalivedSays string
	}{
		{name: "auth_pass same first 8 characters", version: 2,
			vipstack:   func(c *peers.Conf) { c.Auth = "managed_ingress_vip" },
			keepalived: func(c *peers.Conf) { c.Auth = "managed_api_vip" },
			oneGroup:   true},
		{name: "auth_pass differs", version: 2,
			vipstack:       func(c *peers.Conf) { c.Auth = "secret2" },
			keepalived:     func(c *peers.Conf) { c.Auth = "secret1" },
			kind:           "auth",
			keepalivedSays: "(VI_1) received an invalid passwd!"},
		{name: "PASS against none", version: 2,
			vipstack:       func(c *peers.Conf) { c.Auth = "" },
			keepalived:     func(c *peers.Conf) { c.Auth = "secret1" },
			kind:           "auth",
			keepalivedSays: "(VI_1) received a 0 auth, expecting 1!"},
		{name: "advert_int differs", version: 2,
			vipstack:       func(c *peers.Conf) { c.Interval = 2 * time.Second },
			keepalived:     func(c *peers.Conf) {},
			kind:           "interval",
			keepalivedSays: "(VI_1) advertisement interval mismatch mine=1 sec rcv'd=2 sec"},
		{name: "VRRPv2 against VRRPv3", version: 2,
			vipstack:       func(c *peers.Conf) { c.Version, c.Auth = 3, "" },
			keepalived:     func(c *peers.Conf) { c.Auth = "" },
			kind:           "version",
			keepalivedSays: "(VI_1) wrong version. Received 3 and expect 2"},
		{name: "virtual_ipaddress differs", version: 2,
			vipstack:       func(c *peers.Conf) { c.VIP = netip.PrefixFrom(other, 32) },
			keepalived:     func(c *peers.Conf) {},
			kind:           "addresses",
			keepalivedSays: "(VI_1) ip address associated with VRID 51 not present in MASTER advert: 198.18.0.100"},
		{name: "VRRPv3 ignores authentication", version: 3,
			vipstack:       func(c *peers.Conf) { c.Auth = "secret2" },
			keepalived:     func(c *peers.Conf) { c.Auth = "secret1" },
			oneGroup:       true,
			keepalivedSays: "(VI_1) VRRP version 3 does not support authentication. Ignoring."},
	} {
		for _, vipstackHigher := range []bool{false, true} {
			dir := "vipstack-lower"
			if vipstackHigher {
				dir = "vipstack-higher"
			}
			t.Run(tc.name+"/"+dir, func(t *testing.T) {
				t.Parallel()
				m := mode{version: tc.version, family: 4}
				// Host 0 is always vipstack, so the tie-break plays no part.
				prios := []int{100, 150}
				if vipstackHigher {
					prios = []int{150, 100}
				}
				c := newCluster(t, m, []peers.Impl{peers.Vipstack, peers.Keepalived}, prios)
				c.extra[0] = func(conf *peers.Conf) {
					conf.Auth = "secret1"
					tc.vipstack(conf)
				}
				c.extra[1] = func(conf *peers.Conf) {
					conf.Auth = "secret1"
					tc.keepalived(conf)
				}
				c.startAll()
				vips := []netip.Addr{c.conf(0).VIP.Addr(), c.conf(1).VIP.Addr()}
				want := []bool{true, true}
				if tc.oneGroup {
					want = []bool{vipstackHigher, !vipstackHigher}
				}
				// Both intervals' master-down times have passed once both
				// are stable over three of the longer interval.
				waitHolders(t, c.topo.Hosts, vips, want, 3*max(c.conf(0).Interval, c.conf(1).Interval), 25*time.Second, tc.name)
				if !c.nodes[0].Alive() {
					t.Errorf("vipstack exited")
				}
				if tc.keepalivedSays != "" && !strings.Contains(c.nodes[1].Log(), tc.keepalivedSays) {
					t.Errorf("keepalived's log does not say %q", tc.keepalivedSays)
				}
				if tc.kind != "" && !strings.Contains(c.nodes[0].Log(), "kind="+tc.kind) {
					t.Errorf("vipstack's log does not name the conflict kind=%s", tc.kind)
				}
			})
		}
	}
}

// vipState is what the kernel shows for a VIP on a host: its address
// entry (`ip -j addr`, the fields an implementation chooses) and the routes
// of table main and local that name it (`ip -j route`).
type vipState struct {
	Addr   map[string]any
	Routes []string
}

func vipOn(t *testing.T, h *testnet.Host, vip netip.Addr) vipState {
	t.Helper()
	out, err := h.Run("ip", "-j", "addr", "show", "dev", h.Link)
	if err != nil {
		t.Fatal(err)
	}
	var links []struct {
		AddrInfo []map[string]any `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		t.Fatalf("ip -j addr: %v: %s", err, out)
	}
	var st vipState
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if a["local"] == vip.String() {
				st.Addr = map[string]any{}
				for k, v := range a {
					switch k {
					case "valid_life_time", "preferred_life_time":
					default:
						st.Addr[k] = v
					}
				}
			}
		}
	}
	for _, table := range []string{"main", "local"} {
		out, err := h.Run("ip", "-j", "route", "show", "table", table)
		if err != nil {
			t.Fatal(err)
		}
		var routes []map[string]any
		if err := json.Unmarshal([]byte(out), &routes); err != nil {
			t.Fatalf("ip -j route: %v: %s", err, out)
		}
		for _, r := range routes {
			if r["prefsrc"] == vip.String() || r["dst"] == vip.String() {
				delete(r, "flags")
				b, _ := json.Marshal(r)
				st.Routes = append(st.Routes, table+" "+string(b))
			}
		}
	}
	return st
}

// TestInteropSlash16: a /16 virtual_ipaddress, as seed 001 writes
// its VIPs (10.0.0.5/16 on a node of machine network 10.0.0.0/16, where
// `ip a` shows "inet 10.0.0.5/16 scope global secondary ens3"), installed
// by keepalived and by vipstack in one group: the same address entry and
// the same routes, and none of either left on a node that lost the VIP.
// keepalived 2.2.7 installs (measured, `ip -j addr` and `ip -j route`):
//
//	case              address                        routes
//	inside 198.19/16  198.19.0.5/16 scope global     local 198.19.0.5 (src the
//	                  secondary, label eth0           node's own address); no
//	                                                  connected route added
//	own prefix        198.18.5.5/16 scope global,    main 198.18.0.0/16 proto
//	                  label eth0, not secondary       kernel scope link src VIP;
//	                                                  local VIP; broadcast
//	                                                  198.18.255.255
//
// and removes the address and every one of those routes when it stops or
// loses the VIP (seen here after SIGTERM).
func TestInteropSlash16(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	for _, tc := range []struct {
		name    string
		machine string // an address each host gets besides testnet's (%d: the host's index)
		vip     netip.Prefix
	}{
		// Seed 001: the node's own address is in the VIP's /16.
		{name: "inside the machine network", machine: "198.19.0.%d/16", vip: netip.MustParsePrefix("198.19.0.5/16")},
		// No address of the node in the /16: the VIP is its first.
		{name: "own prefix", vip: netip.MustParsePrefix("198.18.5.5/16")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: interopPrefix2})
			kH, vH := topo.Hosts[0], topo.Hosts[1]
			for _, h := range topo.Hosts {
				if tc.machine != "" {
					if _, err := h.Run("ip", "addr", "add", fmt.Sprintf(tc.machine, 10+h.Index), "dev", h.Link); err != nil {
						t.Fatal(err)
					}
				}
			}
			vip := tc.vip.Addr()
			conf := func(prio int) peers.Conf {
				return peers.Conf{Version: 2, Interval: time.Second, VRID: 29, Priority: prio, VIP: tc.vip, Auth: "ocp4_api_vip"}
			}
			// own replaces the host's addresses in st, so that two hosts'
			// states compare.
			own := func(h *testnet.Host, st vipState) vipState {
				mine := []string{h.IPv4.Addr().String()}
				if tc.machine != "" {
					mine = append(mine, strings.TrimSuffix(fmt.Sprintf(tc.machine, 10+h.Index), "/16"))
				}
				out := vipState{Addr: st.Addr}
				for _, r := range st.Routes {
					for _, a := range mine {
						r = strings.ReplaceAll(r, `"`+a+`"`, `"HOST"`)
					}
					out.Routes = append(out.Routes, r)
				}
				return out
			}
			sole := func(h *testnet.Host, why string) {
				t.Helper()
				if _, err := peers.WaitSoleHolder(topo.Hosts, vip, h, time.Second, 20*time.Second); err != nil {
					t.Fatalf("%s: %v", why, err)
				}
			}
			// gone checks that h has neither the address nor a route of it.
			gone := func(h *testnet.Host, why string) {
				t.Helper()
				if st := vipOn(t, h, vip); st.Addr != nil || st.Routes != nil {
					t.Errorf("%s: %s still has %+v", why, h.Name, st)
				}
			}
			kText := withLines(t, conf(150), kH)
			k := startText(t, kH, peers.Keepalived, kText)
			sole(kH, "keepalived alone")
			want := own(kH, vipOn(t, kH, vip))
			t.Logf("keepalived as master installs %+v", want)
			if want.Addr["prefixlen"] != float64(16) {
				t.Fatalf("keepalived installed %+v, not a /16", want.Addr)
			}
			v := startText(t, vH, peers.Vipstack, withLines(t, conf(100), vH))
			if err := k.Term(); err != nil {
				t.Fatal(err)
			}
			sole(vH, "keepalived stopped")
			gone(kH, "keepalived stopped") // what keepalived leaves: nothing
			if diff := cmp.Diff(want, own(vH, vipOn(t, vH, vip))); diff != "" {
				t.Errorf("vipstack as master (-keepalived's +vipstack's):\n%s", diff)
			}
			startText(t, kH, peers.Keepalived, kText)
			sole(kH, "keepalived back at 150 preempts vipstack")
			gone(vH, "vipstack preempted")
			if diff := cmp.Diff(want, own(kH, vipOn(t, kH, vip))); diff != "" {
				t.Errorf("keepalived as master again (-first +now):\n%s", diff)
			}
			if err := v.Term(); err != nil {
				t.Fatal(err)
			}
			gone(vH, "vipstack stopped as backup")
		})
	}
}
