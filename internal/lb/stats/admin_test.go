package stats

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAdminStateJSON: a snapshot written as JSON (vipstack node's
// /status) reads back, admin states included.
func TestAdminStateJSON(t *testing.T) {
	in := Snapshot{Backends: []BackendStats{{Name: "be", Servers: []ServerStats{
		{Name: "a", Admin: AdminReady}, {Name: "b", Admin: AdminDrain}, {Name: "c", Admin: AdminMaint},
	}}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"admin":"drain"`) {
		t.Errorf("JSON: %s, want the admin state by name", b)
	}
	var out Snapshot
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("reading back %s: %v", b, err)
	}
	var got []AdminState
	for _, s := range out.Backends[0].Servers {
		got = append(got, s.Admin)
	}
	if diff := cmp.Diff([]AdminState{AdminReady, AdminDrain, AdminMaint}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var bad AdminState
	if err := json.Unmarshal([]byte(`"off"`), &bad); err == nil || !strings.Contains(err.Error(), "expected ready, drain or maint") {
		t.Errorf("unknown state: %v", err)
	}
}
