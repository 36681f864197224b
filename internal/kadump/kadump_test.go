package kadump

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fixtureDump is the router testdata/keepalived-2.2.7 describes.
func fixtureDump() Dump {
	return Dump{
		RouterID: "lab-a",
		Instances: []Instance{
			{
				Name: "VI_web", State: "MASTER", Version: 2, Interface: "ens3",
				Source:         netip.MustParseAddr("198.18.5.2"),
				LastTransition: time.Unix(1700000400, 250000000),
				VRID:           7, BasePriority: 150, Effective: 170,
				AdvertInterval: time.Second, Accept: true, Preempt: true,
				GARPDelay: 5 * time.Second, GARPRepeat: 5, GARPRefreshRep: 1,
				VIPs: []VIP{
					{Prefix: netip.MustParsePrefix("198.18.5.10/24"), Dev: "ens3", Set: true},
					{Prefix: netip.MustParsePrefix("198.18.5.11/32"), Dev: "ens3", Set: true},
				},
				TrackScripts: []TrackRef{{Name: "chk_web", Weight: 20}},
				Stats:        Stats{AdvertRcvd: 3, AdvertSent: 120, BecomeMaster: 2, ReleaseMaster: 1, AuthFailure: 4},
			},
			{
				Name: "VI_v6", State: "BACKUP", Version: 3, Interface: "ens3",
				Source:         netip.MustParseAddr("fe80::5:2"),
				LastTransition: time.Unix(1700000401, 500000000),
				VRID:           8, BasePriority: 100, Effective: 100, MasterPriority: 120,
				AdvertInterval: time.Second, Accept: true, Preempt: true,
				GARPDelay: 5 * time.Second, GARPRepeat: 5, GARPRefreshRep: 1,
				VIPs: []VIP{
					{Prefix: netip.MustParsePrefix("fd00:5::10/64"), Dev: "ens3"},
				},
				Stats: Stats{AdvertRcvd: 300, AddrListErr: 2},
			},
		},
		Scripts: []Script{{
			Name: "chk_web", Command: "/usr/local/bin/check-web", Interval: 2 * time.Second, Timeout: 2 * time.Second,
			Weight: 20, Rise: 1, Fall: 1, Good: true, Tracking: []TrackRef{{Name: "VI_web", Weight: 20}},
		}},
	}
}

// withExcluded adds an excluded VIP and unicast peers to the fixture, for
// the parts of the format the keepalived fixture does not show.
func withExcluded() Dump {
	d := fixtureDump()
	d.Instances[0].ExcludedVIPs = []VIP{{Prefix: netip.MustParsePrefix("198.18.6.1/24"), Dev: "ens4", Set: true}}
	d.Instances[0].UnicastPeers = []netip.Addr{netip.MustParseAddr("198.18.5.3")}
	return d
}

func golden(t *testing.T, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", t.Name()+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func render(t *testing.T, d Dump, write func(io.Writer, Dump) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestWriteGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dump  Dump
		write func(io.Writer, Dump) error
	}{
		{name: "data", dump: withExcluded(), write: WriteData},
		{name: "stats", dump: withExcluded(), write: WriteStats},
		{name: "json", dump: withExcluded(), write: WriteJSON},
		{name: "data_empty", dump: Dump{RouterID: "r"}, write: WriteData},
	} {
		t.Run(tc.name, func(t *testing.T) { golden(t, render(t, tc.dump, tc.write)) })
	}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "keepalived-2.2.7", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExporterReadsKeepalivedFixture checks the exporter's reading rules
