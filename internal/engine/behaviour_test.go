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
// namespace and returns the body of a 200.
func httpGet(h *testnet.Host, addr, path string) (string, error) {
	head, body, err := httpDo(h, addr, path)
	if err != nil {
		return "", err
	}
	if status, _, _ := strings.Cut(head, "\r\n"); !strings.Contains(status, " 200 ") {
		return "", fmt.Errorf("GET %s%s: %s", addr, path, status)
	}
	return body, nil
}

// httpDo GETs path from addr inside h's network namespace (the
// connection is dialled inside the namespace and used from outside it)
// and returns the response's head and body, whatever its status.
func httpDo(h *testnet.Host, addr, path string) (head, body string, err error) {
	var conn net.Conn
	err = h.Do(func() error {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		conn = c
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("dial %s in %s: %w", addr, h.Name, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return "", "", err
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		return "", "", fmt.Errorf("GET %s%s: %w", addr, path, err)
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", "", fmt.Errorf("GET %s%s: %w", addr, path, err)
	}
	head, body, ok := strings.Cut(string(b), "\r\n\r\n")
	if !ok {
		return "", "", fmt.Errorf("GET %s%s: no end of headers in %q", addr, path, b)
	}
	return head, body, nil
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
