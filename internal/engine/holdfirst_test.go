package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/vrrp/fsm"
)

// TestHoldFirst checks that becoming master takes the VIPs before the
// advertisement that makes the old master let go of them (a chaos run saw
// the VIP unheld for the ledger's fsync in the other order), and that
// nothing else is reordered.
func TestHoldFirst(t *testing.T) {
	adv := func(p uint8) fsm.Action { return fsm.Action{Kind: fsm.SendAdvert, Priority: p} }
	to := func(from, to fsm.State) fsm.Action { return fsm.Action{Kind: fsm.Transition, From: from, To: to} }
	tests := []struct {
		name string
		in   []fsm.Action
		want []fsm.Action
	}{
		{name: "become master", in: []fsm.Action{adv(70), to(fsm.Backup, fsm.Master)}, want: []fsm.Action{to(fsm.Backup, fsm.Master), adv(70)}},
		{name: "already first", in: []fsm.Action{to(fsm.Initialize, fsm.Master), adv(255)}, want: []fsm.Action{to(fsm.Initialize, fsm.Master), adv(255)}},
		{name: "leave master: priority 0 first", in: []fsm.Action{adv(0), to(fsm.Master, fsm.Backup)}, want: []fsm.Action{adv(0), to(fsm.Master, fsm.Backup)}},
		{name: "advert only", in: []fsm.Action{adv(100)}, want: []fsm.Action{adv(100)}},
		{name: "another transition before", in: []fsm.Action{to(fsm.Fault, fsm.Backup), adv(9), to(fsm.Backup, fsm.Master)}, want: []fsm.Action{to(fsm.Fault, fsm.Backup), adv(9), to(fsm.Backup, fsm.Master)}},
		{name: "empty", in: nil, want: nil},
		{name: "master gone: the advertisement first, as RFC 5798 orders it",
			in:   []fsm.Action{adv(70), {Kind: fsm.Transition, From: fsm.Backup, To: fsm.Master, MasterGone: true}},
			want: []fsm.Action{adv(70), {Kind: fsm.Transition, From: fsm.Backup, To: fsm.Master, MasterGone: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, holdFirst(tc.in)); d != "" {
				t.Errorf("holdFirst (-want +got):\n%s", d)
			}
		})
	}
}
