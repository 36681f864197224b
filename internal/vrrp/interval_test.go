package vrrp

import (
	"testing"
	"time"
)

func TestCheckAdvertInterval(t *testing.T) {
	tests := []struct {
		name    string
		version int
		d       time.Duration
		wantErr string
	}{
		{name: "v2 one second", version: 2, d: time.Second},
		{name: "v2 largest", version: 2, d: 255 * time.Second},
		{name: "v2 zero", version: 2, d: 0,
			wantErr: "advertisement interval 0s is not valid for VRRP version 2 (accepted: whole seconds 1..255)"},
		{name: "v2 fraction", version: 2, d: 1500 * time.Millisecond,
			wantErr: "advertisement interval 1.5s is not valid for VRRP version 2 (accepted: whole seconds 1..255)"},
		{name: "v2 sub-second", version: 2, d: 100 * time.Millisecond,
			wantErr: "advertisement interval 100ms is not valid for VRRP version 2 (accepted: whole seconds 1..255)"},
		{name: "v2 too long", version: 2, d: 256 * time.Second,
			wantErr: "advertisement interval 4m16s is not valid for VRRP version 2 (accepted: whole seconds 1..255)"},
		{name: "v3 smallest", version: 3, d: 10 * time.Millisecond},
		{name: "v3 largest", version: 3, d: 40950 * time.Millisecond},
		{name: "v3 whole seconds", version: 3, d: 3 * time.Second},
		{name: "v3 zero", version: 3, d: 0,
			wantErr: "advertisement interval 0s is not valid for VRRP version 3 (accepted: 0.01..40.95 seconds in steps of 0.01)"},
		{name: "v3 not centiseconds", version: 3, d: 15 * time.Millisecond,
			wantErr: "advertisement interval 15ms is not valid for VRRP version 3 (accepted: 0.01..40.95 seconds in steps of 0.01)"},
		{name: "v3 too long", version: 3, d: 40960 * time.Millisecond,
			wantErr: "advertisement interval 40.96s is not valid for VRRP version 3 (accepted: 0.01..40.95 seconds in steps of 0.01)"},
		{name: "negative", version: 3, d: -10 * time.Millisecond,
			wantErr: "advertisement interval -10ms is not valid for VRRP version 3 (accepted: 0.01..40.95 seconds in steps of 0.01)"},
		{name: "version 4", version: 4, d: time.Second, wantErr: "VRRP version 4 is not valid (accepted: 2 or 3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAdvertInterval(tt.version, tt.d)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("CheckAdvertInterval(%d, %v) = %q, want %q", tt.version, tt.d, got, tt.wantErr)
			}
		})
	}
}
