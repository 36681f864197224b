package render

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/version"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// demoPath is the demo cluster of package cluster, seed 000's layout.
const demoPath = "../cluster/testdata/cluster.yaml"

func demo(t *testing.T) *cluster.Cluster {
	t.Helper()
	c, err := cluster.Load(demoPath)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// parseCluster parses a variant of the demo cluster.
func parseCluster(t *testing.T, yamlText string) *cluster.Cluster {
	t.Helper()
	c, err := cluster.Parse("variant.yaml", []byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// v6Cluster is an IPv6-only cluster with VRRPv3 at 100 ms, multicast, a
// DNS VIP and an upstream on a non-standard port.
const v6Cluster = `name: six
baseDomain: example.com
apiVIPs: ['fd00:bb::5']
ingressVIPs: ['fd00:bb::7']
dnsVIP: 'fd00:bb::6'
machineNetworks: ['fd00:bb::/64']
upstreamDNS: ['[fd00:bb::53]:5353', 'fd00:bb::54']
vrrp: {advertInterval: 100ms, unicast: false, interface: ens3}
ports: {lb: 7443}
nodes:
  - {name: bootstrap, role: bootstrap, ips: ['fd00:bb::10']}
  - {name: m0, role: master, ips: ['fd00:bb::11']}
  - {name: m1, role: master, ips: ['fd00:bb::12']}
  - {name: w0, role: worker, ips: ['fd00:bb::21']}
`

// dualCluster is a dual-stack cluster (IPv4 first): each VIP list holds
// one IPv4 and one IPv6 address, every node one of each.
const dualCluster = `name: dual
baseDomain: example.com
apiVIPs: [198.18.0.5, 'fd00:bb::5']
ingressVIPs: [198.18.0.7, 'fd00:bb::7']
machineNetworks: [198.18.0.0/24, 'fd00:bb::/64']
upstreamDNS: [198.18.0.53]
nodes:
  - {name: bootstrap, role: bootstrap, ips: [198.18.0.10, 'fd00:bb::10']}
  - {name: m0, role: master, ips: [198.18.0.11, 'fd00:bb::11']}
  - {name: m1, role: master, ips: [198.18.0.12, 'fd00:bb::12']}
  - {name: w0, role: worker, ips: [198.18.0.21, 'fd00:bb::21']}
`

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

// bundle concatenates files in path order, each under a header line.
func bundle(files map[string][]byte) []byte {
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		b.WriteString("=== " + n + "\n")
		b.Write(files[n])
	}
	return b.Bytes()
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster string // "" for the demo cluster
		node    string
		opts    Options
		want    []string
	}{{
		name: "bootstrap", node: "bootstrap", opts: Options{Interface: "eth0"},
		want: []string{CorefilePath, KeepalivedConfPath, CoreDNSPodPath, KeepalivedPodPath, VipstackPodPath},
	}, {
		name: "master-0", node: "master-0", opts: Options{Interface: "eth0"},
		want: []string{CorefilePath, HAProxyCfgPath, KeepalivedConfPath, CoreDNSPodPath, HAProxyPodPath, KeepalivedPodPath, VipstackPodPath},
	}, {
		name: "worker-0", node: "worker-0", opts: Options{Interface: "eth0"},
		want: []string{CorefilePath, KeepalivedConfPath, CoreDNSPodPath, KeepalivedPodPath, VipstackPodPath},
	}, {
		name: "ipv6 master with options", cluster: v6Cluster, node: "m1",
		opts: Options{Image: "registry.example.com/vipstack:v1.2.3", KeepalivedImage: "k:1", HAProxyImage: "h:2",
			CoreDNSImage: "c:3", Namespace: "infra", ConfigPath: "/etc/vs/c.yaml", StatusPort: 9999},
		want: []string{CorefilePath, HAProxyCfgPath, KeepalivedConfPath, CoreDNSPodPath, HAProxyPodPath, KeepalivedPodPath, VipstackPodPath},
	}, {
		name: "dual-stack master", cluster: dualCluster, node: "m0", opts: Options{Interface: "eth0"},
		want: []string{CorefilePath, HAProxyCfgPath, KeepalivedConfPath, CoreDNSPodPath, HAProxyPodPath, KeepalivedPodPath, VipstackPodPath},
	}, {
		name: "no upstream", node: "worker-0", opts: Options{NoUpstream: true},
		want: []string{VipstackPodPath},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := demo(t)
			if tc.cluster != "" {
				c = parseCluster(t, tc.cluster)
			}
			files, err := Files(c, tc.node, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, keys(files)); diff != "" {
				t.Errorf("rendered files (-want +got):\n%s", diff)
			}
			again, err := Files(c, tc.node, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(bundle(files), bundle(again)) {
				t.Error("two renders of the same input differ")
			}
			for name, data := range files {
				if strings.HasSuffix(name, ".yaml") {
					checkPod(t, name, data)
				}
			}
			// The default image is this build's (version.Image), which
			// changes with every commit: the golden files name it
			// REPOSITORY:VERSION.
			goldenFile(t, bytes.ReplaceAll(bundle(files), []byte(version.Image()), []byte(version.Repository+":VERSION")))
		})
	}
}

// checkPod decodes a rendered manifest as a generic document and checks
// what every static pod must have: valid YAML, a v1 Pod on the host
// network, and, for vipstack's own pod, no privilege but the three
// capabilities.
func checkPod(t *testing.T, name string, data []byte) {
	t.Helper()
	var p struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			HostNetwork bool `yaml:"hostNetwork"`
			Containers  []struct {
				Image           string `yaml:"image"`
				SecurityContext struct {
					Privileged   *bool `yaml:"privileged"`
					Capabilities struct {
						Add  []string `yaml:"add"`
						Drop []string `yaml:"drop"`
					} `yaml:"capabilities"`
				} `yaml:"securityContext"`
			} `yaml:"containers"`
		} `yaml:"spec"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	// The haproxy pod has haproxy and its monitor (vipstack redirect);
	// the others one container.
	want := 1
	if name == HAProxyPodPath {
		want = 2
	}
	if p.APIVersion != "v1" || p.Kind != "Pod" || !p.Spec.HostNetwork || len(p.Spec.Containers) != want || p.Spec.Containers[0].Image == "" {
		t.Errorf("%s: not a host-network v1 Pod with %d container(s): %+v", name, want, p)
	}
	if name == HAProxyPodPath {
		mon := p.Spec.Containers[1].SecurityContext
		if diff := cmp.Diff([]string{"NET_ADMIN"}, mon.Capabilities.Add); diff != "" || mon.Privileged != nil {
			t.Errorf("%s: the monitor's capabilities (-want +got):\n%s (privileged %v)", name, diff, mon.Privileged)
		}
	}
	if name != VipstackPodPath {
		return
	}
	sc := p.Spec.Containers[0].SecurityContext
	if sc.Privileged == nil || *sc.Privileged {
		t.Errorf("%s: privileged = %v, want an explicit false", name, sc.Privileged)
	}
	if diff := cmp.Diff([]string{"NET_ADMIN", "NET_RAW", "NET_BIND_SERVICE"}, sc.Capabilities.Add); diff != "" {
		t.Errorf("%s: capabilities added (-want +got):\n%s", name, diff)
	}
	if diff := cmp.Diff([]string{"ALL"}, sc.Capabilities.Drop); diff != "" {
		t.Errorf("%s: capabilities dropped (-want +got):\n%s", name, diff)
	}
}

func TestFilesErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		node string
		opts Options
		want string
	}{
		{name: "unknown node", node: "nobody", opts: Options{Interface: "eth0"}, want: `node "nobody" is not in the cluster file`},
		{name: "no interface", node: "master-0", want: "render upstream/keepalived/keepalived.conf for node master-0: no interface for VRRP: set vrrp.interface"},
		{name: "bad interface", node: "master-0", opts: Options{Interface: "eth0/x"}, want: `interface "eth0/x" is not an interface name`},
		{name: "bad image", node: "master-0", opts: Options{Interface: "eth0", Image: "Quay.io/x y"}, want: `image "Quay.io/x y" is not an image reference`},
		{name: "bad haproxy image", node: "master-0", opts: Options{Interface: "eth0", HAProxyImage: "-h"}, want: `haproxy image "-h" is not an image reference`},
		{name: "bad namespace", node: "master-0", opts: Options{Interface: "eth0", Namespace: "Kube_System"}, want: `namespace "Kube_System" is not a DNS label`},
		{name: "relative config path", node: "master-0", opts: Options{Interface: "eth0", ConfigPath: "cluster.yaml"}, want: `config path "cluster.yaml" is not a clean absolute path`},
		{name: "bad status port", node: "master-0", opts: Options{Interface: "eth0", StatusPort: 70000}, want: "status port 70000 is not a port (1..65535)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Files(demo(t), tc.node, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestNoInterface(t *testing.T) {
	_, err := Files(demo(t), "worker-0", Options{})
	if !errors.Is(err, ErrNoInterface) {
		t.Fatalf("error = %v, want ErrNoInterface", err)
	}
	// The cluster file's interface is the default.
	c := parseCluster(t, v6Cluster)
	files, err := Files(c, "w0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(files[KeepalivedConfPath], []byte("\n    interface ens3\n")) {
		t.Errorf("keepalived.conf does not use vrrp.interface ens3:\n%s", files[KeepalivedConfPath])
	}
	files, err = Files(c, "w0", Options{Interface: "bond0"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(files[KeepalivedConfPath], []byte("\n    interface bond0\n")) {
		t.Errorf("keepalived.conf does not use the interface option bond0:\n%s", files[KeepalivedConfPath])
	}
}

func TestOptionsDoNotChange(t *testing.T) {
	o := Options{Interface: "eth0"}
	if _, err := Files(demo(t), "master-0", o); err != nil {
		t.Fatal(err)
	}
	if o != (Options{Interface: "eth0"}) {
		t.Fatalf("Files rewrote the caller's options: %+v", o)
	}
}

func TestHostPath(t *testing.T) {
	got := map[string]string{}
	for _, p := range append(allPaths(), "other/file", "vipstack/sub/x.yaml") {
		got[p] = HostPath(p)
	}
	want := map[string]string{
		VipstackPodPath:       "/etc/kubernetes/manifests/vipstack-node.yaml",
		KeepalivedPodPath:     "/etc/kubernetes/manifests/keepalived.yaml",
		HAProxyPodPath:        "/etc/kubernetes/manifests/haproxy.yaml",
		CoreDNSPodPath:        "/etc/kubernetes/manifests/coredns.yaml",
		KeepalivedConfPath:    "/etc/keepalived/keepalived.conf",
		HAProxyCfgPath:        "/etc/haproxy/haproxy.cfg",
		CorefilePath:          "/etc/coredns/Corefile",
		"other/file":          "",
		"vipstack/sub/x.yaml": "",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("HostPath (-want +got):\n%s", diff)
	}
}

func TestWriteDir(t *testing.T) {
	read := func(t *testing.T, dir string) map[string]string {
		t.Helper()
		out := map[string]string{}
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			st, err := os.Stat(p)
			if err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = st.Mode().Perm().String() + " " + string(b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	master := map[string][]byte{VipstackPodPath: []byte("pod m"), HAProxyCfgPath: []byte("cfg m")}
	worker := map[string][]byte{VipstackPodPath: []byte("pod w")}

	dir := filepath.Join(t.TempDir(), "out")
	written, err := WriteDir(dir, master, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{filepath.Join(dir, "upstream/haproxy/haproxy.cfg"), filepath.Join(dir, "vipstack/vipstack-node.yaml")}, written); diff != "" {
		t.Errorf("written (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{VipstackPodPath: "-rw-r--r-- pod m", HAProxyCfgPath: "-rw-r--r-- cfg m"}, read(t, dir)); diff != "" {
		t.Errorf("first write (-want +got):\n%s", diff)
	}
	for _, d := range []string{"vipstack", "upstream", "upstream/haproxy"} {
		if st, err := os.Stat(filepath.Join(dir, d)); err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("directory %s: %v, err %v; want mode 0755", d, st.Mode(), err)
		}
	}

	if _, err := WriteDir(dir, worker, false); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Fatalf("second write without force: %v, want a refusal", err)
	} else if !errors.Is(err, ErrDirNotEmpty) {
		t.Fatalf("refusal %v is not ErrDirNotEmpty", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteDir(dir, worker, true); err != nil {
		t.Fatal(err)
	}
	// The master's haproxy.cfg is gone with its directory, the user's own
	// file stays.
	if diff := cmp.Diff(map[string]string{VipstackPodPath: "-rw-r--r-- pod w", "notes.txt": "-rw------- mine"}, read(t, dir)); diff != "" {
		t.Errorf("forced write (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, "upstream/haproxy")); !os.IsNotExist(err) {
		t.Errorf("upstream/haproxy left behind: %v", err)
	}

	if _, err := WriteDir(t.TempDir(), map[string][]byte{"../escape": nil}, false); err == nil || !strings.Contains(err.Error(), "not a relative path") {
		t.Fatalf("escaping path: %v", err)
	}
}
