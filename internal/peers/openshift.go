package peers

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The OpenShift peers, built from source at the versions OpenShift ships
// (never a downloaded binary) into the user's cache directory, keyed by
// version, so only the first run pays for the build.
const (
	// mdns-publisher: the version the latest openshift/coredns-mdns go.mod
	// requires (the proxy serves it; its module zip has no vendor
	// directory, so it builds with -mod=mod from its go.sum).
	mdnsPublisherModule  = "github.com/openshift/mdns-publisher"
	mdnsPublisherVersion = "v0.0.0-20220222182051-8fef1ccb075f"
	// coredns-mdns: the version openshift/coredns's go.mod requires, the
	// mdns plugin of OpenShift's CoreDNS image. The checksum database has
	// no entry for it (lookup: 404), so it is fetched from the proxy with
	// GONOSUMDB for that module alone, and checked against corednsMDNSSum
	// instead: the go.sum lines recorded at its first download here
	// (2026-11-23), which the build's go.sum starts with, so that go
	// refuses different contents ("SECURITY ERROR"). Its dependencies are
	// verified by the checksum database as usual.
	corednsMDNSModule  = "github.com/openshift/coredns-mdns"
	corednsMDNSVersion = "v0.0.0-20210625150643-8c0b6474833f"
	corednsMDNSSum     = corednsMDNSModule + " " + corednsMDNSVersion + " h1:fNTw437SGd4KAzm32K6ibCPtUXhQgDrhpp+xAcoPd+g=\n" +
		corednsMDNSModule + " " + corednsMDNSVersion + "/go.mod h1:yixafteIRjJo5rpW96/rCpP3JdnIB4TMqzVW0kn+5wU=\n"
	// The CoreDNS that coredns-mdns at that version requires.
	corednsForMDNS = "v1.8.1"
)

// OpenShiftPeers names the peers OpenShiftPeer builds.
var OpenShiftPeers = []string{"mdns-publisher", "coredns"}

// ErrChecksum is returned (wrapped) when the module proxy serves
// coredns-mdns with other contents than the recorded checksum: never a
// reason to skip a test.
var ErrChecksum = errors.New("module contents do not match the recorded checksum")

// OpenShiftPeer returns the path of a peer binary ("mdns-publisher", or
// "coredns": CoreDNS with OpenShift's mdns plugin), building it on first
// use into the user's cache directory. `go run ./hack/openshift-peers`
// builds both ahead of a test run.
func OpenShiftPeer(name string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the OpenShift peers: %w", err)
	}
	var version string
	switch name {
	case "mdns-publisher":
		version = mdnsPublisherVersion
	case "coredns":
		version = corednsMDNSVersion
	default:
		return "", fmt.Errorf("unknown OpenShift peer %q (known: %s)", name, strings.Join(OpenShiftPeers, ", "))
	}
	dir := filepath.Join(cache, "vipstack-peers", name+"-"+version)
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// A source directory of its own, so that two builds at once do not
	// share one; the binary is renamed into place.
	src, err := os.MkdirTemp(dir, "src-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	goBin, err := goTool()
	if err != nil {
		return "", err
	}
	run := func(env []string, args ...string) ([]byte, error) {
		c := exec.Command(goBin, args...)
		c.Dir = src
		c.Env = append(os.Environ(), append([]string{"GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false"}, env...)...)
		out, err := c.CombinedOutput()
		if err != nil {
			return out, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return out, nil
	}
	var env []string
	switch name {
	case "mdns-publisher":
		out, err := run(nil, "mod", "download", "-json", mdnsPublisherModule+"@"+mdnsPublisherVersion)
		if err != nil {
			return "", err
		}
		var m struct{ Dir string }
		if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
			return "", fmt.Errorf("go mod download: %v: %s", err, out)
		}
		if out, err := exec.Command("cp", "-r", m.Dir+"/.", src).CombinedOutput(); err != nil {
			return "", fmt.Errorf("cp: %w: %s", err, out)
		}
		if out, err := exec.Command("chmod", "-R", "u+w", src).CombinedOutput(); err != nil {
			return "", fmt.Errorf("chmod: %w: %s", err, out)
		}
		if err := os.RemoveAll(filepath.Join(src, "vendor")); err != nil {
			return "", err
		}
	case "coredns":
		env = []string{"GONOSUMDB=" + corednsMDNSModule}
		main := "// Command coredns is CoreDNS with OpenShift's mdns plugin, a test peer for vipstack.\n" +
			"package main\n\nimport (\n" +
			"\t\"github.com/coredns/coredns/core/dnsserver\"\n\t\"github.com/coredns/coredns/coremain\"\n\n" +
			"\t_ \"github.com/coredns/coredns/plugin/errors\"\n\t_ \"" + corednsMDNSModule + "\"\n)\n\n" +
			"func init() { dnsserver.Directives = []string{\"errors\", \"mdns\"} }\n\nfunc main() { coremain.Run() }\n"
		mod := "module vipstack.test/coredns-mdns-peer\n\ngo 1.21\n\nrequire (\n" +
			"\tgithub.com/coredns/coredns " + corednsForMDNS + "\n\t" + corednsMDNSModule + " " + corednsMDNSVersion + "\n)\n"
		for f, body := range map[string]string{"main.go": main, "go.mod": mod, "go.sum": corednsMDNSSum} {
			if err := os.WriteFile(filepath.Join(src, f), []byte(body), 0o644); err != nil {
				return "", err
			}
		}
		if out, err := run(env, "mod", "tidy"); err != nil {
			if strings.Contains(string(out), "SECURITY ERROR") {
				return "", fmt.Errorf("%s %s from the module proxy: %w: %v", corednsMDNSModule, corednsMDNSVersion, ErrChecksum, err)
			}
			return "", err
		}
	}
	tmp, err := os.CreateTemp(dir, name+".tmp-")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if _, err := run(env, "build", "-o", tmp.Name(), "."); err != nil {
		return "", err
	}
	return bin, os.Rename(tmp.Name(), bin)
}

// goTool finds the go command: on PATH (go test and test.sh put it there),
// else where Go's installer puts it.
func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	const fallback = "/usr/local/go/bin/go"
	if _, err := os.Stat(fallback); err == nil {
		return fallback, nil
	}
	return "", errors.New("the go command is not on PATH nor at " + fallback)
}
