package ipfailover

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAssignVRIDs(t *testing.T) {
	foreign := func(vrid uint8, from string) Heard {
		return Heard{VRID: vrid, From: netip.MustParseAddr(from), Version: 2, Addresses: addrs("192.0.2.1"), Packets: 3}
	}
	// ours returns an advert of group g (of the 10-VIP, 3-rank plan) on vrid.
	ours := func(g int, vrid uint8, from string) Heard {
		p := NewPlan(specWith(10, 0), 3)
		return Heard{VRID: vrid, From: netip.MustParseAddr(from), Version: 2, Addresses: p.Groups[g].Advertised(), Packets: 3}
	}
	// otherLayout returns an advert of group 0 of the same VIPs laid out
	// for 2 ranks (a node of the pool still running the settings of before
	// a scale-up from 2 to 3 nodes): 10.1.0.1, .3, .5, .7, .9 on vrid.
	otherLayout := func(vrid uint8, from string) Heard {
		p := NewPlan(specWith(10, 0), 2)
		return Heard{VRID: vrid, From: netip.MustParseAddr(from), Version: 2, Addresses: p.Groups[0].Advertised(), Packets: 3}
	}
	for _, tc := range []struct {
		name     string
		spec     func(s *Spec)
		heard    []Heard
		members  []string
		want     []uint8
		findings []Finding
		wantErr  string
	}{
		{name: "nothing heard: offset+1 up", want: []uint8{11, 12, 13, 14, 15, 16}},
		{name: "excluded VRIDs are skipped", spec: func(s *Spec) { s.ExcludedVRIDs = []int{12, 14} }, want: []uint8{11, 13, 15, 16, 17, 18}},
		{
			name:  "a foreign VRID is avoided when the offset is free",
			heard: []Heard{foreign(12, "198.18.0.50")}, want: []uint8{11, 13, 14, 15, 16, 17},
			findings: []Finding{{VRID: 12, From: addrs("198.18.0.50"), Action: "avoided"}},
		},
		{
			name:  "a foreign VRID is a conflict when the offset is fixed",
			spec:  func(s *Spec) { s.OffsetFixed = true },
			heard: []Heard{foreign(12, "198.18.0.50"), foreign(12, "198.18.0.51")}, want: []uint8{11, 12, 13, 14, 15, 16},
			findings: []Finding{{VRID: 12, From: addrs("198.18.0.50", "198.18.0.51"), Action: "conflict", Group: "OpenShift_IPFailover_VIP_2"}},
		},
		{
			name:  "a VRID far from ours is only noted",
			heard: []Heard{foreign(200, "198.18.0.50")}, want: []uint8{11, 12, 13, 14, 15, 16},
			findings: []Finding{{VRID: 200, From: addrs("198.18.0.50"), Action: "unused"}},
		},
		{
			name:  "the pool's own group heard on the link keeps its VRID",
			heard: []Heard{ours(1, 40, "198.18.0.12"), foreign(11, "198.18.0.50")}, want: []uint8{12, 40, 13, 14, 15, 16},
			findings: []Finding{{VRID: 11, From: addrs("198.18.0.50"), Action: "avoided"}},
		},
		{
			name:  "the pool runs on a VRID a foreign router also speaks: keep it, report the conflict",
			heard: []Heard{ours(0, 11, "198.18.0.12"), foreign(11, "198.18.0.50")}, want: []uint8{11, 12, 13, 14, 15, 16},
			findings: []Finding{{VRID: 11, From: addrs("198.18.0.50"), Action: "conflict", Group: "OpenShift_IPFailover_VIP_1"}},
		},
		{
			name: "the pool's groups heard on their VRIDs: a foreign VRID between them was still avoided",
			heard: []Heard{ours(0, 11, "198.18.0.12"), ours(1, 13, "198.18.0.12"), ours(2, 14, "198.18.0.12"), ours(3, 15, "198.18.0.12"),
				ours(4, 16, "198.18.0.12"), ours(5, 17, "198.18.0.12"), foreign(12, "198.18.0.50")},
			want:     []uint8{11, 13, 14, 15, 16, 17},
			findings: []Finding{{VRID: 12, From: addrs("198.18.0.50"), Action: "avoided"}},
		},
		{
			name:  "packets from the pool's known nodes are never foreign",
			heard: []Heard{foreign(11, "198.18.0.12")}, members: []string{"198.18.0.11", "198.18.0.12"},
			want: []uint8{11, 12, 13, 14, 15, 16},
		},
		{
			// Before: the finding said only "avoided", and nothing told
			// that these VIPs are now held on two VRIDs at once.
			name:  "the pool's VIPs in a layout of other settings: avoided as before, and the VIPs named",
			heard: []Heard{otherLayout(11, "198.18.0.12")}, want: []uint8{12, 13, 14, 15, 16, 17},
			findings: []Finding{{VRID: 11, From: addrs("198.18.0.12"), Action: "avoided", VIPs: addrs("10.1.0.1", "10.1.0.3", "10.1.0.5", "10.1.0.7", "10.1.0.9")}},
		},
		{
			// Before: nothing at all was reported (a known node is never
			// foreign), though VRID 11 then carries two address lists.
			name:  "a known node running other settings: reported as a conflict with the VIPs named",
			heard: []Heard{otherLayout(11, "198.18.0.12")}, members: []string{"198.18.0.11", "198.18.0.12"},
			want:     []uint8{11, 12, 13, 14, 15, 16},
			findings: []Finding{{VRID: 11, From: addrs("198.18.0.12"), Action: "conflict", Group: "OpenShift_IPFailover_VIP_1", VIPs: addrs("10.1.0.1", "10.1.0.3", "10.1.0.5", "10.1.0.7", "10.1.0.9")}},
		},
		{
			name: "the search wraps around below the offset",
			spec: func(s *Spec) { s.VRIDOffset = 251 }, heard: []Heard{foreign(253, "198.18.0.50")},
			want:     []uint8{252, 254, 255, 1, 2, 3},
			findings: []Finding{{VRID: 253, From: addrs("198.18.0.50"), Action: "avoided"}},
		},
		{
			name: "a fixed offset does not wrap", spec: func(s *Spec) { s.VRIDOffset, s.OffsetFixed = 251, true },
			wantErr: "6 groups need 6 VRIDs, but only 4 are free (OPENSHIFT_HA_VRRP_ID_OFFSET 251, 0 excluded VRIDs): lower OPENSHIFT_HA_VIP_GROUPS",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := specWith(10, 0)
			if tc.spec != nil {
				tc.spec(s)
			}
			p := NewPlan(s, 3)
			findings, err := AssignVRIDs(p, s, tc.heard, addrs(tc.members...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("AssignVRIDs error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []uint8
			for _, g := range p.Groups {
				got = append(got, g.VRID)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("VRIDs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.findings, findings, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindingStringNamesPoolVIPs(t *testing.T) {
	f := Finding{VRID: 11, From: addrs("198.18.0.12"), Action: "avoided", VIPs: addrs("10.1.0.1", "10.1.0.3", "10.1.0.5", "10.1.0.7", "10.1.0.9", "10.1.0.11")}
	got := f.String()
	for _, want := range []string{
		"VRID 11 is spoken on the link by 198.18.0.12, not by this pool: avoided",
		"it carries 6 of this pool's VIPs (10.1.0.1, 10.1.0.3, 10.1.0.5, 10.1.0.7, 10.1.0.9, ...)",
		"held twice",
		EnvVirtualIPs, EnvVIPGroups, EnvReplicaCount, EnvUnicastPeers,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Finding.String() = %q\nwant it to contain %q", got, want)
		}
	}
}