// (exporter_test.go) on files shaped as keepalived 2.2.7 writes them: the
// series every keepalived dashboard reads.
func TestExporterReadsKeepalivedFixture(t *testing.T) {
	vrrps, err := exJoin(bytes.NewReader(readFixture(t, DataFile)), bytes.NewReader(readFixture(t, StatsFile)))
	if err != nil {
		t.Fatal(err)
	}
	got := exMetrics(vrrps, exParseScripts(bytes.NewReader(readFixture(t, DataFile))))
	for _, want := range []string{
		`keepalived_vrrp_state{iname="VI_web",intf="ens3",vrid="7",ip_address="198.18.5.10/24"} 2`,
		`keepalived_vrrp_state{iname="VI_web",intf="ens3",vrid="7",ip_address="198.18.5.11"} 2`,
		`keepalived_vrrp_state{iname="VI_v6",intf="ens3",vrid="8",ip_address="fd00:5::10/64"} 1`,
		`keepalived_become_master_total{iname="VI_web",intf="ens3",vrid="7"} 2`,
		`keepalived_release_master_total{iname="VI_web",intf="ens3",vrid="7"} 1`,
		`keepalived_authentication_failure_total{iname="VI_web",intf="ens3",vrid="7"} 4`,
		`keepalived_address_list_errors_total{iname="VI_v6",intf="ens3",vrid="8"} 2`,
		`keepalived_advertisements_received_total{iname="VI_v6",intf="ens3",vrid="8"} 300`,
		`keepalived_gratuitous_arp_delay_total{iname="VI_web",intf="ens3",vrid="7"} 5`,
		`keepalived_script_status{name="chk_web"} 1`,
		`keepalived_script_state{name="chk_web"} 0`,
	} {
		if !contains(got, want) {
			t.Errorf("missing %s in\n%s", want, strings.Join(got, "\n"))
		}
	}
	fromJSON, err := exParseJSON(bytes.NewReader(readFixture(t, JSONFile)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(exMetrics(vrrps, nil), exMetrics(fromJSON, nil)); diff != "" {
		t.Errorf("the fixture's JSON and text dumps read differently (-text +json):\n%s", diff)
	}
}

// TestExporterReadsVipstackAsKeepalived: what vipstack writes for the
// fixture's router reads, by the exporter's rules, exactly as what
// keepalived 2.2.7 writes for it, from the text files and from the JSON.
func TestExporterReadsVipstackAsKeepalived(t *testing.T) {
	kaVRRPs, err := exJoin(bytes.NewReader(readFixture(t, DataFile)), bytes.NewReader(readFixture(t, StatsFile)))
	if err != nil {
		t.Fatal(err)
	}
	want := exMetrics(kaVRRPs, exParseScripts(bytes.NewReader(readFixture(t, DataFile))))
	d := fixtureDump()
	data, stats := render(t, d, WriteData), render(t, d, WriteStats)
	vsVRRPs, err := exJoin(bytes.NewReader(data), bytes.NewReader(stats))
	if err != nil {
		t.Fatal(err)
	}
	got := exMetrics(vsVRRPs, exParseScripts(bytes.NewReader(data)))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("text dumps: exporter series differ (-keepalived +vipstack):\n%s", diff)
	}
	kaJSON, err := exParseJSON(bytes.NewReader(readFixture(t, JSONFile)))
	if err != nil {
		t.Fatal(err)
	}
	vsJSON, err := exParseJSON(bytes.NewReader(render(t, d, WriteJSON)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(exMetrics(kaJSON, nil), exMetrics(vsJSON, nil)); diff != "" {
		t.Errorf("JSON dumps: exporter series differ (-keepalived +vipstack):\n%s", diff)
	}
	// The JSON's own fields beyond the exporter's agree too.
	var ka, vs []map[string]map[string]any
	decode(t, readFixture(t, JSONFile), &ka)
	decode(t, render(t, d, WriteJSON), &vs)
	if diff := cmp.Diff(ka, vs); diff != "" {
		t.Errorf("JSON dumps differ (-keepalived +vipstack):\n%s", diff)
	}
}

// TestExcludedVIPsAndPeersKeepVIPList: excluded VIPs are read as the
// exporter's excluded series and unicast peers do not leak into the VIP
// list.
func TestExcludedVIPsAndPeersKeepVIPList(t *testing.T) {
	d := withExcluded()
	data := render(t, d, WriteData)
	vrrps, err := exJoin(bytes.NewReader(data), bytes.NewReader(render(t, d, WriteStats)))
	if err != nil {
		t.Fatal(err)
	}
	got := exMetrics(vrrps, nil)
	for _, want := range []string{
		`keepalived_vrrp_excluded_state{iname="VI_web",intf="ens4",vrid="7",ip_address="198.18.6.1/24"} 2`,
		`keepalived_vrrp_state{iname="VI_web",intf="ens3",vrid="7",ip_address="198.18.5.10/24"} 2`,
	} {
		if !contains(got, want) {
			t.Errorf("missing %s in\n%s", want, strings.Join(got, "\n"))
		}
	}
	for _, l := range got {
		if strings.Contains(l, "198.18.5.3") {
			t.Errorf("unicast peer read as a VIP: %s", l)
		}
	}
	jv, err := exParseJSON(bytes.NewReader(render(t, d, WriteJSON)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, exMetrics(jv, nil)); diff != "" {
		t.Errorf("JSON reads differently from the text (-text +json):\n%s", diff)
	}
}

func TestBadStateIsAnError(t *testing.T) {
	d := fixtureDump()
	d.Instances[1].State = "STANDBY"
	for name, w := range map[string]func(io.Writer, Dump) error{"data": WriteData, "json": WriteJSON} {
		err := w(io.Discard, d)
		if err == nil || !strings.Contains(err.Error(), `instance VI_v6`) || !strings.Contains(err.Error(), `"STANDBY"`) {
			t.Errorf("%s: err = %v, want one naming instance VI_v6 and \"STANDBY\"", name, err)
		}
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, DataFile)
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteFileAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err })
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "new\n" {
		t.Errorf("content = %q, want %q", b, "new\n")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600 (keepalived's umask 0177)", fi.Mode().Perm())
	}
	// A failing writer leaves the old file and no temporary file.
	err = WriteFileAtomic(path, func(w io.Writer) error { io.WriteString(w, "part"); return io.ErrShortWrite })
	if err == nil {
		t.Fatal("want the writer's error")
	}
	b, _ = os.ReadFile(path)
	if string(b) != "new\n" {
		t.Errorf("after a failed write content = %q, want %q", b, "new\n")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only %s", len(entries), DataFile)
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
