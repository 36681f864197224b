package sched

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestForVRRP checks keepalived 2.2.7's rules, measured on its VRRP child
// (/proc/PID/limits, chrt -p, field 19 of /proc/PID/stat):
//
//	vrrp_rt_priority 50                          SCHED_RR 50, RLIMIT_RTTIME 5000/10000 us
//	vrrp_rt_priority 50, vrrp_rlimit_rttime 100000   RLIMIT_RTTIME 50000/100000 us
//	vrrp_rt_priority 50, vrrp_rlimit_rttime 1    RLIMIT_RTTIME 1/2 us
//	vrrp_rt_priority 50, vrrp_priority -5        nice 0
//	vrrp_priority -5                             SCHED_OTHER nice -5, RLIMIT_RTTIME unlimited
//	vrrp_rlimit_rttime 30000, vrrp_no_swap       RLIMIT_RTTIME unlimited, memory locked
func TestForVRRP(t *testing.T) {
	tests := []struct {
		name             string
		rt, nice, rlimit int
		noSwap           bool
		want             Tuning
		wantSoft         int
	}{
		{name: "nothing set", want: Tuning{}},
		{name: "realtime priority: keepalived's default limit", rt: 50, want: Tuning{RTPriority: 50, RLimitRTTime: 10000}, wantSoft: 5000},
		{name: "realtime priority and a limit", rt: 50, rlimit: 100000, want: Tuning{RTPriority: 50, RLimitRTTime: 100000}, wantSoft: 50000},
		{name: "a limit of 1 us is 2 us", rt: 50, rlimit: 1, want: Tuning{RTPriority: 50, RLimitRTTime: 2}, wantSoft: 1},
		{name: "nice is ignored under a realtime priority", rt: 50, nice: -5, want: Tuning{RTPriority: 50, RLimitRTTime: 10000}, wantSoft: 5000},
		{name: "nice alone", nice: -5, want: Tuning{Nice: -5}},
		{name: "a limit without realtime priority is not set", rlimit: 30000, noSwap: true, want: Tuning{NoSwap: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ForVRRP(tt.rt, tt.nice, tt.noSwap, tt.rlimit)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ForVRRP(%d, %d, %v, %d) (-want +got):\n%s", tt.rt, tt.nice, tt.noSwap, tt.rlimit, diff)
			}
			if got.RLimitRTTime > 0 && softRTTime(got.RLimitRTTime) != tt.wantSoft {
				t.Errorf("soft limit of %d us = %d us, want %d", got.RLimitRTTime, softRTTime(got.RLimitRTTime), tt.wantSoft)
			}
		})
	}
}
