package ipfailover_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestPoolWithKeepalived: one node of the pool runs real keepalived 2.2.7
// with the keepalived.conf ipfailover renders for it (`vipstack ipfailover
// --print-config`, what OpenShift's image would run for the same plan:
// the port check as `bash -c '</dev/tcp/ADDR/PORT'`, weight 0), the other
// `vipstack ipfailover`, with the same OPENSHIFT_HA_* environment (seed
// 002's variables: MONITOR_PORT, CHECK_INTERVAL, PREEMPTION). Each holds
// the groups it prefers; when the monitored port of one closes, its VIPs
// go to the other, and come back when it opens again (preempt), in both
// directions: keepalived's check failing and vipstack's. keepalived 2.2.7
// runs the rendered file as it is (measured: "Script `chk_vsmmka` now
// returning 1", "VRRP_Script(chk_vsmmka) failed (exited with status 1)",
// "Entering FAULT STATE"; on the group the other node prefers, "received
// lower priority (230) advert from 198.18.0.12 - discarding"; and, as the
// file has no script_user, "Script user 'keepalived_script' does not exist"
// and "SECURITY VIOLATION - scripts are being executed but script_security
// not enabled", running the check as root).
func TestPoolWithKeepalived(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := os.Stat("/usr/sbin/keepalived"); err != nil {
		t.Skip("keepalived is not installed")
	}
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsmm"})
	kH, vH := topo.Hosts[0], topo.Hosts[1]
	const vipList = "198.18.0.100-103"
	vips := mustExpand(t, vipList)
	env := []string{
		"OPENSHIFT_HA_CONFIG_NAME=vsmmka",
		"OPENSHIFT_HA_VIRTUAL_IPS=" + vipList,
		"OPENSHIFT_HA_REPLICA_COUNT=2",
		"OPENSHIFT_HA_NETWORK_INTERFACE=eth0",
		fmt.Sprintf("OPENSHIFT_HA_MONITOR_PORT=%d", monitorPort),
		"OPENSHIFT_HA_CHECK_INTERVAL=1",
		"OPENSHIFT_HA_PREEMPTION=preempt",
	}
	// VRRPv3 at 0.1 s in both: the flags render into keepalived's file.
	flags := []string{"--vrrp-version", "3", "--advert-int", "100ms", "--vrid-probe", "300ms"}
	ports := []net.Listener{listen(t, kH, monitorPort), listen(t, vH, monitorPort)}
	setPort := func(i int, open bool) {
		t.Helper()
		if open {
			ports[i] = listen(t, topo.Hosts[i], monitorPort)
		} else {
			ports[i].Close()
		}
	}

	// keepalived's node: the configuration ipfailover renders for it.
	pc := kH.Command(bin, append([]string{"ipfailover", "--print-config"}, flags...)...)
	pc.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	text, err := pc.Output()
	if err != nil {
		t.Fatalf("vipstack ipfailover --print-config: %v", err)
	}
	if !strings.Contains(string(text), "</dev/tcp/"+kH.IPv4.Addr().String()+"/8080") {
		t.Fatalf("the rendered configuration has no port check:\n%s", text)
	}
	k, err := peers.Start(kH, peers.Keepalived, string(text), filepath.Join(t.TempDir(), "keepalived"), bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- rendered keepalived.conf:\n%s\n---- keepalived log:\n%s", text, tail(k.Log(), 60))
		}
	})
	startNode(t, vH, env, flags...)

	want := func(why string, counts ...int) {
		t.Helper()
		waitSpread(t, why, topo.Hosts, vips, time.Second, 20*time.Second,
			func(s spread) bool { return once(s) && slices.Equal(s.counts, counts) })
	}
	want("start: each node holds the groups it prefers", 2, 2)
	setPort(0, false)
	want("keepalived's monitor port closed: vipstack holds every VIP", 0, 4)
	setPort(0, true)
	want("keepalived's port open again: it takes its groups back", 2, 2)
	setPort(1, false)
	want("vipstack's monitor port closed: keepalived holds every VIP", 4, 0)
	setPort(1, true)
	want("vipstack's port open again: it takes its groups back", 2, 2)
	if !strings.Contains(k.Log(), "Entering FAULT STATE") {
		t.Errorf("keepalived never went FAULT on its closed port")
	}
}
