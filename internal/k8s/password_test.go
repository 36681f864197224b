package k8s

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestPasswordSecretName: the copy's name is a valid Secret name, the
// same for the same group, and different for different groups, even
// where joining with '-' would make them meet, and when cut to length.
func TestPasswordSecretName(t *testing.T) {
	long := strings.Repeat("a", 253)
	longNS := strings.Repeat("n", 63)
	tests := []struct {
		name string
		g    GroupRef
		want string // "": only checked for validity and length
	}{
		{name: "short", g: GroupRef{"infra", "secured"}, want: "vipstack-vrrp-infra.secured"},
		{name: "dashes, namespace side", g: GroupRef{"a-b", "c"}, want: "vipstack-vrrp-a-b.c"},
		{name: "dashes, name side", g: GroupRef{"a", "b-c"}, want: "vipstack-vrrp-a.b-c"},
		{name: "dotted name", g: GroupRef{"infra", "edge.v1"}, want: "vipstack-vrrp-infra.edge.v1"},
		{name: "longest name", g: GroupRef{longNS, long}},
		{name: "longest name, other namespace", g: GroupRef{longNS[:62] + "m", long}},
		{name: "cut at a dot", g: GroupRef{longNS, strings.Repeat("b", 160) + "." + strings.Repeat("c", 92)}},
		{name: "cut at a dash", g: GroupRef{longNS, strings.Repeat("b", 160) + "-" + strings.Repeat("c", 92)}},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PasswordSecretName(tt.g)
			if tt.want != "" && got != tt.want {
				t.Errorf("PasswordSecretName(%v) = %q, want %q", tt.g, got, tt.want)
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("PasswordSecretName(%v) = %q: not a Secret name: %v", tt.g, got, errs)
			}
			if !strings.HasPrefix(got, "vipstack-vrrp-") {
				t.Errorf("PasswordSecretName(%v) = %q: want the prefix vipstack-vrrp-", tt.g, got)
			}
			if again := PasswordSecretName(tt.g); again != got {
				t.Errorf("PasswordSecretName(%v) is %q, then %q", tt.g, got, again)
			}
			if other, dup := seen[got]; dup {
				t.Errorf("PasswordSecretName(%v) = %q, as for %s", tt.g, got, other)
			}
			seen[got] = tt.g.String()
		})
	}
}
