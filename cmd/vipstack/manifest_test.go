package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestManifestIPFailoverArguments(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  string
		wantNot  []string // in neither stdout nor stderr
	}{
		{name: "no kind", args: []string{"manifest"}, wantCode: 2, wantErr: "want the kind of manifest to print: ipfailover"},
		{name: "help lists the flags", args: []string{"manifest", "-h"}, wantCode: 0, wantErr: "-virtual-ips"},
		{name: "VIPs required", args: []string{"manifest", "ipfailover"}, wantCode: 2, wantErr: "--virtual-ips is required"},
		// oc's order: NAME first, then flags; and flags around NAME.
		{name: "NAME before the flags", args: []string{"manifest", "ipfailover", "ipf-west", "--virtual-ips=198.18.0.100-104", "-r", "2", "-l", "router=us-west-ha"},
			wantOut: []string{"name: ipf-west\n", "value: 198.18.0.100-104\n", "replicas: 2\n", "router: us-west-ha\n", "kind: ServiceAccount\n", "name: ipfailover\n"}},
		{name: "NAME between flags", args: []string{"manifest", "ipfailover", "-w", "8080", "ipf-east", "--virtual-ips", "198.18.0.100", "--service-account", "default"},
			wantOut: []string{"name: ipf-east\n", "value: \"8080\"\n"}},
		{name: "two names", args: []string{"manifest", "ipfailover", "a", "--virtual-ips", "198.18.0.100", "b"}, wantCode: 2, wantErr: `want at most one argument (the pool's NAME), got ["a" "b"]`},
		{name: "oc's --create refused", args: []string{"manifest", "ipfailover", "--virtual-ips", "198.18.0.100", "--create"}, wantCode: 2,
			wantErr: "--create=true: not supported: this command prints the objects; create them with: vipstack manifest ipfailover ... | kubectl apply -f -"},
		{name: "oc's --images refused", args: []string{"manifest", "ipfailover", "--virtual-ips", "198.18.0.100", "--images", "repo/${component}:v3"}, wantCode: 2,
			wantErr: "--images=repo/${component}:v3: not supported: give the whole image reference with --image"},
		{name: "bad output", args: []string{"manifest", "ipfailover", "--virtual-ips", "198.18.0.100", "-o", "wide"}, wantCode: 2, wantErr: `--output "wide": want yaml or json`},
		{name: "bad replicas", args: []string{"manifest", "ipfailover", "--virtual-ips", "198.18.0.100", "--replicas", "0"}, wantCode: 2, wantErr: `--replicas "0": want a number of pods from 1`},
		{name: "image and namespace", args: []string{"manifest", "ipfailover", "--virtual-ips", "198.18.0.100", "--image", "registry.example/vipstack:v1", "-n", "ha"},
			wantOut: []string{"image: registry.example/vipstack:v1\n", "namespace: ha\n"}},
		{name: "a warning goes to stderr", args: []string{"manifest", "ipfailover", "--virtual-ips", "198.18.0.100-101", "--virtual-ip-groups", "5"},
			wantOut: []string{"kind: Deployment\n"}, wantErr: "warning: --virtual-ip-groups=5: more groups than the 2 VIPs"},
		// The generator's VRRP defaults (iptables chain, preemption) stay
		// out of a BGP pool; a VRRP setting given is warned about.
		{name: "BGP pool", args: []string{"manifest", "ipfailover", "--virtual-ips", "198.19.1.1-2", "--bgp-asn", "64512", "--bgp-peers", "198.18.1.1,198.18.2.1",
			"--bgp-peer-asn", "64500", "-r", "2", "--use-unicast", "false"},
			wantOut: []string{"name: OPENSHIFT_HA_BGP_ASN\n          value: \"64512\"\n", "name: OPENSHIFT_HA_BGP_PEERS\n          value: 198.18.1.1,198.18.2.1\n", "replicas: 2\n"},
			wantErr: "warning: --use-unicast has no effect with --bgp-asn: the VIPs are announced by BGP, no VRRP runs",
			wantNot: []string{"OPENSHIFT_HA_IPTABLES_CHAIN", "OPENSHIFT_HA_PREEMPTION", "--iptables-chain", "--preemption-strategy", "--replicas has"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != tc.wantCode || !strings.Contains(errb.String(), tc.wantErr) {
				t.Fatalf("run(%q) = %d\nstdout: %s\nstderr: %s\nwant code %d, stderr containing %q", tc.args, code, out.String(), errb.String(), tc.wantCode, tc.wantErr)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout does not contain %q:\n%s", w, out.String())
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(out.String()+errb.String(), w) {
					t.Errorf("output contains %q:\n%s\n%s", w, out.String(), errb.String())
				}
			}
		})
	}
}

func TestManifestIPFailoverJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"manifest", "ipfailover", "--virtual-ips", "198.18.0.100", "-o", "json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Kind string `json:"kind"`
		} `json:"items"`
	}
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if list.Kind != "List" || len(list.Items) != 2 || list.Items[0].Kind != "ServiceAccount" || list.Items[1].Kind != "Deployment" {
		t.Errorf("got %+v, want a List of a ServiceAccount and a Deployment", list)
	}
}

// TestManifestIPFailoverDocExamples runs every `vipstack manifest
// ipfailover` command line of docs/install.md (up to
// the pipe into kubectl).
func TestManifestIPFailoverDocExamples(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	cur := ""
	for _, line := range strings.Split(string(b), "\n") {
		l := strings.TrimSpace(line)
		if cur == "" && !(strings.HasPrefix(line, "    vipstack manifest ipfailover ") && !strings.Contains(l, "[")) { // not the synopsis
			continue
		}
		if c, ok := strings.CutSuffix(l, `\`); ok {
			cur += c + " "
			continue
		}
		cmds = append(cmds, cur+l)
		cur = ""
	}
	if len(cmds) == 0 {
		t.Fatal("no vipstack manifest ipfailover example in the doc")
	}
	for _, c := range cmds {
		t.Run(c, func(t *testing.T) {
			c, _, _ = strings.Cut(c, "|")
			args := strings.Fields(c)[1:]
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != 0 || !strings.Contains(out.String(), "kind: Deployment") {
				t.Fatalf("exit %d\n%s%s", code, errb.String(), out.String())
			}
		})
	}
}
