package lb

import (
	"bytes"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
)

// mysqlPacket frames payload as a MySQL packet with sequence number seq.
func mysqlPacket(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// fakeMySQL is enough of a MySQL server for haproxy's mysql-check: a
// protocol 10 handshake at connect, then, to an authentication packet,
// OK for user "haproxy" and an access-denied error for anyone else;
// busy servers answer the connect with "Too many connections".
func fakeMySQL(busy bool) func(net.Conn) {
	return func(c net.Conn) {
		c.SetDeadline(time.Now().Add(bound))
		if busy {
			c.Write(mysqlPacket(0, append([]byte{0xff, 0x10, 0x04}, "Too many connections"...)))
			return
		}
		hs := append([]byte{0x0a}, "5.7.0-fake\x00"...)
		hs = append(hs, 1, 0, 0, 0)                   // connection id
		hs = append(hs, "abcdefgh\x00"...)            // auth data, filler
		hs = append(hs, 0xff, 0xf7, 0x21, 0x02, 0x00) // capabilities, charset, status
		hs = append(hs, 0xff, 0x81, 21)               // capabilities, auth data length
		hs = append(hs, make([]byte, 10)...)
		hs = append(hs, "ijklmnopqrst\x00mysql_native_password\x00"...)
		c.Write(mysqlPacket(0, hs))
		var head [4]byte
		if _, err := io.ReadFull(c, head[:]); err != nil {
			return
		}
		p := make([]byte, int(head[0])|int(head[1])<<8|int(head[2])<<16)
		if _, err := io.ReadFull(c, p); err != nil {
			return
		}
		off := 5 // pre-4.1: flags (2), max packet size (3)
		if len(p) > 1 && p[1]&0x02 != 0 {
			off = 32 // 4.1: flags, max packet size, charset, filler
		}
		user := ""
		if off < len(p) {
			user = string(p[off:])
			if i := bytes.IndexByte(p[off:], 0); i >= 0 {
				user = string(p[off : off+i])
			}
		}
		if user == "haproxy" {
			c.Write(mysqlPacket(2, []byte{0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00}))
		} else {
			c.Write(mysqlPacket(2, append([]byte{0xff, 0x15, 0x04, '#', '2', '8', '0', '0', '0'}, "Access denied for user '"+user+"'"...)))
		}
		io.Copy(io.Discard, c) // the QUIT packet, then the close
	}
}

// TestMySQLCheckMatchesHaproxy runs option mysql-check without a user,
// with an accepted user (4.1 and pre-4.1 packets), with a refused user,
// and against a server that refuses connections with an error packet,
// in haproxy 2.6 and vipstack, and compares each server's check_status.
func TestMySQLCheckMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	db := startBackendFunc(t, "db", fakeMySQL(false)).addr.String()
	busy := startBackendFunc(t, "busy", fakeMySQL(true)).addr.String()
	dir := t.TempDir()
	conf := func(p0 string) string {
		return strings.NewReplacer("{{DIR}}", dir, "{{P0}}", p0, "{{DB}}", db, "{{BUSY}}", busy).Replace(`global
  stats socket {{DIR}}/haproxy.sock mode 600 level admin
defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
  default-server inter 300ms fall 1 rise 1
listen nouser
  bind 127.0.0.1:{{P0}}
  option mysql-check
  server s1 {{DB}} check
backend user41
  option mysql-check user haproxy post-41
  server s1 {{DB}} check
backend userpre41
  option mysql-check user haproxy pre-41
  server s1 {{DB}} check
backend denied
  option mysql-check user nobody
  server s1 {{DB}} check
backend busy
  option mysql-check
  server s1 {{BUSY}} check
`)
	}
	names := []string{"nouser", "user41", "userpre41", "denied", "busy"}
	peers.HAProxy(t, conf(freePort(t)))
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf("1")))
	statuses := func(out string) map[string]string { return haproxyCheckStatuses(out, len(names)) }
	mine := func() map[string]string { return lbCheckStatuses(l, len(names)) }
	waitListening(t, "unix", filepath.Join(dir, "haproxy.sock"))
	var want, got map[string]string
	for deadline := time.Now().Add(bound); want == nil || got == nil; time.Sleep(50 * time.Millisecond) { // checks running, bounded
		if want == nil {
			want = statuses(haproxyCommand(t, filepath.Join(dir, "haproxy.sock"), "show stat"))
		}
		if got == nil {
			got = mine()
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every server checked: haproxy %q, vipstack %q", want, got)
		}
	}
	expected := map[string]string{"nouser": "L7OK", "user41": "L7OK", "userpre41": "L7OK", "denied": "L7STS", "busy": "L7STS"}
	if diff := cmp.Diff(expected, want); diff != "" {
		t.Errorf("haproxy's check_status differs from this test's expectation (-expected +haproxy):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("check_status (-haproxy +vipstack):\n%s", diff)
	}
}
