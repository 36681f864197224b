package kadump

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// scrape does what keepalived-exporter does on each scrape (text mode):
// it reads the pid file, sends STATS then DATA, and reads the two files,
// retrying for up to 2 s as the exporter's backoff does; then it turns
// them into the exporter's series (exporter_test.go).
func scrape(pidFile, dir string, sigs ...syscall.Signal) ([]string, error) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return nil, err
	}
	pid, err := strconv.Atoi(strings.TrimSuffix(string(b), "\n"))
	if err != nil {
		return nil, fmt.Errorf("pid file %s: %w", pidFile, err)
	}
	var out []string
	err = testutil.Poll(2*time.Second, func() error {
		for _, f := range []string{DataFile, StatsFile, JSONFile} {
			os.Remove(filepath.Join(dir, f))
		}
		for _, s := range sigs {
			if err := syscall.Kill(pid, s); err != nil {
				return err
			}
		}
		time.Sleep(20 * time.Millisecond) // the exporter waits 10 ms per signal
		if len(sigs) == 1 && sigs[0] == SigJSON {
			b, err := os.ReadFile(filepath.Join(dir, JSONFile))
			if err != nil {
				return err
			}
			v, err := exParseJSON(bytes.NewReader(b))
			if err != nil {
				return err
			}
			out = exMetrics(v, nil)
			return nil
		}
		data, err := os.ReadFile(filepath.Join(dir, DataFile))
		if err != nil {
			return err
		}
		stats, err := os.ReadFile(filepath.Join(dir, StatsFile))
		if err != nil {
			return err
		}
		v, err := exJoin(bytes.NewReader(data), bytes.NewReader(stats))
		if err != nil {
			return err
		}
		out = exMetrics(v, exParseScripts(bytes.NewReader(data)))
		return nil
	})
	return out, err
}

// transitionsAgree wants the stats file's transition counts to match the
// data file's state: one more "became master" than "released master" in
// MASTER (state 2), as many of each otherwise.
func transitionsAgree(series []string, key func(name, ip string) string, state int) error {
	became, _ := value(series, key("keepalived_become_master_total", "-"))
	released, _ := value(series, key("keepalived_release_master_total", "-"))
	want := released
	if state == 2 {
		want++
	}
	if became != want {
		return fmt.Errorf("state %d with %d became master, %d released: the stats are older than the data", state, became, released)
	}
	return nil
}

// value is the value of the series whose name and labels are key.
func value(series []string, key string) (int, bool) {
	for _, s := range series {
		if k, v, ok := strings.Cut(s, "} "); ok && k+"}" == key {
			n, err := strconv.Atoi(v)
			return n, err == nil
		}
	}
	return 0, false
}

// keys are the series' names and labels, without the script series
// (the two routers track different scripts).
func keys(series []string) []string {
	var out []string
	for _, s := range series {
		if strings.HasPrefix(s, "keepalived_script_") {
			continue
		}
		k, _, _ := strings.Cut(s, "} ")
		out = append(out, k+"}")
	}
	return out
}

