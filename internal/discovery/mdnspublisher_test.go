package discovery

import "testing"

// TestOCPCutOf: mdns-publisher's cut form of an instance label longer than
// 63 bytes. The first labels were measured from the real mdns-publisher
// (TestRootMDNSPublisherConfigForms: its log line "Truncating long service
// name").
func TestOCPCutOf(t *testing.T) {
	const (
		cutWorkstation = "ostest Workstatd14986a5c757dc5f338fef8015b6ccb7ter-eu-west-par1"
		cutEtcd        = "ostest Etcd-masca2d87fb4c5453d9f37d5f5d59ffb0f1ter-eu-west-par1"
		// A cluster name of 15 bytes or more: no kind left in the head.
		cutLongCluster = "production-east0123456789abcdef0123456789abcdefter-eu-west-par1"
	)
	tests := []struct {
		name, label, cluster, kind string
		want                       bool
	}{
		{name: "measured Workstation", label: cutWorkstation, cluster: "ostest", kind: ocpWorkstation, want: true},
		{name: "measured Etcd", label: cutEtcd, cluster: "ostest", kind: ocpEtcd, want: true},
		{name: "lower-case, as cached", label: "ostest workstatd14986a5c757dc5f338fef8015b6ccb7ter-eu-west-par1", cluster: "ostest", kind: ocpWorkstation, want: true},
		{name: "any cluster", label: cutWorkstation, cluster: "", kind: ocpWorkstation, want: true},
		{name: "any cluster, long name", label: cutLongCluster, cluster: "", kind: ocpEtcd, want: true},
		{name: "long cluster name", label: cutLongCluster, cluster: "production-east-1", kind: ocpWorkstation, want: true},
		// The limit of the form: the head is all that names the cluster.
		{name: "long cluster name sharing 15 bytes", label: cutLongCluster, cluster: "production-east-2", kind: ocpWorkstation, want: true},
		{name: "the head names the other kind", label: cutWorkstation, cluster: "ostest", kind: ocpEtcd, want: false},
		{name: "the head names the other kind (Etcd)", label: cutEtcd, cluster: "ostest", kind: ocpWorkstation, want: false},
		{name: "another cluster", label: cutWorkstation, cluster: "ostest2", kind: ocpWorkstation, want: false},
		{name: "a cluster ending earlier", label: cutWorkstation, cluster: "ostes", kind: ocpWorkstation, want: false},
		{name: "62 bytes", label: cutWorkstation[:62], cluster: "ostest", kind: ocpWorkstation, want: false},
		{name: "63 bytes uncut", label: "ostest Workstation-master-2-rack-a12-row-04-room-3-datacenter-e", cluster: "ostest", kind: ocpWorkstation, want: false},
		{name: "hash not hex", label: "ostest Workstatx14986a5c757dc5f338fef8015b6ccb7ter-eu-west-par1", cluster: "ostest", kind: ocpWorkstation, want: false},
		{name: "any cluster, empty first word", label: " Workstation-mad14986a5c757dc5f338fef8015b6ccb7ter-eu-west-par1", cluster: "", kind: ocpWorkstation, want: false},
		{name: "uncut label", label: "ostest Workstation-master-0", cluster: "ostest", kind: ocpWorkstation, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.label) != 63 && tt.name != "62 bytes" && tt.name != "uncut label" {
				t.Fatalf("bad case: %q is %d bytes", tt.label, len(tt.label))
			}
			if got := ocpCutOf(tt.label, tt.cluster, tt.kind); got != tt.want {
				t.Errorf("ocpCutOf(%q, %q, %q) = %v, want %v", tt.label, tt.cluster, tt.kind, got, tt.want)
			}
		})
	}
}
