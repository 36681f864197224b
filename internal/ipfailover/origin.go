package ipfailover

import (
	"fmt"
	"net/netip"
	"strings"
)

// OriginConfig returns the keepalived.conf that OpenShift's ipfailover image
// would generate on a node with address addr on iface, for comparison runs
// (bench/ipfailover runs it with real keepalived). It follows the image's
// generator as documented in docs/design/ipfailover.md:
//
//   - one vrrp_instance per group, VRID offset+counter (counter from 1,
//     excluded VRIDs skipped), the VIPs split into OPENSHIFT_HA_VIP_GROUPS
//     consecutive chunks (the first ones one VIP larger), or one instance
//     per VIP when it is unset;
//   - priorities from the node's address: slot = last octet mod 128; the
//     node is "master" of every group whose counter is a multiple of
//     slot mod replicas + 1, with priority 255-slot, or slot+1 on every
//     second such group in a row; elsewhere slot mod 64 plus a random
//     0..31 (rnd(32));
//   - VRRPv2, advert 1 s, PASS authentication with the config name, the
//     preemption strategy line, the check script (or the bash /dev/tcp
//     port check, or `true` when the port is 0) every check interval, and
//     the notify script.
//
// It is not what vipstack runs: see Plan.Config for that. It fails when the
// groups need VRIDs above 255 (the image's wall).
//
// Unlike every other keepalived.conf vipstack writes, this text is written
// by hand, not with keepalived.Format: it stands for the image's output in
// comparison runs, so it keeps the image's layout, its header comment, its
// order of settings and lines Format would write otherwise or leave out
// (the preempt line, max_auto_priority, notification_email, smtp_*), byte
// for byte as the golden files record it.
func OriginConfig(s *Spec, addr netip.Addr, iface string, rnd func(n int) int) (string, error) {
	var b strings.Builder
	w := func(format string, args ...any) {
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	w("! Configuration File for keepalived")
	w("")
	w("global_defs {")
	w("   max_auto_priority    99")
	w("   notification_email {")
	w("     root@localhost")
	w("   }")
	w("")
	w("   notification_email_from ipfailover@openshift.local")
	w("   smtp_server 127.0.0.1")
	w("   smtp_connect_timeout 30")
	w("   router_id %s", scrub(s.ConfigName))
	w("}")
	w("")
	check := "chk_" + strings.ReplaceAll(s.ConfigName, "-", "_")
	w("vrrp_script %s {", check)
	switch {
	case s.CheckScript != "":
		w("   script \"%s\"", s.CheckScript)
	case s.MonitorPort == 0:
		w("   script \"true\"")
	default:
		w("   script \"/bin/bash -c '</dev/tcp/%s/%d'\"", addr, s.MonitorPort)
	}
	w("   interval %s", seconds(s.CheckInterval))
	w("}")

	b4 := addr.As16()
	slot := int(b4[15]) % 128
	nodes := max(s.ReplicaCount, 1)
	idx := slot%nodes + 1
	preempt := "nopreempt"
	if s.Preempt {
		preempt = "preempt"
		if s.PreemptDelay > 0 {
			preempt = "preempt_delay " + seconds(s.PreemptDelay)
		}
	}

	per, extra := 1, 0
	if groups := s.VIPGroups; groups > 0 {
		per, extra = len(s.VIPs)/groups, len(s.VIPs)%groups
	}
	excluded := map[int]bool{}
	for _, v := range s.ExcludedVRIDs {
		excluded[v] = true
	}
	offset := s.VRIDOffset
	previous := "none"
	next := 0
	for counter := 1; next < len(s.VIPs); counter++ {
		n := per
		if extra > 0 {
			n++
			extra--
		}
		vips := s.VIPs[next : next+n]
		next += n

		prio := slot%64 + rnd(32)
		master := false
		if counter%idx == 0 {
			master = s.Preempt
			if previous == "master" {
				prio, previous = slot+1, "flip-flop"
			} else {
				prio = 255 - slot
				previous = "slave"
				if master {
					previous = "master"
				}
			}
		}
		for excluded[offset+counter] {
			offset++
		}
		vrid := offset + counter
		if vrid > 255 {
			return "", fmt.Errorf("group %d needs VRID %d: the image stops at 255 VRIDs (%d VIPs, %s=%d, %s=%d)",
				counter, vrid, len(s.VIPs), EnvVIPGroups, s.VIPGroups, EnvVRIDOffset, s.VRIDOffset)
		}
		w("")
		w("vrrp_instance %s_VIP_%d {", scrub(s.ConfigName), counter)
		w("   interface %s", iface)
		if master {
			w("   state MASTER")
		}
		w("   virtual_router_id %d", vrid)
		w("   priority %d", prio)
		w("   %s", preempt)
		w("")
		w("   authentication {")
		w("      auth_type PASS")
		w("      auth_pass %s", s.ConfigName)
		w("   }")
		w("")
		w("   track_script {")
		w("      %s", check)
		w("   }")
		if s.NotifyScript != "" {
			w("   notify \"%s\"", s.NotifyScript)
		}
		if len(s.Peers) > 0 {
			w("")
			w("    unicast_peer {")
			for _, p := range s.Peers {
				w("        %s", p)
			}
			w("    }")
		}
		w("")
		w("   virtual_ipaddress {")
		for _, a := range vips {
			w("    %s dev %s", a, iface)
		}
		w("   }")
		w("}")
	}
	return b.String(), nil
}
