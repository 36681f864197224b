package ipfailover

import (
	"fmt"
	"strings"
	"testing"
)

// TestValueLimit checks that a value of MaxValueLen bytes is read and one
// byte more is refused, naming the variable or flag, the length and the
// limit, without echoing the value.
func TestValueLimit(t *testing.T) {
	vips := func(n int) string { // a valid VIP list of n bytes
		return "10.1.1.1" + strings.Repeat(" ", n-len("10.1.1.1"))
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		flags map[string]string
		want  string // "" = accepted
	}{
		{name: "VIPs at the limit", env: map[string]string{EnvVirtualIPs: vips(MaxValueLen)}},
		{name: "VIPs past the limit", env: map[string]string{EnvVirtualIPs: vips(MaxValueLen + 1)},
			want: fmt.Sprintf("OPENSHIFT_HA_VIRTUAL_IPS: the value is %d bytes, more than the %d accepted", MaxValueLen+1, MaxValueLen)},
		{name: "flag past the limit", env: map[string]string{EnvVirtualIPs: "10.1.1.1"}, flags: map[string]string{EnvCheckScript: "/" + strings.Repeat("a", MaxValueLen)},
			want: fmt.Sprintf("--check-script: the value is %d bytes, more than the %d accepted", MaxValueLen+1, MaxValueLen)},
		{name: "unknown variable past the limit", env: map[string]string{EnvVirtualIPs: "10.1.1.1", "OPENSHIFT_HA_X": strings.Repeat("a", MaxValueLen+1)},
			want: fmt.Sprintf("OPENSHIFT_HA_X: the value is %d bytes, more than the %d accepted", MaxValueLen+1, MaxValueLen)},
		{name: "variables of other families are not looked at", env: map[string]string{EnvVirtualIPs: "10.1.1.1", "PATH": strings.Repeat("a", MaxValueLen+1)}},
		{name: "config name ending in a backslash", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvConfigName: `pool\`},
			want: `OPENSHIFT_HA_CONFIG_NAME="pool\\": want a name with at least one letter, digit, '-' or '_' and no double quotes, newlines or trailing backslash`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(Input{Env: tc.env, Flags: tc.flags})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted; want %q", tc.want)
			case tc.want != "" && err.Error() != tc.want:
				if len(err.Error()) > 1000 {
					t.Fatalf("error of %d bytes (the value echoed?); want %q", len(err.Error()), tc.want)
				}
				t.Fatalf("error:\n%v\nwant:\n%s", err, tc.want)
			}
		})
	}
}

// TestRenderQuoting checks that a config name and script lines with
// backslashes reach the engine as written: auth_pass is literal text,
// script lines are split like a shell.
func TestRenderQuoting(t *testing.T) {
	s, err := Parse(Input{Env: map[string]string{
		EnvVirtualIPs: "10.1.1.1", EnvConfigName: `a\b é`,
		EnvCheckScript: `/bin/chk a\ b 'c d' \\x`, EnvNotifyScript: `/bin/n \t`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlan(s, 1)
	if _, err := AssignVRIDs(p, s, nil, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := p.Keepalived(s, Node{Interface: "eth0", Address: addrs("10.1.1.10")[0], Version: 2, AdvertInterval: 1e9}, nil, "q.conf")
	if err != nil {
		t.Fatal(err)
	}
	in := cfg.Instances[0]
	got := []string{in.AuthPass, in.Notifies().Any, strings.Join(cfg.Scripts[CheckName(s)].Args, "|")}
	want := []string{`a\b é`, `/bin/n \t`, `/bin/chk|a b|c d|\x`}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("read back %q; want %q", got[i], want[i])
		}
	}
}
