package bgpconfig

import "testing"

// TestUnhealthy: a speaker that stopped or whose implementation is wedged
// makes its process not live, the stop named first (a wedge at the start
// is why it stopped); a working one, or none, does not.
func TestUnhealthy(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *SpeakerStatus
		want string
	}{
		{"no speaker", nil, ""},
		{"working", &SpeakerStatus{ASN: 64512, Error: "bgp: ListPeer: GoBGP is not started yet"}, ""},
		{"wedged", &SpeakerStatus{Wedged: "GoBGP's server has not answered ListPeer since 2026-12-03T12:00:00Z (12s): it is wedged"},
			"bgp: GoBGP's server has not answered ListPeer since 2026-12-03T12:00:00Z (12s): it is wedged"},
		{"stopped and wedged", &SpeakerStatus{Wedged: "GoBGP's server has not answered AddPeer 198.18.1.1 since ...", Stopped: "bgp: peer 198.18.1.1: bgp: AddPeer 198.18.1.1: GoBGP did not answer within 10s"},
			"bgp: the speaker stopped: bgp: peer 198.18.1.1: bgp: AddPeer 198.18.1.1: GoBGP did not answer within 10s"},
	} {
		if got := tc.s.Unhealthy(); got != tc.want {
			t.Errorf("%s: Unhealthy = %q, want %q", tc.name, got, tc.want)
		}
	}
}
