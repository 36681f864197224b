package manifest

import (
	"bytes"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vipstack/vipstack/internal/ipfailover"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const testImage = "ghcr.io/vipstack/vipstack:v0.0.0-test"

// withDefaults returns oc's defaults with vars over them, as the command
// line gives them.
func withDefaults(vars map[string]string) map[string]string {
	out := IPFailoverDefaults()
	for k, v := range vars {
		out[k] = v
	}
	return out
}

// goldenCase is a flag set and the format it is printed in.
type goldenCase struct {
	name   string
	in     IPFailover
	format string
}

// goldenCases are flag sets of `oc adm ipfailover` and vipstack's.
func goldenCases() []goldenCase {
	return []goldenCase{
		{
			name: "defaults",
			in: IPFailover{Name: "ipfailover", Image: testImage, ServiceAccount: DefaultServiceAccount, StatusPort: StatusPortAuto,
				Vars: withDefaults(map[string]string{ipfailover.EnvVirtualIPs: "198.18.0.100-104"})},
			format: FormatYAML,
		},
		{
			// The example of oc adm ipfailover's help, with every flag of
			// the pool that oc has.
			name: "oc example all flags",
			in: IPFailover{Name: "ipf-ha-router", Namespace: "routers", Image: testImage, Selector: "router=us-west-ha,zone=a",
				ServiceAccount: "ipf-sa", StatusPort: StatusPortAuto,
				Vars: withDefaults(map[string]string{
					ipfailover.EnvVirtualIPs:    "198.18.1.4,198.18.1.100-104,198.18.2.8",
					ipfailover.EnvMonitorPort:   "443",
					ipfailover.EnvReplicaCount:  "4",
					ipfailover.EnvVIPGroups:     "7",
					ipfailover.EnvInterface:     "eth1",
					ipfailover.EnvVRIDOffset:    "30",
					ipfailover.EnvIptablesChain: "OPENSHIFT-INPUT",
					ipfailover.EnvCheckScript:   "/etc/keepalive/check.sh",
					ipfailover.EnvNotifyScript:  "/etc/keepalive/notify.sh",
					ipfailover.EnvCheckInterval: "5",
					ipfailover.EnvPreemption:    "nopreempt",
				})},
			format: FormatYAML,
		},
		{
			// vipstack's own settings; no ServiceAccount object, no status
			// port, no firewall chain; IPv6.
			name: "unicast ipv6 json",
			in: IPFailover{Name: "v6pool", Image: testImage, ServiceAccount: "default", StatusPort: 0,
				Vars: withDefaults(map[string]string{
					ipfailover.EnvVirtualIPs:    "fd00::1f39-1f3b",
					ipfailover.EnvReplicaCount:  "2",
					ipfailover.EnvUnicastPeers:  "fd00::11,fd00::12",
					ipfailover.EnvUseUnicast:    "true",
					ipfailover.EnvMonitorPort:   "0",
					ipfailover.EnvIptablesChain: "",
					ipfailover.EnvExcludedVRIDs: "11,12",
				})},
			format: FormatJSON,
		},
	}
}

// encodeCase builds a golden case's objects and prints them in its
// format, as the command does.
func encodeCase(t *testing.T, tc goldenCase) (*IPFailoverObjects, []byte) {
	t.Helper()
	objs, err := NewIPFailover(tc.in)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Encode(&b, objs.Objects(), tc.format); err != nil {
		t.Fatal(err)
	}
	return objs, b.Bytes()
}

func TestIPFailoverGolden(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			_, b := encodeCase(t, tc)
			goldenFile(t, b)
		})
	}
}

