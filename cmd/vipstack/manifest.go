package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/manifest"
	"github.com/vipstack/vipstack/internal/version"
)

const manifestUsage = `Usage: vipstack manifest ipfailover [NAME] [flags]

Prints the Kubernetes objects of an IP failover pool, as "oc adm ipfailover"
creates them for OpenShift's ipfailover image: a ServiceAccount and a
Deployment running "vipstack ipfailover" on the host network with the pool's
OPENSHIFT_HA_* environment, one pod per node. Apply them with
"kubectl apply -f -". NAME (default "ipfailover") names the Deployment and
the pool (OPENSHIFT_HA_CONFIG_NAME).

Flags:
`

// ocOnlyFlags are flags of `oc adm ipfailover` that the generator refuses,
// with what to do instead.
func ocOnlyFlags() map[string]string {
	return map[string]string{
		"type":           "vipstack runs its own VRRP engine, there is no other type",
		"images":         "give the whole image reference with --image",
		"latest-images":  "give the image reference with --image",
		"create":         "this command prints the objects; create them with: vipstack manifest ipfailover ... | kubectl apply -f -",
		"output-version": "the objects are apps/v1 and v1",
		"credentials":    "vipstack ipfailover does not talk to the API server",
		"config-name":    "the pool's name is the NAME argument",
	}
}

func runManifest(_ context.Context, args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 0 && args[0] == "ipfailover":
		return runManifestIPFailover(args[1:], stdout, stderr)
	case len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help"):
		// ipfailover is the only kind: its usage is the command's.
		return runManifestIPFailover([]string{"-h"}, stdout, stderr)
	}
	fmt.Fprintf(stderr, "vipstack manifest: want the kind of manifest to print: ipfailover\n\n%s", manifestUsage)
	return 2
}

func runManifestIPFailover(args []string, stdout, stderr io.Writer) int {
	const cmd = "vipstack manifest ipfailover"
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	defaults := manifest.IPFailoverDefaults()
	byFlag := addManifestVars(fs, defaults)
	var (
		selector   = fs.String("selector", "", "node selector: the pool's nodes' labels, key=value pairs separated by commas (default: any node)")
		namespace  = fs.String("namespace", "", "namespace of the objects (default: kubectl's)")
		sa         = fs.String("service-account", manifest.DefaultServiceAccount, `ServiceAccount of the pods, printed too unless "default"`)
		image      = fs.String("image", version.Image(), "image running vipstack (default: this build's)")
		statusPort = fs.Int("status-port", manifest.StatusPortAuto, fmt.Sprintf("loopback port of the pool's /status, probed by the kubelet and declared as the pods' host port; 0: none; %d: %d + the VRID offset, oc's host port", manifest.StatusPortAuto, manifest.ServicePortBase))
		output     = fs.String("output", manifest.FormatYAML, "yaml or json")
	)
	fs.StringVar(selector, "l", "", "same as --selector")
	fs.StringVar(namespace, "n", "", "same as --namespace")
	fs.StringVar(output, "o", manifest.FormatYAML, "same as --output")
	ocOnly := addOCOnlyFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, manifestUsage)
		fs.PrintDefaults()
	}

	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return daemon.ParseExit(err)
	}
	name := manifest.DefaultIPFailoverName
	switch len(positional) {
	case 0:
	case 1:
		name = positional[0]
	default:
		fmt.Fprintf(stderr, "%s: want at most one argument (the pool's NAME), got %q\n", cmd, positional)
		return 2
	}

	vars := map[string]string{}
	for k, v := range defaults {
		vars[k] = v
	}
	var refused []string
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		if why, ok := ocOnly[f.Name]; ok {
			refused = append(refused, fmt.Sprintf("--%s=%s: not supported: %s", f.Name, f.Value, why))
			return
		}
		if v, ok := byFlag[f.Name]; ok {
			vars[v], given[v] = f.Value.String(), true
		}
	})
	dropVRRPDefaults(vars, given)
	if len(refused) > 0 {
		fmt.Fprintf(stderr, "%s: %s\n", cmd, strings.Join(refused, "\n"))
		return 2
	}
	if *output != manifest.FormatYAML && *output != manifest.FormatJSON {
		fmt.Fprintf(stderr, "%s: --output %q: want yaml or json\n", cmd, *output)
		return 2
	}
	objs, err := manifest.NewIPFailover(manifest.IPFailover{
		Name: name, Namespace: *namespace, Image: *image, Vars: vars,
		Selector: *selector, ServiceAccount: *sa, StatusPort: *statusPort,
	})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return 2
	}
	for _, w := range objs.Spec.Warnings {
		fmt.Fprintf(stderr, "%s: warning: %s\n", cmd, w)
	}
	if err := manifest.Encode(stdout, objs.Objects(), *output); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// dropVRRPDefaults leaves the generator's defaults of the VRRP settings
// out of a pool announced by BGP: they would have no effect, and
// `vipstack ipfailover` would warn about each on every start. Those given
// as flags stay, and are warned about.
func dropVRRPDefaults(vars map[string]string, given map[string]bool) {
	if vars[ipfailover.EnvBGPASN] == "" {
		return
	}
	for _, name := range ipfailover.VRRPOnly() {
		if !given[name] {
			delete(vars, name)
		}
	}
}

// addManifestVars adds a flag for each pool variable that has one (but
// the pool's name, the NAME argument), defaulting to the generator's
// defaults, and the image's short flags; it returns the variables' names
// by flag.
func addManifestVars(fs *flag.FlagSet, defaults map[string]string) map[string]string {
	byFlag := map[string]string{}
	for _, v := range ipfailover.Vars() {
		if v.Flag == "" || v.Flag == "config-name" {
			continue
		}
		def := defaults[v.Name]
		usage := fmt.Sprintf("%s (%s)", v.Usage, v.Name)
		if v.Name == ipfailover.EnvVRIDOffset {
			usage = fmt.Sprintf("VRIDs start at offset+1 (0..254) (%s); unset: from 11, avoiding VRIDs heard on the link (oc writes 0)", v.Name)
		}
		fs.String(v.Flag, def, usage)
		byFlag[v.Flag] = v.Name
	}
	for short, long := range map[string]string{"i": "interface", "w": "watch-port", "r": "replicas"} {
		fs.String(short, "", "same as --"+long)
		byFlag[short] = byFlag[long]
	}
	return byFlag
}

// addOCOnlyFlags adds the flags of oc adm ipfailover that the generator
// refuses, and returns why by flag.
func addOCOnlyFlags(fs *flag.FlagSet) map[string]string {
	ocOnly := ocOnlyFlags()
	names := make([]string, 0, len(ocOnly))
	for name := range ocOnly {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "create" || name == "latest-images" {
			fs.Bool(name, false, "oc adm ipfailover's; refused: "+ocOnly[name])
		} else {
			fs.String(name, "", "oc adm ipfailover's; refused: "+ocOnly[name])
		}
	}
	return ocOnly
}

// parseInterspersed parses args with fs, taking arguments before, between
// or after the flags, as oc does; it returns the arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
