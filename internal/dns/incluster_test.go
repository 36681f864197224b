package dns

import (
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCheckPortable: a kubernetes block that takes its API server from its
// pod is checked in full outside a pod and reported as a warning with its
// line; its mistakes are still errors, with their own lines; Start outside
// a pod fails and names the line and what would run it.
func TestCheckPortable(t *testing.T) {
	if why := notInPod(); why == "" {
		t.Skip("this test process runs in a pod, where kubernetes blocks need no endpoint")
	}
	tests := []struct {
		name     string
		corefile string
		warnings []string // regexps, one per warning
		err      string   // regexp; "" means none
	}{
		{
			name: "block without endpoint",
			corefile: ".:0 {\n    bind 127.0.0.1\n    kubernetes cluster.local in-addr.arpa { # the cluster\n" +
				"        pods insecure\n        fallthrough in-addr.arpa\n        ttl 30\n    }\n    forward . 198.18.0.1\n}\n",
			warnings: []string{`^Corefile:3: kubernetes names no endpoint or kubeconfig, .*in-cluster configuration.*: the block is valid, but starting this Corefile here would fail$`},
		},
		{
			name:     "line without block",
			corefile: ".:0 {\n    bind 127.0.0.1\n    kubernetes cluster.local\n}\n",
			warnings: []string{`^Corefile:3: kubernetes names no endpoint`},
		},
		{
			name:     "mistake after the amended line keeps its line",
			corefile: ".:0 {\n    bind 127.0.0.1\n    kubernetes cluster.local {\n        pods insecure\n        upstream\n    }\n}\n",
			err:      `Corefile:5 .*unknown property 'upstream'`,
		},
		{
			name:     "bad value",
			corefile: ".:0 {\n    bind 127.0.0.1\n    kubernetes cluster.local {\n        pods nosuch\n    }\n}\n",
			err:      `plugin/kubernetes: wrong value for pods: nosuch`,
		},
		{
			name:     "own endpoint",
			corefile: ".:0 {\n    bind 127.0.0.1\n    kubernetes cluster.local {\n        endpoint https://198.18.0.1:6443\n    }\n}\n",
		},
		{
			name:     "another plugin's mistake is an error",
			corefile: ".:0 {\n    bind 127.0.0.1\n    kubernetes cluster.local\n    loadbalance nosuch\n}\n",
			err:      `Corefile:4 .*unknown property 'nosuch'|loadbalance.*nosuch`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warnings, err := srv.CheckPortable(Corefile{Contents: []byte(tt.corefile)})
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("CheckPortable: %v", err)
			case tt.err != "" && (err == nil || !regexp.MustCompile(tt.err).MatchString(err.Error())):
				t.Fatalf("CheckPortable: error %v, want one matching %q", err, tt.err)
			}
			if len(warnings) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %d matching %q", warnings, len(tt.warnings), tt.warnings)
			}
			for i, w := range tt.warnings {
				if !regexp.MustCompile(w).MatchString(warnings[i]) {
					t.Errorf("warning %q does not match %q", warnings[i], w)
				}
			}
			// Check stays strict: it sets up the block as Start would.
			if len(tt.warnings) > 0 {
				if err := srv.Check(Corefile{Contents: []byte(tt.corefile)}); err == nil {
					t.Errorf("Check accepted a kubernetes block that cannot start here")
				}
			}
		})
	}

	err := srv.Start(Corefile{Contents: []byte(tests[0].corefile)})
	if err == nil {
		srv.Stop()
		t.Fatal("Start outside a pod succeeded")
	}
	want := `in-cluster configuration.*; Corefile:3: kubernetes names no endpoint or kubeconfig.*add "endpoint https://HOST:6443" or "kubeconfig FILE \[CONTEXT\]"`
	if !regexp.MustCompile(want).MatchString(err.Error()) {
		t.Errorf("Start: %v\nwant a match for %q", err, want)
	}
}

// TestWithEndpoint: the endpoint goes on the directive's own line, so no
// other line moves; lines it cannot amend safely are left to Check.
func TestWithEndpoint(t *testing.T) {
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{
			name: "block", ok: true,
			in:   ".:53 {\n    kubernetes cluster.local { # c\n        ttl 30\n    }\n}",
			want: ".:53 {\n    kubernetes cluster.local { endpoint https://127.0.0.1:6443 # c\n        ttl 30\n    }\n}",
		},
		{
			name: "no block", ok: true,
			in:   ".:53 {\n    kubernetes cluster.local\n}",
			want: ".:53 {\n    kubernetes cluster.local { endpoint https://127.0.0.1:6443 } \n}",
		},
		{name: "quoted", in: ".:53 {\n    kubernetes \"cluster.local\"\n}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cf := Corefile{Contents: []byte(tt.in)}
			got, ok := withEndpoint(cf, inClusterLines(cf))
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(tt.want, string(got.Contents)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
