package peers

// BuildCoreDNS builds stock CoreDNS (./internal/peers/corednsstock: the
// CoreDNS source go.mod pins, with the in-tree plugins vipstack's DNS
// builds in) into dir and returns its path.
func BuildCoreDNS(dir string) (string, error) {
	return buildInModule(dir, "coredns", "./internal/peers/corednsstock")
}
