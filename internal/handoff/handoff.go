package handoff

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// AgentSocket is the abstract socket of `vipstack agent`.
const AgentSocket = "@vipstack/k8s-agent"

// ErrBusy means another live process serves the node (holds the socket).
var ErrBusy = errors.New("another agent serves this node")

// Handover is what the serving agent passes to its successor: the VRRP
// instances it held as master, their addresses left on the interfaces.
type Handover struct {
	Masters []string `json:"masters"`
	PID     int      `json:"pid"`
}

// message is one line on the socket.
type message struct {
	Type     string    `json:"type"` // hello, ready, handover, ack
	PID      int       `json:"pid,omitempty"`
	Version  string    `json:"version,omitempty"`
	Handover *Handover `json:"handover,omitempty"`
}

// State is what the serving agent knows of its successor.
type State int

const (
	// None: no successor is connected.
	None State = iota
	// Starting: a successor said hello and is not ready yet.
	Starting
	// Ready: the successor has its first plan and can take over at once.
	Ready
)

func (s State) String() string {
	switch s {
	case Starting:
		return "starting"
	case Ready:
		return "ready"
	}
	return "none"
}

// Server is held by the agent that serves the node.
type Server struct {
	log  *slog.Logger
	ln   *net.UnixListener
	mu   sync.Mutex
	succ *peer // the latest successor; nil: none
	// changed is closed and replaced whenever succ or its state changes.
	changed chan struct{}
	closed  bool
}

type peer struct {
	conn    *net.UnixConn
	r       *bufio.Reader
	state   State
	pid     int
	version string
	acks    chan struct{}
}

// Listen takes the socket name; ErrBusy (wrapped) if a live process holds it.
func Listen(name string, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%w (socket %s)", ErrBusy, name)
	}
	if err != nil {
		return nil, fmt.Errorf("hand-off socket %s: %w", name, err)
	}
	s := &Server{log: log, ln: ln, changed: make(chan struct{})}
	go s.accept()
	return s, nil
}

