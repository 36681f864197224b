package engine_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/ipv4"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
	"github.com/vipstack/vipstack/internal/vrrp"
)

// behaviourPrefix starts the namespace names of the tests in this file.
const behaviourPrefix = "vsF"

// poll calls f every step until it reports done, failing t after timeout.
// It polls system state (addresses, files, HTTP endpoints); it never waits
// for a timer of the code under test.
func poll(t *testing.T, timeout time.Duration, what string, f func() (bool, error)) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		done, err := f()
		if done {
			return nil
		}
		return fmt.Errorf("%s: not true (last error: %v)", what, err)
	})
}

// logOnFailure prints the tail of n's log when t fails.
func logOnFailure(t *testing.T, n *peers.Node) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- %s on %s log:\n%s", n.Impl, n.Host.Name, tail(n.Log(), 80))
		}
	})
}

// httpGet fetches path from addr (a loopback address) inside h's network
// namespace: the connection is dialled inside the namespace and used from
// outside it.
func httpGet(h *testnet.Host, addr, path string) (string, error) {
	var conn net.Conn
	err := h.Do(func() error {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		conn = c
		return err
	})
	if err != nil {
		return "", fmt.Errorf("dial %s in %s: %w", addr, h.Name, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return "", err
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		return "", fmt.Errorf("GET %s%s: %w", addr, path, err)
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("GET %s%s: %w", addr, path, err)
	}
	head, body, ok := strings.Cut(string(b), "\r\n\r\n")
	if !ok {
		return "", fmt.Errorf("GET %s%s: no end of headers in %q", addr, path, b)
	}
	if status, _, _ := strings.Cut(head, "\r\n"); !strings.Contains(status, " 200 ") {
		return "", fmt.Errorf("GET %s%s: %s", addr, path, status)
	}
	return body, nil
}

// metricSum returns, for the Prometheus text exposition text, the value of
// metric name summed over every series, keyed by the value of label.
func metricSum(text, name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		key := ""
		for _, kv := range strings.Split(labels, ",") {
			k, val, _ := strings.Cut(kv, "=")
			if k == label {
				key = strings.Trim(val, `"`)
			}
		}
		out[key] += v
	}
	return out
}

// rawSender sends hand-made VRRP packets from a raw socket inside a host's
// namespace, with full control over the IP header.
type rawSender struct {
	pc  net.PacketConn
	raw *ipv4.RawConn
	src netip.Addr
}

func newRawSender(t *testing.T, h *testnet.Host) *rawSender {
	t.Helper()
	s := &rawSender{src: h.IPv4.Addr()}
	err := h.Do(func() error {
		pc, err := net.ListenPacket("ip4:112", "0.0.0.0")
		if err != nil {
			return err
		}
		s.pc = pc
		if s.raw, err = ipv4.NewRawConn(pc); err != nil {
			return err
		}
		ifi, err := net.InterfaceByName(h.Link)
		if err != nil {
			return err
		}
		return s.raw.SetMulticastInterface(ifi)
	})
	if s.pc != nil {
		t.Cleanup(func() { s.pc.Close() })
	}
	if err != nil {
		t.Fatalf("raw VRRP socket in %s: %v", h.Name, err)
	}
	return s
}

// send writes payload to 224.0.0.18 with the given TTL.
func (s *rawSender) send(payload []byte, ttl int) error {
	h := &ipv4.Header{
		Version:  ipv4.Version,
		Len:      ipv4.HeaderLen,
		TOS:      0xc0,
		TotalLen: ipv4.HeaderLen + len(payload),
		TTL:      ttl,
		Protocol: vrrp.ProtocolNumber,
		Src:      s.src.AsSlice(),
		Dst:      vrrp.MulticastIPv4.AsSlice(),
	}
	return s.raw.WriteTo(h, payload, nil)
}

// writeScript writes an executable root-owned shell script.
func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// readLines returns the complete lines of path (those a writer has ended
// with a newline), none if it does not exist yet. A script's `>> file`
// creates the file before it writes: an empty file, or a line still being
// written, is not a line yet (TestInteropNotify once read "" as a
// call on a loaded machine).
func readLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := string(b)
	end := strings.LastIndexByte(s, '\n')
	if end < 0 {
		return nil, nil
	}
	return strings.Split(s[:end], "\n"), nil
}

// scriptHost is the start of the tests that run scripts under vipstack: it
// skips without root, and returns vipstack's binary, one host, and a
// directory for the scripts (root-owned, under sticky /tmp: it passes
// enable_script_security).
func scriptHost(t *testing.T) (bin string, h *testnet.Host, dir string) {
	t.Helper()
	testnet.RequireRoot(t)
	bin = vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: behaviourPrefix})
	return bin, topo.Hosts[0], t.TempDir()
}

