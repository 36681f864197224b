package kadump

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Signals keepalived 2.2.7 dumps on (`keepalived --signum=DATA|STATS|JSON`
// prints 10, 12 and 36 on Linux): SIGUSR1, SIGUSR2 and SIGRTMIN+2.
const (
	SigData  = syscall.SIGUSR1
	SigStats = syscall.SIGUSR2
	SigJSON  = syscall.Signal(36)
)

// A Server writes the dump files when the process is sent keepalived's
// dump signals, and holds the pid file that tells keepalived-exporter
// where to send them.
type Server struct {
	Dir     string // where the dump files go (keepalived: /tmp)
	PIDFile string // keepalived's pid file (/run/keepalived.pid)
	Dump    func() (Dump, error)
	Log     *slog.Logger // nil: slog.Default()
}

// Start answers the dump signals from now until stop is called, and
// then writes the pid file (in that order: a signal sent as soon as the
// pid file names this process must be answered, not dropped as Go drops
// SIGUSR1, SIGUSR2 and SIGRTMIN+2 nobody listens for). It refuses a pid file that names another running
// process: keepalived itself, during a migration, still answers there.
// stop removes the pid file if it still names this process.
func (s *Server) Start() (stop func(), err error) {
	if err := s.checkPIDFile(); err != nil {
		return nil, err
	}
	ch := make(chan os.Signal, 3)
	signal.Notify(ch, SigData, SigStats, SigJSON)
	if err := s.writePIDFile(); err != nil {
		signal.Stop(ch)
		return nil, err
	}
	log := s.Log
	if log == nil {
		log = slog.Default()
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case sig := <-ch:
				if err := s.Answer(sig.(syscall.Signal)); err != nil {
					log.Error("keepalived-exporter compatibility: dump failed", "signal", sig, "err", err)
				}
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		<-finished
		s.releasePIDFile()
	}, nil
}

// Answer writes the file keepalived writes on sig.
func (s *Server) Answer(sig syscall.Signal) error {
	d, err := s.Dump()
	if err != nil {
		return err
	}
	switch sig {
	case SigData:
		return WriteFileAtomic(filepath.Join(s.Dir, DataFile), func(w io.Writer) error { return WriteData(w, d) })
	case SigStats:
		return WriteFileAtomic(filepath.Join(s.Dir, StatsFile), func(w io.Writer) error { return WriteStats(w, d) })
	case SigJSON:
		return WriteFileAtomic(filepath.Join(s.Dir, JSONFile), func(w io.Writer) error { return WriteJSON(w, d) })
	}
	return fmt.Errorf("kadump: signal %v is not one of keepalived's dump signals (SIGUSR1, SIGUSR2, SIGRTMIN+2)", sig)
}

func (s *Server) checkPIDFile() error {
	if pid, ok := readPID(s.PIDFile); ok && pid != os.Getpid() {
		if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("pid file %s names process %d, which is running (keepalived?): stop it or give vipstack another pid file", s.PIDFile, pid)
		}
	}
	return nil
}

func (s *Server) writePIDFile() error {
	if err := os.MkdirAll(filepath.Dir(s.PIDFile), 0o755); err != nil {
		return fmt.Errorf("pid file %s: %w", s.PIDFile, err)
	}
	err := WriteFileAtomic(s.PIDFile, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%d\n", os.Getpid())
		return err
	})
	if err != nil {
		return err
	}
	return os.Chmod(s.PIDFile, 0o644)
}

func (s *Server) releasePIDFile() {
	if pid, ok := readPID(s.PIDFile); ok && pid == os.Getpid() {
		os.Remove(s.PIDFile)
	}
}

func readPID(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}