// Acquire takes the socket name, waiting while another process holds it
// (a predecessor still stopping, or one that is wedged: then it waits for
// the kubelet to kill it). It logs every logEvery.
func Acquire(ctx context.Context, name string, log *slog.Logger) (*Server, error) {
	const poll, logEvery = 20 * time.Millisecond, 10 * time.Second
	start, logged := time.Now(), time.Now()
	for {
		s, err := Listen(name, log)
		if !errors.Is(err, ErrBusy) {
			return s, err
		}
		if time.Since(logged) >= logEvery {
			logged = time.Now()
			log.Warn("another agent still serves this node and has not handed over; waiting for it to stop",
				"socket", name, "waited", time.Since(start).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// Held reports whether a live process holds the socket name.
func Held(name string) bool {
	c, err := net.DialTimeout("unix", name, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func (s *Server) accept() {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		go s.serve(c)
	}
}

// serve reads one successor's messages. A newer successor replaces an
// older one (a pod deleted and created again).
func (s *Server) serve(c *net.UnixConn) {
	if err := sameUser(c); err != nil {
		s.log.Warn("refused a connection to the hand-off socket", "err", err)
		c.Close()
		return
	}
	p := &peer{conn: c, r: bufio.NewReaderSize(c, maxLine), acks: make(chan struct{}, 1)}
	defer func() {
		c.Close()
		s.mu.Lock()
		if s.succ == p {
			s.succ = nil
			s.notify()
			s.log.Info("the new agent on this node went away before it took over", "pid", p.pid)
		}
		s.mu.Unlock()
	}()
	for {
		m, err := read(p.r)
		if err != nil {
			return
		}
		s.mu.Lock()
		switch m.Type {
		case "hello":
			if old := s.succ; old != nil && old != p {
				old.conn.Close()
			}
			p.state, p.pid, p.version = Starting, m.PID, m.Version
			s.succ = p
			s.log.Info("a new agent started on this node; it takes over when it has its first plan and this one is stopped",
				"pid", m.PID, "version", m.Version)
		case "ready":
			if s.succ == p {
				p.state = Ready
				s.log.Info("the new agent on this node is ready to take over", "pid", p.pid)
			}
		case "ack":
			select {
			case p.acks <- struct{}{}:
			default:
			}
		}
		s.notify()
		s.mu.Unlock()
	}
}

func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Successor says whether a successor is connected and how far it is.
func (s *Server) Successor() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.succ == nil {
		return None
	}
	return s.succ.state
}

// WaitReady waits until the successor is ready, or until none is
// connected, or ctx is done; it returns the state then.
func (s *Server) WaitReady(ctx context.Context) State {
	for {
		s.mu.Lock()
		st, ch := None, s.changed
		if s.succ != nil {
			st = s.succ.state
		}
		s.mu.Unlock()
		if st != Starting {
			return st
		}
		select {
		case <-ctx.Done():
			return st
		case <-ch:
		}
	}
}

// HandOver passes the node to the ready successor. freeze stops this
// agent's VRRP without releasing anything and returns what it held; then
// the socket is closed (so the successor can take it), the handover sent
// and its acknowledgement awaited until ctx is done. It returns an error
// when no ready successor is connected (before freeze runs: the caller
// shuts down normally) or when the successor did not acknowledge (after
// freeze: the caller must release what it held).
func (s *Server) HandOver(ctx context.Context, freeze func() ([]string, error)) (frozen bool, err error) {
	s.mu.Lock()
	p := s.succ
	s.mu.Unlock()
	if p == nil || p.state != Ready {
		return false, errors.New("no successor ready to take over")
	}
	masters, err := freeze()
	if err != nil {
		return false, fmt.Errorf("stopping VRRP for the hand-off: %w", err)
	}
	s.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	_ = p.conn.SetWriteDeadline(deadline)
	h := &Handover{Masters: masters, PID: os.Getpid()}
	if err := write(p.conn, message{Type: "handover", Handover: h}); err != nil {
		return true, fmt.Errorf("sending the handover to agent %d: %w", p.pid, err)
	}
	select {
	case <-p.acks:
		return true, nil
	case <-ctx.Done():
		// An acknowledgement there by now counts: the successor has
		// adopted the addresses, which the caller would release.
		select {
		case <-p.acks:
			return true, nil
		default:
		}
		return true, fmt.Errorf("agent %d did not acknowledge the handover: %w", p.pid, ctx.Err())
	}
}

// Close gives up the socket; a waiting successor can take it.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.ln.Close()
	}
}

// Successor is the connection of a new agent to the one serving its node.
type Successor struct {
	conn *net.UnixConn
	r    *bufio.Reader
}

// Dial connects to the agent serving the node and says hello.
func Dial(name string, pid int, version string) (*Successor, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: name, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("hand-off socket %s: %w", name, err)
	}
	if err := sameUser(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("hand-off socket %s: %w", name, err)
	}
	s := &Successor{conn: c, r: bufio.NewReaderSize(c, maxLine)}
	if err := write(c, message{Type: "hello", PID: pid, Version: version}); err != nil {
		c.Close()
		return nil, fmt.Errorf("hand-off socket %s: %w", name, err)
	}
	return s, nil
}

// Ready tells the serving agent that this one can take over at once.
func (s *Successor) Ready() error { return write(s.conn, message{Type: "ready"}) }

// ErrGone means the serving agent closed the connection without a
// handover: it stopped and released what it held, or died.
var ErrGone = errors.New("the agent that served this node stopped without handing over")

// Wait returns the handover once the serving agent sends it; ErrGone if
// it goes away without one.
func (s *Successor) Wait(ctx context.Context) (Handover, error) {
	stop := context.AfterFunc(ctx, func() { s.conn.SetReadDeadline(time.Now()) })
	defer stop()
	for {
		m, err := read(s.r)
		if err != nil {
			if ctx.Err() != nil {
				return Handover{}, ctx.Err()
			}
			return Handover{}, ErrGone
		}
		if m.Type == "handover" && m.Handover != nil {
			return *m.Handover, nil
		}
	}
}

// Ack acknowledges the handover and closes the connection.
func (s *Successor) Ack() error {
	defer s.conn.Close()
	return write(s.conn, message{Type: "ack"})
}

// Close closes the connection.
func (s *Successor) Close() { s.conn.Close() }

// sameUser refuses a peer that runs as another user than this process:
// the socket is open to every process on the node's network, and one that
// posed as a successor could have the addresses left behind on a stop.
func sameUser(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("peer credentials: %w", cerr)
	}
	if int(cred.Uid) != os.Geteuid() {
		return fmt.Errorf("the peer (pid %d) runs as uid %d, not %d as this agent does", cred.Pid, cred.Uid, os.Geteuid())
	}
	return nil
}

// maxLine bounds one message (a handover names every master instance).
const maxLine = 4 << 20

func read(r *bufio.Reader) (message, error) {
	var m message
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return m, fmt.Errorf("hand-off message longer than %d bytes", r.Size())
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, fmt.Errorf("hand-off message: %w", err)
	}
	return m, nil
}

func write(c *net.UnixConn, m message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = c.Write(append(b, '\n'))
	return err
}
