package engine

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/keepalived"
)

// TestDisableScripts: a script that fails its check (missing, not
// executable, unsafe under enable_script_security) is disabled the way
// keepalived 2.2.7 disables it (measured in a namespace: "Disabling track
// script chk_missing since not found/accessible", "Script
// /nonexistent/master.sh cannot be accessed - No such file or directory"),
// and the rest of the configuration runs: the instance keeps its other
// track_script entries and notify scripts.
func TestDisableScripts(t *testing.T) {
	const conf = "vrrp_script gone {\n script /gone.sh\n}\nvrrp_script ok {\n script /ok.sh\n}\n" +
		"vrrp_instance VI {\n interface eth0\n virtual_router_id 1\n virtual_ipaddress {\n  198.18.0.1\n }\n" +
		" track_script {\n  gone\n  ok\n }\n notify_master \"/gone.sh master\"\n notify_backup /ok.sh\n}\n" +
		"vrrp_sync_group G {\n group {\n  VI\n }\n track_script {\n  gone\n }\n notify /gone.sh\n}\n"
	cfg, err := keepalived.Parse("k.conf", []byte(conf), fstest.MapFS{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Warnings = nil
	disableScripts(cfg, func(argv []string) error {
		if argv[0] == "/gone.sh" {
			return errors.New("stat /gone.sh: no such file or directory")
		}
		return nil
	})
	type got struct {
		Scripts             []string
		Tracks, GroupTracks []string
		Notify, GroupNotify keepalived.Notify
		Warnings            []string
	}
	names := func(ts []keepalived.TrackScript) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	in, g := cfg.Instances[0], cfg.SyncGroups[0]
	want := got{
		Scripts: []string{"ok"}, Tracks: []string{"ok"},
		Notify: keepalived.Notify{Backup: "/ok.sh"},
		Warnings: []string{
			"k.conf:1: Disabling track script gone since not found/accessible (stat /gone.sh: no such file or directory); " +
				"the instances tracking it run without it, as in keepalived",
			"k.conf:7: Script /gone.sh cannot be accessed (stat /gone.sh: no such file or directory); vrrp_instance VI " +
				"notify script \"/gone.sh master\" is disabled, as in keepalived",
			"k.conf:20: Script /gone.sh cannot be accessed (stat /gone.sh: no such file or directory); vrrp_sync_group G " +
				"notify script \"/gone.sh\" is disabled, as in keepalived",
		},
	}
	if diff := cmp.Diff(want, got{
		Scripts: sortedKeys(cfg.Scripts), Tracks: names(in.TrackScripts), GroupTracks: names(g.TrackScripts),
		Notify: in.Notifies(), GroupNotify: g.Notify, Warnings: cfg.Warnings,
	}); diff != "" {
		t.Errorf("after disableScripts (-want +got):\n%s", diff)
	}
}
