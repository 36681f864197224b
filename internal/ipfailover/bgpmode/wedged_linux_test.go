package bgpmode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/serve"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// wedgedHelperEnv, set to a state directory, makes TestPoolBGPWedged run
// the pool in its own process, in the namespace its parent started it in
// (a pool runs on many threads, which cannot all join a namespace).
const wedgedHelperEnv = "VIPSTACK_TEST_BGP_WEDGED_IN_PROCESS"

// TestPoolBGPWedged runs a pool announced by BGP whose GoBGP stops
// answering as the speaker adds its router (held in its log handler, as a
// bug in its loop would hold it): once the call has waited its bound, the
// pool's status endpoint answers 503, which fails the pod's liveness
// probe, with the speaker's stop and GoBGP's wedge named in the body; the
// pool still stops and takes its VIPs off lo.
func TestPoolBGPWedged(t *testing.T) {
	if os.Getenv(wedgedHelperEnv) != "" {
		poolBGPWedged(t)
		return
	}
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsW"})
	topo.Hosts[0].RunTest(t, "TestPoolBGPWedged", wedgedHelperEnv+"="+t.TempDir())
}

// poolBGPWedged is the pool's side: two VIPs announced to a router on
// eth0's subnet that nothing answers for (the hold comes before any
// connection).
func poolBGPWedged(t *testing.T) {
	spec, err := ipfailover.Parse(ipfailover.Input{Env: map[string]string{
		ipfailover.EnvConfigName:  "vswedge",
		ipfailover.EnvVirtualIPs:  "198.19.2.1-2",
		ipfailover.EnvInterface:   "eth0",
		ipfailover.EnvMonitorPort: "0",
		ipfailover.EnvBGPASN:      "64512",
		ipfailover.EnvBGPPeerASN:  "64500",
		ipfailover.EnvBGPPeers:    "198.18.0.1",
	}})
	if err != nil {
		t.Fatal(err)
	}
	hold := testutil.NewLogHold(slog.NewTextHandler(os.Stderr, nil), "gobgp: Add a peer configuration")
	hold.Arm()
	defer hold.Release()
	p, err := ipfailover.New(ipfailover.Options{Spec: spec, BGP: Mode{}, Logger: slog.New(hold),
		Ledger: netif.Ledger{Path: filepath.Join(os.Getenv(wedgedHelperEnv), "vswedge.vips")}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.JSON("127.0.0.1:0", "/status", func() any { return p.Status() })
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()

	client := &http.Client{Timeout: 5 * time.Second}
	var st ipfailover.Status
	// GoBGP's calls wait 10 s for an answer (bgp.answerWait).
	testutil.Eventually(t, 60*time.Second, func() error {
		resp, err := client.Get("http://" + srv.Addr.String() + "/status")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		st = ipfailover.Status{}
		if err := json.Unmarshal(body, &st); err != nil {
			return fmt.Errorf("status %d, not a pool's status: %v: %s", resp.StatusCode, err, body)
		}
		// GoBGP counts as wedged an instant before the speaker's call
		// returns and the runner records the stop.
		if resp.StatusCode != http.StatusServiceUnavailable || st.BGP == nil || st.BGP.Stopped == "" {
			return fmt.Errorf("status %d (held: %v), want 503 once GoBGP has not answered and the speaker stopped: %s", resp.StatusCode, hold.Held(), body)
		}
		return nil
	})
	if !hold.Held() {
		t.Error("GoBGP's loop was never held: the 503 has another cause")
	}
	if st.BGP == nil || !strings.Contains(st.BGP.Stopped, "AddPeer 198.18.0.1: GoBGP did not answer within") ||
		!strings.Contains(st.BGP.Wedged, "has not answered AddPeer 198.18.0.1 since") || st.Held != 0 {
		t.Errorf("the 503's status: held %d, BGP %+v; want nothing announced, the speaker stopped on AddPeer and GoBGP wedged", st.Held, st.BGP)
	}
	if u := st.Unhealthy(); !strings.HasPrefix(u, "bgp: the speaker stopped: ") {
		t.Errorf("Unhealthy = %q, want the speaker's stop", u)
	}
	// The VIPs went on lo before the speaker started; they come off at
	// the stop, GoBGP held or not.
	onLo := func() (string, error) {
		out, err := exec.Command("ip", "-4", "addr", "show", "dev", "lo").CombinedOutput()
		return string(out), err
	}
	if out, err := onLo(); err != nil || !strings.Contains(out, "198.19.2.1/32") {
		t.Errorf("lo before the stop (%v), want the VIPs:\n%s", err, out)
	}
	cancel()
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Fatal("the pool did not stop within 30 s with GoBGP held")
	}
	if out, err := onLo(); err != nil || strings.Contains(out, "198.19.2.") {
		t.Errorf("lo after the stop (%v) still holds a VIP:\n%s", err, out)
	}
}