// TestIPFailoverRoundTrip reads the printed Deployment back and runs its
// environment through the parser `vipstack ipfailover` runs on a pod's
// environment: the pool configuration must be the one the flags gave, and
// the Deployment's other settings must follow from it.
func TestIPFailoverRoundTrip(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			_, b := encodeCase(t, tc)
			d := decodeDeployment(t, b, tc.format)
			if len(d.Spec.Template.Spec.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(d.Spec.Template.Spec.Containers))
			}
			c := d.Spec.Template.Spec.Containers[0]
			env := map[string]string{}
			for _, e := range c.Env {
				if _, dup := env[e.Name]; dup {
					t.Errorf("%s is set twice", e.Name)
				}
				env[e.Name] = e.Value
			}
			fromPod, err := ipfailover.Parse(ipfailover.Input{Env: env})
			if err != nil {
				t.Fatalf("vipstack ipfailover refuses the printed environment: %v", err)
			}
			flags := map[string]string{ipfailover.EnvConfigName: tc.in.Name}
			for k, v := range tc.in.Vars {
				flags[k] = v
			}
			fromFlags, err := ipfailover.Parse(ipfailover.Input{Flags: flags})
			if err != nil {
				t.Fatal(err)
			}
			// Warnings name their source (a flag or a variable).
			if diff := cmp.Diff(fromFlags, fromPod, cmpopts.IgnoreFields(ipfailover.Spec{}, "Warnings"), cmpopts.IgnoreUnexported(ipfailover.Spec{}), cmpopts.EquateEmpty(), cmpopts.EquateComparable(netip.Addr{})); diff != "" {
				t.Errorf("configuration from the flags (-) and from the pod's environment (+):\n%s", diff)
			}
			if len(fromFlags.Warnings) != len(fromPod.Warnings) {
				t.Errorf("warnings from the flags %q, from the pod %q", fromFlags.Warnings, fromPod.Warnings)
			}
			if got := int(*d.Spec.Replicas); got != fromPod.ReplicaCount {
				t.Errorf("replicas %d, but the pods read %s=%d", got, ipfailover.EnvReplicaCount, fromPod.ReplicaCount)
			}
			if len(c.Command) != 0 || len(c.Args) == 0 || c.Args[0] != "ipfailover" {
				t.Errorf("command %q args %q: want no command (the image's entrypoint is /vipstack) and args starting with ipfailover", c.Command, c.Args)
			}
			if !d.Spec.Template.Spec.HostNetwork {
				t.Error("not on the host network")
			}
			sc := c.SecurityContext
			if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.Capabilities == nil ||
				!cmp.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_ADMIN", "NET_RAW"}) || !cmp.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				t.Errorf("securityContext %+v: want unprivileged, capabilities ALL dropped but NET_ADMIN and NET_RAW", sc)
			}
			port := tc.in.StatusPort
			if port == StatusPortAuto {
				port = ServicePortBase + fromPod.VRIDOffset
			}
			statusArg := ""
			for _, a := range c.Args {
				if v, ok := strings.CutPrefix(a, "--status-addr="); ok {
					statusArg = v
				}
			}
			switch {
			case port == 0 && (statusArg != "" || c.LivenessProbe != nil || len(c.Ports) != 0):
				t.Errorf("status port 0, but args %q, probe %v, ports %v", c.Args, c.LivenessProbe, c.Ports)
			case port != 0 && statusArg != "127.0.0.1:"+strconv.Itoa(port):
				t.Errorf("--status-addr=%q, want 127.0.0.1:%d", statusArg, port)
			case port != 0 && (c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Port.IntValue() != port || c.LivenessProbe.HTTPGet.Host != "127.0.0.1"):
				t.Errorf("liveness probe %+v: want GET 127.0.0.1:%d/status", c.LivenessProbe, port)
			case port != 0 && (len(c.Ports) != 1 || int(c.Ports[0].HostPort) != port):
				t.Errorf("ports %+v: want host port %d", c.Ports, port)
			}
		})
	}
}

// decodeDeployment finds the Deployment in the printed output; a field
// the Deployment type does not have is an error.
func decodeDeployment(t *testing.T, b []byte, format string) *appsv1.Deployment {
	t.Helper()
	for _, u := range decodeObjects(t, b, format) {
		if u.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, &d, true); err != nil {
			t.Fatalf("decode Deployment: %v", err)
		}
		return &d
	}
	t.Fatalf("no Deployment in:\n%s", b)
	return nil
}

