package kadump

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/testutil"
)

// TestServerAnswersSignals: with the server started, the pid file names
// this process and each of keepalived's dump signals writes its file.
func TestServerAnswersSignals(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "run", "keepalived.pid")
	srv := &Server{Dir: dir, PIDFile: pidFile, Dump: func() (Dump, error) { return fixtureDump(), nil }, Log: nil}
	stop, err := srv.Start()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil || string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Fatalf("pid file = %q, %v; want %d and a newline", b, err, os.Getpid())
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		file string
		has  string
	}{
		{SigData, DataFile, " VRRP Instance = VI_web"},
		{SigStats, StatsFile, "VRRP Instance: VI_web"},
		{SigJSON, JSONFile, `"iname":"VI_web"`},
	} {
		if err := syscall.Kill(os.Getpid(), tc.sig); err != nil {
			t.Fatal(err)
		}
		err := testutil.Poll(5*time.Second, func() error {
			b, err := os.ReadFile(filepath.Join(dir, tc.file))
			if err != nil {
				return err
			}
			if !strings.Contains(string(b), tc.has) {
				return fmt.Errorf("%s lacks %q", tc.file, tc.has)
			}
			return nil
		})
		if err != nil {
			t.Errorf("after %v: %v", tc.sig, err)
		}
	}
	stop()
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("after stop the pid file is still there (%v)", err)
	}
}

// TestServerRefusesLivePIDFile: a pid file naming another running process
// (keepalived, during a migration) is not taken over.
func TestServerRefusesLivePIDFile(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "keepalived.pid")
	other := os.Getppid()
	if err := os.WriteFile(pidFile, []byte(fmt.Sprintf("%d\n", other)), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := &Server{Dir: t.TempDir(), PIDFile: pidFile, Dump: func() (Dump, error) { return Dump{}, nil }}
	_, err := srv.Start()
	if err == nil || !strings.Contains(err.Error(), pidFile) || !strings.Contains(err.Error(), strconv.Itoa(other)) {
		t.Fatalf("err = %v, want one naming %s and process %d", err, pidFile, other)
	}
	b, _ := os.ReadFile(pidFile)
	if string(b) != fmt.Sprintf("%d\n", other) {
		t.Errorf("pid file rewritten to %q", b)
	}
}
