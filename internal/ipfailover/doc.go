// Package ipfailover runs an IP failover pool the way OpenShift's
// ipfailover image does (`oc adm ipfailover`): every node of the pool runs
// VRRP (RFC 3768, RFC 5798) for a pool of virtual IPs, each VIP is held by
// exactly one node, and only where a monitored TCP port answers. It is
// configured by the image's OPENSHIFT_HA_* environment variables (or the
// equivalent flags), with their meanings and defaults.
//
// Unlike the image, which gives every VIP group (by default every VIP) its
// own VRRP instance and therefore its own VRID, and so stops at 255 VIPs
// per broadcast domain, a pool here puts many VIPs in each instance
// (keepalived's virtual_ipaddress plus virtual_ipaddress_excluded) and needs
// only a handful of VRIDs for any number of VIPs.
//
// The package is layered like the rest of vipstack:
//
//   - Parse turns the variables into a validated Spec (pure);
//   - NewPlan lays the VIPs out in groups, gives each group a preference
//     order of node ranks, and AssignVRIDs picks VRIDs, avoiding those heard
//     from other routers on the link (pure);
//   - Plan.Keepalived builds the *keepalived.Config the VRRP engine runs
//     (pure), with the monitor port as a native TCP check (no fork);
//   - Pool (Linux) resolves the interface by route lookup, listens on the
//     link for VRIDs in use, installs the nftables rule that admits VRRP
//     multicast and runs the engine;
//   - LayoutGuard holds this node's groups back while the pool's VIPs are
//     advertised in a layout it does not share (nodes still running other
//     settings during a rollout), so that no VIP is held on two nodes.
//
// With OPENSHIFT_HA_BGP_ASN (vipstack only) no VRRP runs: every node whose
// check passes announces every VIP as a host route over BGP, with the
// speaker `vipstack node` runs, through Options.BGP (package
// ipfailover/bgpmode: it links GoBGP, which a pool run by VRRP does not).
//
// docs/design/ipfailover.md explains the layout, the ranks and the
// deliberate differences from the image.
package ipfailover
