package ipfailover_test

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/testnet"
)

// TestPoolWithKeepalivedRouteInterfaceGroups runs the pool of
// TestPoolWithKeepalived (real keepalived 2.2.7 with the keepalived.conf
// `vipstack ipfailover --print-config` renders for its node, beside a
// `vipstack ipfailover` node) with OPENSHIFT_HA_NETWORK_INTERFACE unset and
// OPENSHIFT_HA_VIP_GROUPS=3 for five VIPs, on nodes that have a second
// interface named eth1 (one end of a veth pair inside the node's
// namespace, with an address of another subnet).
//
// Interface: both nodes pick eth0, the interface of the VIPs' subnet (the
// route lookup towards the VIPs), and the rendered file says `interface
// eth0` and `dev eth0` on every VIP, as the image writes them. The image's
// get_network_device would take eth1 here (it tries enp0s3, enp0s8, eth1
// and ens3 before `ip route get 8.8.8.8`, seed 002's default-route
// interface), and these namespaces have no default route at all; vipstack
// deliberately looks up the VIPs (docs/design/ipfailover.md, Interface).
//
// Groups: three vrrp_instances <name>_VIP_1..3 with VRIDs offset+1..3, as
// the image names and numbers them. The image splits the VIPs into
// consecutive chunks (.100-.101, .102-.103, .104); vipstack's plan deals
// them to ranks first, so that the nodes' shares differ by at most one VIP
// (NewPlan): rank 0 prefers VIP_1 (.100, .104) and VIP_3 (.102), rank 1
// VIP_2 (.101, .103). keepalived runs that file as it is (measured here:
// the VIPs it holds, and it takes every VIP when vipstack's check fails).
// The VIPs follow the check both ways: keepalived's failing, then
// vipstack's.
func TestPoolWithKeepalivedRouteInterfaceGroups(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := os.Stat("/usr/sbin/keepalived"); err != nil {
		t.Skip("keepalived is not installed")
	}
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsq"})
	kH, vH := topo.Hosts[0], topo.Hosts[1]
	for _, h := range topo.Hosts {
		for _, args := range [][]string{
			{"link", "add", "eth1", "type", "veth", "peer", "name", "eth1p"},
			{"addr", "add", fmt.Sprintf("198.19.7.%d/24", 10+h.Index), "dev", "eth1"},
			{"link", "set", "eth1p", "up"},
			{"link", "set", "eth1", "up"},
		} {
			if out, err := h.Run("ip", args...); err != nil {
				t.Fatalf("ip %v on %s: %v: %s", args, h.Name, err, out)
			}
		}
	}
	const vipList = "198.18.0.100-104"
	vips := mustExpand(t, vipList)
	env := []string{
		"OPENSHIFT_HA_CONFIG_NAME=vsqgrp",
		"OPENSHIFT_HA_VIRTUAL_IPS=" + vipList,
		"OPENSHIFT_HA_VIP_GROUPS=3",
		"OPENSHIFT_HA_VRRP_ID_OFFSET=20",
		"OPENSHIFT_HA_REPLICA_COUNT=2",
		fmt.Sprintf("OPENSHIFT_HA_MONITOR_PORT=%d", monitorPort),
		"OPENSHIFT_HA_CHECK_INTERVAL=1",
		"OPENSHIFT_HA_PREEMPTION=preempt",
	}
	flags := []string{"--vrrp-version", "3", "--advert-int", "100ms", "--vrid-probe", "300ms"}
	ports := []net.Listener{listen(t, kH, monitorPort), listen(t, vH, monitorPort)}
	setCheck := func(i int, pass bool) {
		if pass {
			ports[i] = listen(t, topo.Hosts[i], monitorPort)
		} else {
			ports[i].Close()
		}
	}

	text := renderedConfig(t, kH, bin, env, flags)
	startRenderedKeepalived(t, kH, bin, text, filepath.Join(t.TempDir(), "keepalived"))

	// The rendered file: the instances, VRIDs, interface and VIP layout.
	type instance struct {
		VRID  string
		Iface string
		VIPs  []string
	}
	got := map[string]instance{}
	block := regexp.MustCompile(`(?s)vrrp_instance (\S+) \{(.*?)\n\}`)
	for _, m := range block.FindAllStringSubmatch(text, -1) {
		var in instance
		for _, l := range strings.Split(m[2], "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) == 2 && f[0] == "virtual_router_id":
				in.VRID = f[1]
			case len(f) == 2 && f[0] == "interface":
				in.Iface = f[1]
			case len(f) == 3 && f[1] == "dev":
				in.VIPs = append(in.VIPs, f[0]+" dev "+f[2])
			}
		}
		got[m[1]] = in
	}
	want := map[string]instance{
		"vsqgrp_VIP_1": {VRID: "21", Iface: "eth0", VIPs: []string{"198.18.0.100/32 dev eth0", "198.18.0.104/32 dev eth0"}},
		"vsqgrp_VIP_2": {VRID: "22", Iface: "eth0", VIPs: []string{"198.18.0.101/32 dev eth0", "198.18.0.103/32 dev eth0"}},
		"vsqgrp_VIP_3": {VRID: "23", Iface: "eth0", VIPs: []string{"198.18.0.102/32 dev eth0"}},
	}
	if !maps.EqualFunc(want, got, func(a, b instance) bool {
		return a.VRID == b.VRID && a.Iface == b.Iface && slices.Equal(a.VIPs, b.VIPs)
	}) {
		t.Fatalf("rendered instances %+v, want %+v", got, want)
	}

	v := startNode(t, vH, env, flags...)
	// kH (198.18.0.11) is rank 1, vH (.12) rank 0: address mod 2.
	kPrefers := []netip.Addr{vips[1], vips[3]}
	vPrefers := []netip.Addr{vips[0], vips[2], vips[4]}
	step := func(why string, kHolds, vHolds []netip.Addr) {
		t.Helper()
		var last string
		waitSpread(t, why, topo.Hosts, vips, time.Second, 20*time.Second, func(s spread) bool {
			if !once(s) {
				return false
			}
			hold, err := holdings(topo.Hosts, vips)
			if err != nil {
				t.Fatal(err)
			}
			last = fmt.Sprintf("keepalived %v, vipstack %v", slices.SortedFunc(maps.Keys(hold[0]), netip.Addr.Compare), slices.SortedFunc(maps.Keys(hold[1]), netip.Addr.Compare))
			return len(hold[0]) == len(kHolds) && len(hold[1]) == len(vHolds) &&
				!slices.ContainsFunc(kHolds, func(a netip.Addr) bool { return !hold[0][a] }) &&
				!slices.ContainsFunc(vHolds, func(a netip.Addr) bool { return !hold[1][a] })
		})
		t.Logf("%s: %s", why, last)
		for _, h := range topo.Hosts {
			out, err := h.Run("ip", "-o", "addr", "show", "dev", "eth1")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, "198.18.0.") {
				t.Errorf("%s: %s has a VIP on eth1: %s", why, h.Name, out)
			}
		}
	}
	step("start: each node holds the groups it prefers", kPrefers, vPrefers)
	if !strings.Contains(v.log.String(), `interface chosen by route lookup towards the VIPs" interface=eth0`) {
		t.Errorf("vipstack's node did not say it chose eth0 by route lookup")
	}
	setCheck(0, false)
	step("keepalived's check fails: vipstack holds every VIP", nil, vips)
	setCheck(0, true)
	step("keepalived's check passes again: it takes its groups back", kPrefers, vPrefers)
	setCheck(1, false)
	step("vipstack's check fails: keepalived holds every VIP", vips, nil)
	setCheck(1, true)
	step("vipstack's check passes again: it takes its groups back", kPrefers, vPrefers)
}
