package cluster

// Fletcher8 is the checksum OpenShift's on-premise networking derives
// virtual router IDs from. It reproduces that code's arithmetic exactly,
// including the wrap-around of its 8-bit sums before the modulo, so that
// vipstack computes the same IDs as a running OpenShift cluster.
func Fletcher8(s string) uint8 {
	var a, b uint8
	for i := 0; i < len(s); i++ {
		a = (a + s[i]) % 0xf
		b = (b + a) % 0xf
	}
	return b<<4 | a
}

// VRIDs are the virtual router IDs of a cluster's three instances.
type VRIDs struct{ API, DNS, Ingress uint8 }

// DeriveVRIDs computes the IDs as OpenShift does: checksum plus one (0 is
// not a valid VRID; the checksum never exceeds 0xEE), DNS bumped off API,
// Ingress bumped off both.
func DeriveVRIDs(name string) VRIDs {
	v := VRIDs{
		API:     Fletcher8(name+"-api") + 1,
		DNS:     Fletcher8(name+"-dns") + 1,
		Ingress: Fletcher8(name+"-ingress") + 1,
	}
	if v.DNS == v.API {
		v.DNS++
	}
	for v.Ingress == v.DNS || v.Ingress == v.API {
		v.Ingress++
	}
	return v
}