// TestNotifyScripts: the generic notify script gets "INSTANCE name state
// priority" for BACKUP at start, MASTER, and STOP on SIGTERM, and a STOP
// script that takes a moment is not killed by vipstack's exit;
// notify_master runs with the arguments its line gives, split as keepalived
// splits them.
func TestNotifyScripts(t *testing.T) {
	bin, h, dir := scriptHost(t)
	notifyLog, masterLog := filepath.Join(dir, "notify.log"), filepath.Join(dir, "master.log")
	notify, master := filepath.Join(dir, "notify.sh"), filepath.Join(dir, "notify_master.sh")
	// The STOP call takes a little while, as real notify scripts do (they
	// send alerts, stop services): vipstack must let it finish before it
	// exits, as keepalived does (it waits about a second).
	writeScript(t, notify, fmt.Sprintf("[ \"$3\" = STOP ] && sleep 0.2\necho \"$@\" >> %s\n", notifyLog))
	writeScript(t, master, fmt.Sprintf("printf '%%s|' master \"$@\" >> %s\necho >> %s\n", masterLog, masterLog))
	// notify_master's arguments are split as keepalived 2.2.7 splits them
	// (measured, 2026-11-24: it ran the script with aAz, bAz and g\h): the
	// quoted string's escapes, then the command line's, inside single
	// quotes too. vipstack split it with other rules and passed ax41z,
	// b\x41z and g\h.
	text := renderConf("    enable_script_security\n    script_user root\n", vrrpInstance{
		name: "VI_1", vrid: 51, vip: "198.18.0.100",
		extra: fmt.Sprintf("    notify %q\n    notify_master \"%s "+`a\\x41z 'b\\x41z' g\\\\h`+"\"\n", notify, master),
	})
	n, err := peers.Start(h, peers.Vipstack, text, filepath.Join(dir, "node"), bin)
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, n)
	poll(t, 20*time.Second, "notify BACKUP then MASTER", func() (bool, error) {
		l, err := readLines(notifyLog)
		return len(l) >= 2, err
	})
	if err := n.Term(); err != nil {
		t.Fatal(err)
	}
	// The STOP script is started at shutdown and may finish after vipstack.
	poll(t, 10*time.Second, "notify STOP", func() (bool, error) {
		l, err := readLines(notifyLog)
		return len(l) >= 3, err
	})
	got, err := readLines(notifyLog)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"INSTANCE VI_1 BACKUP 100", "INSTANCE VI_1 MASTER 100", "INSTANCE VI_1 STOP 100"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notify script calls (-want +got):\n%s", diff)
	}
	gotMaster, err := readLines(masterLog)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{`master|aAz|bAz|g\h|`}, gotMaster); diff != "" {
		t.Errorf("notify_master calls (-want +got):\n%s", diff)
	}
}

// ledgerEntries returns the VIPs recorded in the ledgers under stateDir.
func ledgerEntries(t *testing.T, stateDir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(stateDir, "vrrp-*.vips"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		l, err := readLines(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range l {
			if s = strings.TrimSpace(s); s != "" && !strings.HasPrefix(s, "#") {
				out = append(out, s)
			}
		}
	}
	return out
}

// TestSIGTERMRemovesVIPsAndExitsZero: a master stopped with SIGTERM has
// removed its VIP and emptied its ledger by the time it exits, with status 0.
func TestSIGTERMRemovesVIPsAndExitsZero(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: behaviourPrefix})
	h := topo.Hosts[0]
	vip := netip.MustParseAddr("198.18.0.100")
	dir := t.TempDir()
	conf := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(conf, []byte(renderConf("", vrrpInstance{name: "VI_1", vrid: 51, vip: vip.String()})), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "vipstack.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("---- vipstack log:\n%s", tail(string(b), 80))
		}
	})
	// Started here rather than with peers.Start to see the exit status.
	cmd := h.Command(bin, "vrrp", "-f", conf, "--state-dir", dir, "--log-level", "debug")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := h.Start(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, h, 500*time.Millisecond, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := ledgerEntries(t, dir); len(got) != 1 {
		t.Errorf("ledger of a master holds %q, want its one VIP", got)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("vipstack after SIGTERM: %v, want exit status 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("vipstack did not exit within 15s of SIGTERM")
	}
	has, err := h.HasAddr(vip)
	if err != nil {
		t.Fatal(err)
	}
	if has {
		t.Errorf("VIP %v still on %s after vipstack exited", vip, h.Name)
	}
	if got := ledgerEntries(t, dir); len(got) != 0 {
		t.Errorf("ledger after a clean stop holds %q, want nothing", got)
	}
}

// TestCrashLeftoversSweptAtStart: a master killed with SIGKILL leaves its
// VIP behind; started again with the same state directory as a backup
// (priority 50, while another node at 100 is master) it removes the
// leftover at start, so only the real master holds the VIP.
func TestCrashLeftoversSweptAtStart(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	c := newCluster(t, mode{version: 3, family: 4}, []peers.Impl{peers.Vipstack, peers.Vipstack}, []int{150, 100})
	c.startAll()
	c.waitMaster(0, "start")
	dir := c.nodes[0].Dir
	if err := c.nodes[0].Kill(); err != nil {
		t.Fatal(err)
	}
	c.waitMaster(1, "kill -9 of the vipstack master", 0)
	crashed := c.topo.Hosts[0]
	if has, err := crashed.HasAddr(c.vip); err != nil || !has {
		t.Fatalf("precondition: after kill -9 the VIP should still be on %s (has %v, err %v)", crashed.Name, has, err)
	}

	c.prios[0] = 50
	text, err := c.conf(0).Render("node1")
	if err != nil {
		t.Fatal(err)
	}
	n, err := peers.Start(crashed, peers.Vipstack, text, dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	c.nodes[0] = n
	c.waitMaster(1, "restarted crashed node at priority 50")
	if !strings.Contains(n.Log(), "removed VIP left by an earlier run") {
		t.Errorf("the restarted node did not log the removal of the leftover VIP")
	}
	if got := ledgerEntries(t, dir); len(got) != 0 {
		t.Errorf("ledger of a backup holds %q, want nothing", got)
	}
}