func TestIPFailoverRejects(t *testing.T) {
	good := func() IPFailover {
		return IPFailover{Name: "ipf", Image: testImage, ServiceAccount: DefaultServiceAccount, StatusPort: StatusPortAuto,
			Vars: withDefaults(map[string]string{ipfailover.EnvVirtualIPs: "198.18.0.100-104"})}
	}
	with := func(f func(*IPFailover)) IPFailover { in := good(); f(&in); return in }
	setVar := func(k, v string) IPFailover { return with(func(in *IPFailover) { in.Vars[k] = v }) }
	for _, tc := range []struct {
		name string
		in   IPFailover
		want []string // every one must be in the error
	}{
		{name: "name upper case", in: with(func(in *IPFailover) { in.Name = "IPF" }), want: []string{`NAME "IPF": want a DNS-1123 label`}},
		{name: "namespace", in: with(func(in *IPFailover) { in.Namespace = "a_b" }), want: []string{`--namespace "a_b": want a namespace name`}},
		{name: "image empty", in: with(func(in *IPFailover) { in.Image = "" }), want: []string{`--image "": want an image reference`}},
		{name: "selector not equality", in: with(func(in *IPFailover) { in.Selector = "router!=a" }), want: []string{`--selector "router!=a": want node labels as key=value pairs`}},
		{name: "service account", in: with(func(in *IPFailover) { in.ServiceAccount = "Bad SA" }), want: []string{`--service-account "Bad SA": want a ServiceAccount name`}},
		{name: "status port", in: with(func(in *IPFailover) { in.StatusPort = 70000 }), want: []string{`--status-port "70000": want a TCP port from 1 to 65535`}},
		{name: "status port is the monitor port", in: with(func(in *IPFailover) { in.StatusPort = 80 }), want: []string{`--status-port "80": want a port other than --watch-port 80`}},
		{name: "VIP range backwards", in: setVar(ipfailover.EnvVirtualIPs, "198.18.0.10-5"), want: []string{`--virtual-ips="198.18.0.10-5"`}},
		{name: "VIPs missing", in: setVar(ipfailover.EnvVirtualIPs, ""), want: []string{"--virtual-ips is required"}},
		{name: "replicas 0", in: setVar(ipfailover.EnvReplicaCount, "0"), want: []string{`--replicas "0": want a number of pods from 1 to 200`}},
		{name: "replicas negative", in: setVar(ipfailover.EnvReplicaCount, "-1"), want: []string{`--replicas="-1": want a number of nodes`}},
		{name: "watch port", in: setVar(ipfailover.EnvMonitorPort, "65536"), want: []string{`--watch-port="65536": want a TCP port number`}},
		{name: "offset out of range", in: setVar(ipfailover.EnvVRIDOffset, "255"), want: []string{`--vrrp-id-offset="255": want a VRID offset from 0 to 254`}},
		// 5 VIPs in 5 groups need VRIDs 251..255; from 252 there are 4.
		{name: "offset too high for the groups", in: with(func(in *IPFailover) {
			in.Vars[ipfailover.EnvVRIDOffset] = "251"
			in.Vars[ipfailover.EnvVIPGroups] = "5"
		}), want: []string{"--vrrp-id-offset 251", "5 groups need 5 VRIDs, but only 4 are free"}},
		{name: "preemption", in: setVar(ipfailover.EnvPreemption, "preempt_delay 2000"), want: []string{`--preemption-strategy="preempt_delay 2000": want nopreempt, preempt, or preempt_delay SECONDS`}},
		{name: "check script relative", in: setVar(ipfailover.EnvCheckScript, "check.sh"), want: []string{`--check-script="check.sh": want the full path`}},
		{name: "check interval", in: setVar(ipfailover.EnvCheckInterval, "0"), want: []string{`--check-interval="0": want seconds between checks`}},
		{name: "iptables chain", in: setVar(ipfailover.EnvIptablesChain, "IN PUT"), want: []string{`--iptables-chain="IN PUT": want a chain name`}},
		{name: "unicast without peers", in: setVar(ipfailover.EnvUseUnicast, "true"), want: []string{"--use-unicast=true needs --unicast-peers"}},
		{name: "peers and replicas disagree", in: setVar(ipfailover.EnvUnicastPeers, "198.18.0.11,198.18.0.12"), want: []string{"--unicast-peers lists 2 nodes but --replicas is 1"}},
		{name: "config name as a setting", in: setVar(ipfailover.EnvConfigName, "x"), want: []string{"OPENSHIFT_HA_CONFIG_NAME is the pool's NAME"}},
		{name: "all at once", in: with(func(in *IPFailover) {
			in.Name = "A"
			in.Vars[ipfailover.EnvMonitorPort] = "x"
			in.Vars[ipfailover.EnvVirtualIPs] = "banana"
		}), want: []string{`NAME "A"`, `--watch-port="x"`, `--virtual-ips="banana"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := NewIPFailover(tc.in)
			if err == nil {
				t.Fatalf("accepted: %+v", objs.Deployment.Spec.Template.Spec.Containers[0].Env)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestEncodeFormat(t *testing.T) {
	if err := Encode(&bytes.Buffer{}, nil, "table"); err == nil || !strings.Contains(err.Error(), `output format "table": want yaml or json`) {
		t.Errorf("Encode(table) = %v, want the format refused", err)
	}
}

// goldenFile compares got with testdata/<test name>.golden, or rewrites it
// with -update.
func goldenFile(t *testing.T, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}