// TestExporterScrapesVipstackVRRP runs `vipstack vrrp
// --keepalived-exporter-compat` against a keepalived 2.2.7 peer in a
// network namespace and scrapes both routers as keepalived-exporter does.
// keepalived-exporter's module is not served by the Go module proxy here
// (every version from v1.0.0 to v1.7.0 tried: 403), so the scrape is the
// exporter's reading rules re-implemented in exporter_test.go. It checks
// that vipstack's series are the series keepalived writes for the same
// instance, and that their values follow vipstack's real state: master,
// then backup after its tracked script fails and keepalived takes over.
func TestExporterScrapesVipstackVRRP(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := exec.LookPath("keepalived"); err != nil {
		t.Skip("keepalived is not installed")
	}
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vkx"})
	vs, ka := topo.Hosts[0], topo.Hosts[1]
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	vsDir, kaDir := t.TempDir(), t.TempDir()
	up := filepath.Join(vsDir, "up")
	if err := os.WriteFile(up, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	instance := func(prio int, track string) string {
		return fmt.Sprintf(`vrrp_instance VI_1 {
    state BACKUP
    interface %s
    virtual_router_id 61
    priority %d
    advert_int 1
    virtual_ipaddress {
        198.18.0.200/24
        198.18.0.201/32
    }
    virtual_ipaddress_excluded {
        198.18.3.1/24
    }
%s}
`, vs.Link, prio, track)
	}
	vsConf := fmt.Sprintf(`global_defs {
    router_id vs1
}
vrrp_script chk_up {
    script "/usr/bin/test -f %s"
    interval 1
    weight 60
}
`, up) + instance(100, "    track_script {\n        chk_up\n    }\n")
	kaConf := "global_defs {\n    router_id ka1\n}\n" + instance(130, "")
	if err := os.WriteFile(filepath.Join(vsDir, "keepalived.conf"), []byte(vsConf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kaDir, "keepalived.conf"), []byte(kaConf), 0o644); err != nil {
		t.Fatal(err)
	}

	// keepalived writes its dumps in /tmp: give it its own, its kaDir.
	kaCmd := ka.Command("unshare", "-m", "sh", "-c",
		fmt.Sprintf("mount --bind %s /tmp && exec keepalived -n -l -D --vrrp -f /tmp/keepalived.conf -p /tmp/keepalived.pid -r /tmp/vrrp.pid", kaDir))
	var kaLog bytes.Buffer
	kaCmd.Stdout, kaCmd.Stderr = &kaLog, &kaLog
	if err := ka.Start(kaCmd); err != nil {
		t.Fatal(err)
	}
	vsPID := filepath.Join(vsDir, "keepalived.pid")
	vsCmd := vs.Command(bin, "vrrp", "-f", filepath.Join(vsDir, "keepalived.conf"), "--state-dir", filepath.Join(vsDir, "state"),
		"--keepalived-exporter-compat", "--keepalived-exporter-pid-file", vsPID, "--keepalived-exporter-dir", vsDir)
	var vsLog bytes.Buffer
	vsCmd.Stdout, vsCmd.Stderr = &vsLog, &vsLog
	if err := vs.Start(vsCmd); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("vipstack log:\n%s", vsLog.String())
			t.Logf("keepalived log:\n%s", kaLog.String())
		}
	}()

	key := func(name, ip string) string {
		if ip == "-" {
			return fmt.Sprintf(`%s{iname="VI_1",intf="%s",vrid="61"}`, name, vs.Link)
		}
		return fmt.Sprintf(`%s{iname="VI_1",intf="%s",vrid="61",ip_address="%s"}`, name, vs.Link, ip)
	}
	stateOf := func(series []string) string {
		var s []string
		for _, ip := range []string{"198.18.0.200/24", "198.18.0.201"} {
			v, ok := value(series, key("keepalived_vrrp_state", ip))
			s = append(s, fmt.Sprintf("%s=%d/%v", ip, v, ok))
		}
		return strings.Join(s, " ")
	}
	waitStates := func(step string, vsWant, kaWant int) (vsSeries, kaSeries []string) {
		t.Helper()
		want := func(n int) string {
			return fmt.Sprintf("198.18.0.200/24=%d/true 198.18.0.201=%d/true", n, n)
		}
		err := testutil.Poll(20*time.Second, func() error {
			var err error
			if vsSeries, err = scrape(vsPID, vsDir, SigStats, SigData); err != nil {
				return fmt.Errorf("vipstack: %w", err)
			}
			if kaSeries, err = scrape(filepath.Join(kaDir, "vrrp.pid"), kaDir, SigStats, SigData); err != nil {
				return fmt.Errorf("keepalived: %w", err)
			}
			if got := stateOf(vsSeries); got != want(vsWant) {
				return fmt.Errorf("vipstack: %s, want %s", got, want(vsWant))
			}
			if got := stateOf(kaSeries); got != want(kaWant) {
				return fmt.Errorf("keepalived: %s, want %s", got, want(kaWant))
			}
			// The stats and the data are written at two signals: a
			// transition between them pairs the new state with the
			// counts from before it. Read both again until they agree.
			if err := transitionsAgree(vsSeries, key, vsWant); err != nil {
				return fmt.Errorf("vipstack: %w", err)
			}
			return transitionsAgree(kaSeries, key, kaWant)
		})
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return vsSeries, kaSeries
	}
	check := func(step string, series []string, want map[string]int) {
		t.Helper()
		for k, w := range want {
			got, ok := value(series, k)
			if !ok || got != w {
				t.Errorf("%s: %s = %d (present %v), want %d\n%s", step, k, got, ok, w, strings.Join(series, "\n"))
			}
		}
	}
	positive := func(step string, series []string, k string) {
		t.Helper()
		if got, ok := value(series, k); !ok || got <= 0 {
			t.Errorf("%s: %s = %d (present %v), want > 0", step, k, got, ok)
		}
	}

	// 1. vipstack (100 + 60) is master over keepalived (130).
	vsSeries, kaSeries := waitStates("start", 2, 1)
	t.Logf("vipstack master, as the exporter reads it:\n%s", strings.Join(vsSeries, "\n"))
	if b, err := os.ReadFile(filepath.Join(vsDir, DataFile)); err == nil {
		t.Logf("vipstack's %s:\n%s", DataFile, b)
	}
	if diff := cmp.Diff(keys(kaSeries), keys(vsSeries)); diff != "" {
		t.Errorf("vipstack's series are not keepalived's (-keepalived +vipstack):\n%s", diff)
	}
	check("master", vsSeries, map[string]int{
		key("keepalived_become_master_total", "-"):        1,
		key("keepalived_release_master_total", "-"):       0,
		key("keepalived_gratuitous_arp_delay_total", "-"): 5,
		`keepalived_script_status{name="chk_up"}`:         1,
		`keepalived_script_state{name="chk_up"}`:          0,
		fmt.Sprintf(`keepalived_vrrp_excluded_state{iname="VI_1",intf="%s",vrid="61",ip_address="198.18.3.1/24"}`, vs.Link): 2,
	})
	positive("master", vsSeries, key("keepalived_advertisements_sent_total", "-"))
	positive("master: keepalived hears vipstack", kaSeries, key("keepalived_advertisements_received_total", "-"))
	jsonSeries, err := scrape(vsPID, vsDir, SigJSON)
	if err != nil {
		t.Fatalf("JSON dump: %v", err)
	}
	if got := stateOf(jsonSeries); got != "198.18.0.200/24=2/true 198.18.0.201=2/true" {
		t.Errorf("JSON dump: states %s, want both 2 (MASTER)", got)
	}

	// 2. The tracked script fails: vipstack falls to 100, keepalived
	// (130) preempts.
	if err := os.Remove(up); err != nil {
		t.Fatal(err)
	}
	vsSeries, kaSeries = waitStates("failover", 1, 2)
	t.Logf("after the failover, vipstack:\n%s\nkeepalived:\n%s", strings.Join(vsSeries, "\n"), strings.Join(kaSeries, "\n"))
	check("backup", vsSeries, map[string]int{
		key("keepalived_become_master_total", "-"):  1,
		key("keepalived_release_master_total", "-"): 1,
		`keepalived_script_status{name="chk_up"}`:   0,
	})
	positive("backup", vsSeries, key("keepalived_advertisements_received_total", "-"))

	// 3. Stopped, vipstack removes its pid file.
	if err := syscall.Kill(vsCmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = testutil.Poll(10*time.Second, func() error {
		if _, err := os.Stat(vsPID); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("pid file %s still there (%v)", vsPID, err)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
