// Package bgpmode announces an IP failover pool by BGP instead of VRRP
// (OPENSHIFT_HA_BGP_ASN, vipstack only): every node whose check passes
// announces every VIP as a host route (RFC 4271) with the speaker
// `vipstack node` runs. It is apart from package ipfailover so that a
// pool run by VRRP links no BGP speaker (docs/design/memory.md).
package bgpmode
