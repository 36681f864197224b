package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestDNSFlags checks the mDNS and -sched-slice flags of "vipstack dns": every refusal comes
// before the Corefile is read or served, with exit code 2.
func TestDNSFlags(t *testing.T) {
	mdns := []string{"dns", "-conf", "/nonexistent/Corefile", "-mdns-cluster", "c1", "-node-name", "master-0", "-node-addr", "198.18.0.11"}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "role in capitals", args: append(mdns, "-node-role", "Master"), wantErr: `Self.Role "Master": want master, worker or bootstrap`},
		{name: "unknown role", args: append(mdns, "-node-role", "control-plane"), wantErr: `Self.Role "control-plane"`},
		{name: "every address excluded", args: append(mdns, "-mdns-exclude", "198.18.0.11"), wantErr: "no address left to publish"},
		{name: "bad node name", args: append(mdns[:6:6], "master_0", "-node-addr", "198.18.0.11"), wantErr: `Self.Name "master_0"`},
		{name: "node flags without -mdns-cluster", args: []string{"dns", "-node-name", "master-0"}, wantErr: "only apply with -mdns-cluster"},
		{name: "bad address", args: append(mdns, "-node-addr", "198.18.0.300"), wantErr: `"198.18.0.300" is not an IP address`},
		{name: "slice too short", args: []string{"dns", "-conf", "/nonexistent/Corefile", "-sched-slice", "50us"}, wantErr: "-sched-slice 50µs: want 0 (the kernel's default) or 100µs to 100ms"},
		{name: "slice too long", args: []string{"dns", "-conf", "/nonexistent/Corefile", "-sched-slice", "1s"}, wantErr: "-sched-slice 1s: want 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), tc.wantErr) {
				t.Fatalf("run(%q) = %d\nstderr: %s\nwant code 2, stderr containing %q", tc.args, code, errb.String(), tc.wantErr)
			}
		})
	}
}

// TestDNSCheckOpenShiftCorefile: `vipstack dns -check` accepts OpenShift's
// current on-prem Corefile (machine-config-operator
// templates/common/on-prem/files/coredns-corefile.yaml, rendered), whose
// mdns line it refused with `unknown plugin "mdns"` before the mdns
// directive; -plugins lists mdns after cache, as OpenShift's build orders
// it. CoreDNS's tables are process-wide, so this is the package's only
// test that gets as far as building the DNS server.
func TestDNSCheckOpenShiftCorefile(t *testing.T) {
	const path = "../../internal/dns/testdata/openshift-mdns.Corefile"
	var out, errb bytes.Buffer
	if code := run([]string{"dns", "-check", "-conf", path}, &out, &errb); code != 0 || !strings.Contains(out.String(), "Corefile is valid") {
		t.Fatalf("dns -check %s = %d\nstdout: %s\nstderr: %s", path, code, out.String(), errb.String())
	}
	out.Reset()
	code := run([]string{"dns", "-plugins"}, &out, &errb)
	list := out.String()
	if i, j := strings.Index(list, "\ncache\nmdns\n"), strings.Index(list, "\ntemplate\n"); code != 0 || i < 0 || j < i {
		t.Errorf("dns -plugins = %d\n%s\nwant mdns right after cache, and before template", code, list)
	}
}

// TestServeDNSStopWithMDNS: a stop that ends the mDNS source as well
// finds both ready; whichever the loop takes, the exit is 0 (a select
// on them gave 1 about half the time). The source's end before any stop
// is still a failure.
func TestServeDNSStopWithMDNS(t *testing.T) {
	// dns.NewServer runs once per process (CoreDNS's plugin table is
	// process-wide), and other tests here run the command.
	srv := stoppedDNS{}
	f := dnsFlags{log: slog.New(slog.DiscardHandler)}
	for i := range 50 {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		mdnsDone := make(chan error, 1)
		mdnsDone <- nil
		if code := serveDNS(ctx, cancel, srv, nil, mdnsDone, f); code != 0 {
			t.Fatalf("try %d: a stop that also ended the mDNS source exits %d, want 0", i, code)
		}
	}
	mdnsDone := make(chan error, 1)
	mdnsDone <- errors.New("mdns: socket closed")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if code := serveDNS(ctx, cancel, srv, nil, mdnsDone, f); code != 1 {
		t.Errorf("the mDNS source ending before any stop exits %d, want 1", code)
	}
}

// stoppedDNS stands for a CoreDNS that reloads and stops without a word.
type stoppedDNS struct{}

func (stoppedDNS) Reload() error { return nil }
func (stoppedDNS) Stop() error   { return nil }
