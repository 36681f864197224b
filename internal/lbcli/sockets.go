package lbcli

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/user"
	"strconv"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Sockets serves the runtime API on a configuration's stats sockets and
// follows its reloads.
type Sockets struct {
	bal     Balancer
	version string
	started time.Time
	log     *slog.Logger

	clients *Clients // every socket's connections, for show sess

	mu   sync.Mutex
	open map[string]*socket // by key
}

type socket struct {
	spec lbconfig.StatsSocket
	ln   net.Listener
	srv  *Server
	done chan struct{}
}

func key(s lbconfig.StatsSocket) string { return s.Network + " " + s.Address }

// NewSockets returns a Sockets with none open.
func NewSockets(bal Balancer, version string, started time.Time, log *slog.Logger) *Sockets {
	if log == nil {
		log = slog.Default()
	}
	return &Sockets{bal: bal, version: version, started: started, log: log, clients: NewClients(), open: map[string]*socket{}}
}

// Change is a prepared move to a new set of sockets: the new addresses
// are already listening, nothing else has changed yet.
type Change struct {
	s     *Sockets
	specs []lbconfig.StatsSocket
	added map[string]*socket
}

// Prepare opens the addresses of specs that are not open yet. When one
// cannot be opened it closes those it opened and returns the error, and
// nothing has changed.
func (s *Sockets) Prepare(specs []lbconfig.StatsSocket) (*Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Change{s: s, specs: specs, added: map[string]*socket{}}
	for _, spec := range specs {
		k := key(spec)
		if _, ok := s.open[k]; ok {
			continue
		}
		ln, err := listen(spec)
		if err != nil {
			c.abortLocked()
			return nil, err
		}
		c.added[k] = &socket{spec: spec, ln: ln}
	}
	return c, nil
}

// Commit starts serving the new addresses, applies new levels, modes and
// owners to the kept ones, and closes the addresses no longer wanted.
// A mode or owner that cannot be set is logged: the socket keeps serving.
func (c *Change) Commit() {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]bool{}
	for i, spec := range c.specs {
		k := key(spec)
		want[k] = true
		if so, ok := c.added[k]; ok {
			so.srv = New(Options{Balancer: s.bal, Level: levelOf(spec.Level), Version: s.version, Started: s.started,
				Logger: s.log, Clients: s.clients, ListenerID: i + 1, IdleTimeout: spec.IdleTimeout})
			so.done = make(chan struct{})
			go func() {
				defer close(so.done)
				if err := so.srv.Serve(so.ln); err != nil {
					s.log.Error("runtime API socket stopped", "socket", spec.Address, "err", err)
				}
			}()
			s.open[k] = so
			s.log.Info("runtime API listening", "socket", spec.Address, "level", levelOf(spec.Level).String())
			continue
		}
		so := s.open[k]
		so.srv.SetListenerID(i + 1)
		if so.spec != spec {
			if so.spec.IdleTimeout != spec.IdleTimeout {
				s.log.Warn("runtime API socket: the new stats timeout applies once the socket is reopened (restart, or move it to another path)",
					"socket", spec.Address, "timeout", so.spec.IdleTimeout, "new", spec.IdleTimeout)
			}
			so.srv.SetLevel(levelOf(spec.Level))
			if spec.Network == "unix" {
				if err := setFileMode(spec); err != nil {
					s.log.Warn("runtime API socket: new mode or owner not applied", "socket", spec.Address, "err", err)
				}
			}
			so.spec = spec
		}
	}
	for k, so := range s.open {
		if !want[k] {
			so.close()
			delete(s.open, k)
			s.log.Info("runtime API socket closed: no longer in the configuration", "socket", so.spec.Address)
		}
	}
}

// Abort closes the addresses Prepare opened.
func (c *Change) Abort() {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.abortLocked()
}

func (c *Change) abortLocked() {
	for k, so := range c.added {
		_ = so.ln.Close()
		delete(c.added, k)
	}
}

// Close closes every socket and its connections (a Unix socket's file is
// removed).
func (s *Sockets) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, so := range s.open {
		so.close()
		delete(s.open, k)
	}
}

func (so *socket) close() {
	_ = so.ln.Close()
	<-so.done
	so.srv.CloseConns()
}

func levelOf(s string) Level {
	l, err := ParseLevel(s)
	if err != nil {
		return LevelUser
	}
	return l
}

// listen opens one stats socket. A Unix socket's file left by a process
// that is gone is replaced; one a live process answers on is not.
func listen(spec lbconfig.StatsSocket) (net.Listener, error) {
	if spec.Network != "unix" {
		ln, err := net.Listen("tcp", spec.Address)
		if err != nil {
			return nil, fmt.Errorf("stats socket %s: %w", spec.Address, err)
		}
		return ln, nil
	}
	path := spec.Address
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("stats socket %s: the path exists and is not a socket (accepted: a free path, or a socket left by a stopped process)", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("stats socket %s: another process answers on it (is haproxy or another vipstack lb running?)", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("stats socket %s: removing the stale socket: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("stats socket %s: %w", path, err)
	}
	if err := setFileMode(spec); err != nil {
		_ = ln.Close()
		return nil, err
	}
	return ln, nil
}

// setFileMode applies a Unix socket's mode and owner.
func setFileMode(spec lbconfig.StatsSocket) error {
	if spec.Mode != 0 {
		if err := os.Chmod(spec.Address, fs.FileMode(spec.Mode)); err != nil {
			return fmt.Errorf("stats socket %s: mode %o: %w", spec.Address, spec.Mode, err)
		}
	}
	if spec.User == "" && spec.Group == "" {
		return nil
	}
	uid, gid := -1, -1
	if spec.User != "" {
		id, err := lookupID(spec.User, func(n string) (string, error) {
			u, err := user.Lookup(n)
			if err != nil {
				return "", err
			}
			return u.Uid, nil
		})
		if err != nil {
			return fmt.Errorf("stats socket %s: user %q: %w", spec.Address, spec.User, err)
		}
		uid = id
	}
	if spec.Group != "" {
		id, err := lookupID(spec.Group, func(n string) (string, error) {
			g, err := user.LookupGroup(n)
			if err != nil {
				return "", err
			}
			return g.Gid, nil
		})
		if err != nil {
			return fmt.Errorf("stats socket %s: group %q: %w", spec.Address, spec.Group, err)
		}
		gid = id
	}
	if err := os.Lchown(spec.Address, uid, gid); err != nil {
		return fmt.Errorf("stats socket %s: owner: %w", spec.Address, err)
	}
	return nil
}

// lookupID is a numeric id as written, or the id of a name.
func lookupID(s string, byName func(string) (string, error)) (int, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return n, nil
	}
	id, err := byName(s)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(id)
	if err != nil {
		return 0, errors.New("not a numeric id: " + id)
	}
	return n, nil
}
