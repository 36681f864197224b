package lbcli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipstack/vipstack/internal/lb"
	lbstats "github.com/vipstack/vipstack/internal/lb/stats"
)

// Balancer is what the runtime API reads and changes: the load balancer.
type Balancer interface {
	Snapshot() lbstats.Snapshot
	SetServerAdmin(backend, server string, st lbstats.AdminState) error
	SetServerWeight(backend, server string, weight int) error
	ShutdownServerSessions(backend, server string) (int, error)
	Sessions() []lb.Session
	ShutdownSession(id uintptr) bool
}

// Level is what a connection may do: haproxy's CLI access levels.
type Level int

const (
	LevelUser     Level = iota + 1 // read-only commands
	LevelOperator                  // haproxy's operator: show sess, and what user may do
	LevelAdmin                     // every command, servers' state included
)

func (l Level) String() string {
	switch l {
	case LevelUser:
		return "user"
	case LevelOperator:
		return "operator"
	case LevelAdmin:
		return "admin"
	}
	return "level(" + strconv.Itoa(int(l)) + ")"
}

// ParseLevel reads a `stats socket ... level` value.
func ParseLevel(s string) (Level, error) {
	switch s {
	case "user":
		return LevelUser, nil
	case "operator":
		return LevelOperator, nil
	case "admin":
		return LevelAdmin, nil
	}
	return 0, fmt.Errorf("level %q: expected user, operator or admin", s)
}

// DefaultIdleTimeout is how long a connection may wait between two lines:
// haproxy's default for the stats socket (`stats timeout`).
const DefaultIdleTimeout = 10 * time.Second

// maxLine bounds one line of commands.
const maxLine = 64 << 10

// Options configure a Server.
type Options struct {
	Balancer    Balancer
	Level       Level            // the level a connection starts at; 0 means user, haproxy's default
	Version     string           // for `show version` and `show info`
	Started     time.Time        // process start, for `show info`'s uptime
	Now         func() time.Time // for uptime; nil means time.Now
	IdleTimeout time.Duration    // 0 means DefaultIdleTimeout
	Logger      *slog.Logger
	// Clients is shared by the Servers of one configuration's stats
	// sockets: show sess lists, and shutdown session closes, the
	// connections of every one of them. nil: the Server's own.
	Clients *Clients
	// ListenerID is the socket's listener id, its place (from 1) among
	// the configuration's stats socket lines, which haproxy writes in
	// show sess for a Unix socket's clients ("src=unix:2"); 0 means 1.
	ListenerID int
}

// Server answers runtime API connections.
type Server struct {
	opts       Options
	log        *slog.Logger
	level      atomic.Int32 // the Level a new connection starts at
	listenerID atomic.Int32
	clients    *Clients

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// New returns a Server for opts.
func New(opts Options) *Server {
	if opts.Level == 0 {
		opts.Level = LevelUser
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{opts: opts, log: log, conns: map[net.Conn]struct{}{}, clients: opts.Clients}
	if s.clients == nil {
		s.clients = NewClients()
	}
	s.level.Store(int32(opts.Level))
	s.SetListenerID(opts.ListenerID)
	return s
}

// SetListenerID sets the socket's listener id (0 means 1), as a reload
// that moves its stats socket line changes it.
func (s *Server) SetListenerID(id int) { s.listenerID.Store(int32(max(id, 1))) }

// SetLevel sets the level of the connections accepted from now on.
func (s *Server) SetLevel(l Level) { s.level.Store(int32(l)) }

// Serve accepts connections on ln until ln is closed, and returns nil
// then. Each connection is served on its own goroutine.
func (s *Server) Serve(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		sess := &session{level: Level(s.level.Load()), srv: s, conn: c, accepted: s.opts.Now()}
		s.clients.add(sess)
		go func() {
			defer func() {
				s.clients.remove(sess)
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				_ = c.Close()
			}()
			s.serveConn(sess)
		}()
	}
}

// CloseConns closes every open connection (the listener is the caller's).
func (s *Server) CloseConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
	}
}

// session is one connection's state.
type session struct {
	level       Level
	interactive bool
	quit        bool
	// killed: shutdown session named this connection itself; it ends
	// once that command's answer is written.
	killed bool

	// Set at the accept, for show sess.
	srv      *Server
	conn     net.Conn
	accepted time.Time
}

func (s *Server) serveConn(sess *session) {
	c := sess.conn
	r := bufio.NewReaderSize(c, 4096)
	w := bufio.NewWriter(c)
	for !sess.quit {
		_ = c.SetReadDeadline(time.Now().Add(s.opts.IdleTimeout)) // I/O deadlines run on the real clock
		line, err := readLine(r)
		if err != nil && line == "" {
			if errors.Is(err, errLineTooLong) {
				_, _ = w.WriteString("Line too long.\n\n")
				_ = w.Flush()
			}
			return
		}
		wasInteractive := sess.interactive
		s.execLine(sess, line, w)
		if sess.interactive && !sess.quit {
			_, _ = w.WriteString("> ")
		}
		_ = c.SetWriteDeadline(time.Now().Add(s.opts.IdleTimeout))
		if w.Flush() != nil || sess.killed {
			return
		}
		// Non-interactive: answer the lines already received, then
		// close, as haproxy does. A connection that just left prompt
		// mode ends too.
		if !sess.interactive && (r.Buffered() == 0 || wasInteractive) {
			return
		}
		if err != nil {
			return
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its end, up to maxLine bytes.
func readLine(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		frag, err := r.ReadSlice('\n')
		b.Write(frag)
		if b.Len() > maxLine {
			return "", errLineTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		line := strings.TrimRight(b.String(), "\r\n")
		if err != nil && err != io.EOF {
			return line, err
		}
		if err == io.EOF {
			return line, io.EOF
		}
		return line, nil
	}
}

// execLine runs the ';'-separated commands of one line, writing each
// answer followed by an empty line.
func (s *Server) execLine(sess *session, line string, w io.Writer) {
	for _, cmd := range splitCommands(line) {
		words := strings.Fields(cmd)
		if len(words) == 0 {
			continue
		}
		out := s.exec(sess, words)
		_, _ = io.WriteString(w, out)
		if sess.quit {
			return
		}
		_, _ = io.WriteString(w, "\n")
		if sess.killed {
			return
		}
	}
}

// splitCommands splits a line at the ';' not escaped by a backslash.
func splitCommands(line string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\' && i+1 < len(line) && line[i+1] == ';':
			cur.WriteByte(';')
			i++
		case c == ';':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(out, cur.String())
}

// command is one runtime API command.
type command struct {
	words []string // the words that name it
	usage string   // the rest of its syntax, for help
	help  string
	level Level
	run   func(s *Server, sess *session, args []string) string
}

var commands []command

func init() {
	commands = []command{
		{[]string{"disable", "server"}, "<bk>/<srv>", "disable a server for maintenance (use 'set server' instead)", LevelAdmin, (*Server).disableServer},
		{[]string{"enable", "server"}, "<bk>/<srv>", "enable a disabled server (use 'set server' instead)", LevelAdmin, (*Server).enableServer},
		{[]string{"get", "weight"}, "<bk>/<srv>", "report a server's current weight", LevelUser, (*Server).getWeight},
		{[]string{"operator"}, "", "lower the level of the current CLI session to operator", LevelOperator, (*Server).toOperator},
		{[]string{"set", "server"}, "<bk>/<srv> state ready|drain|maint | weight <w>[%]", "change a server's state or weight", LevelAdmin, (*Server).setServer},
		{[]string{"set", "weight"}, "<bk>/<srv> <w>[%]", "change a server's weight (use 'set server' instead)", LevelAdmin, (*Server).setWeight},
		{[]string{"show", "backend"}, "", "list backends in the current running config", LevelUser, (*Server).showBackend},
		{[]string{"show", "cli", "level"}, "", "display the level of the current CLI session", LevelUser, (*Server).showLevel},
		{[]string{"show", "info"}, "[json|typed]", "report information about the running process", LevelUser, (*Server).showInfo},
		{[]string{"show", "servers", "state"}, "[<backend>]", "dump volatile server information (all or for a single backend)", LevelUser, (*Server).showServersState},
		{[]string{"show", "sess"}, "[<id>|all]", "list the connections being relayed, or show one in detail", LevelOperator, (*Server).showSess},
		{[]string{"show", "stat"}, "[json|typed|no-maint|up]* [<iid> <type> <sid>]", "report counters for each proxy and server", LevelUser, (*Server).showStat},
		{[]string{"show", "version"}, "", "show version of the current process", LevelUser, (*Server).showVersion},
		{[]string{"shutdown", "session"}, "[id]", "close a connection show sess lists", LevelAdmin, (*Server).shutdownSession},
		{[]string{"shutdown", "sessions", "server"}, "<bk>/<srv>", "close every connection of a server", LevelAdmin, (*Server).shutdownSessions},
		{[]string{"user"}, "", "lower the level of the current CLI session to user", LevelUser, (*Server).toUser},
		{[]string{"help"}, "[<command>]", "list matching or all commands", LevelUser, (*Server).help},
		{[]string{"prompt"}, "", "toggle interactive mode with prompt", LevelUser, (*Server).prompt},
		{[]string{"quit"}, "", "disconnect", LevelUser, (*Server).quit},
	}
}

func (c command) matches(words []string) bool {
	if len(words) < len(c.words) {
		return false
	}
	for i, w := range c.words {
		if words[i] != w {
			return false
		}
	}
	return true
}

func (s *Server) exec(sess *session, words []string) string {
	for _, c := range commands {
		if !c.matches(words) {
			continue
		}
		if sess.level < c.level {
			return "Permission denied\n"
		}
		return c.run(s, sess, words[len(c.words):])
	}
	return "Unknown command: '" + strings.Join(words, " ") + "'. vipstack serves:\n" + s.helpText(sess, nil)
}

func (s *Server) helpText(sess *session, prefix []string) string {
	var b strings.Builder
	for _, c := range commands {
		if sess.level < c.level {
			continue
		}
		if len(prefix) > 0 && !strings.HasPrefix(strings.Join(c.words, " "), strings.Join(prefix, " ")) {
			continue
		}
		fmt.Fprintf(&b, "  %-40s: %s\n", strings.TrimSpace(strings.Join(c.words, " ")+" "+c.usage), c.help)
	}
	return b.String()
}

func (s *Server) help(sess *session, args []string) string {
	return "The following commands are valid at this level:\n" + s.helpText(sess, args)
}

func (s *Server) prompt(sess *session, _ []string) string {
	sess.interactive = !sess.interactive
	return ""
}

func (s *Server) quit(sess *session, _ []string) string {
	sess.quit = true
	return ""
}

func (s *Server) toOperator(sess *session, _ []string) string {
	sess.level = min(sess.level, LevelOperator)
	return ""
}

func (s *Server) toUser(sess *session, _ []string) string {
	sess.level = LevelUser
	return ""
}

func (s *Server) showLevel(sess *session, _ []string) string {
	return sess.level.String() + "\n"
}

func (s *Server) showVersion(*session, []string) string {
	return s.opts.Version + "\n"
}

func (s *Server) showBackend(*session, []string) string {
	var b strings.Builder
	b.WriteString("# name\n")
	for _, be := range s.opts.Balancer.Snapshot().Backends {
		b.WriteString(be.Name + "\n")
	}
	return b.String()
}

// showStat is haproxy's `show stat`: the stats CSV (or JSON), with its
// filters. As in haproxy 2.6, three or more arguments start with the
// proxy (name or id), the object types (1 frontend, 2 backend, 4 server,
// -1 all) and the server id (-1 all).
func (s *Server) showStat(_ *session, args []string) string {
	snap := s.opts.Balancer.Snapshot()
	f := lbstats.StatFilter{ProxyID: -1, Types: -1, ServerID: -1}
	flags := args
	if len(args) >= 3 {
		// A proxy name, or C's atoi of the word: 0 is no proxy, -1 all.
		iid := snap.ProxyID(args[0])
		if iid == 0 {
			iid = atoi(args[0])
		}
		if iid == 0 {
			return "No such proxy.\n"
		}
		f.ProxyID = iid
		f.Types = atoi(args[1])
		f.ServerID = atoi(args[2])
		flags = args[3:]
	}
	json, typed := false, false
	for _, a := range flags {
		switch a {
		case "json":
			json = true
		case "typed":
			typed = true
		case "up":
			f.UpOnly = true
		case "no-maint":
			f.NoMaint = true
		case "desc":
			// haproxy adds descriptions to typed and JSON output only;
			// vipstack has none to add.
		}
	}
	snap = snap.Filter(f)
	if typed {
		return snap.Typed()
	}
	if json {
		return string(snap.JSON()) + "\n"
	}
	return snap.CSV()
}

// atoi is C's: a number, or 0.
func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// checkStatusCode is haproxy 2.6's enum healthcheck_status value of a
// check status (measured with `show servers state`: L4OK 6, L4CON 8, L6OK
// 9, L6TOUT 10, L6RSP 11, L7TOUT 12, L7RSP 13, L7OK 15, L7STS 17; the
// others by their place in the enum).
var checkStatusCode = map[string]int{
	"INI": 1, "SOCKERR": 5, "L4OK": 6, "L4TOUT": 7, "L4CON": 8, "L6OK": 9, "L6TOUT": 10, "L6RSP": 11,
	"L7TOUT": 12, "L7RSP": 13, "L7OK": 15, "L7STS": 17, "PROCERR": 18, "PROCTOUT": 19, "PROCOK": 20,
}

// serversStateHeader is haproxy 2.6's `show servers state` header, after
// its format version line.
const serversStateHeader = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight " +
	"srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state " +
	"bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n"

// showServersState is haproxy's `show servers state [backend]`, one line
// per server in its format version 1.
func (s *Server) showServersState(_ *session, args []string) string {
	snap := s.opts.Balancer.Snapshot()
	var b strings.Builder
	found := len(args) == 0
	for _, be := range snap.Backends {
		if len(args) > 0 && be.Name != args[0] {
			continue
		}
		found = true
	}
	if !found {
		return "Can't find backend.\n"
	}
	b.WriteString(serversStateHeader)
	for _, be := range snap.Backends {
		if len(args) > 0 && be.Name != args[0] {
			continue
		}
		beID := snap.ProxyID(be.Name)
		for i, sv := range be.Servers {
			b.WriteString(serverStateLine(beID, be.Name, i+1, sv))
		}
	}
	return b.String()
}

func serverStateLine(beID int, backend string, sid int, sv lbstats.ServerStats) string {
	host, port := sv.Addr, "0"
	if ap, err := netAddrPort(sv.Addr); err == nil {
		host, port = ap[0], ap[1]
	} else if strings.HasPrefix(sv.Addr, "abns@") {
		host = "-" // haproxy 2.6 shows no address for a UNIX socket server (measured)
	}
	opState := 0 // SRV_ST_STOPPED
	if sv.Up && sv.Admin != lbstats.AdminMaint {
		opState = 2 // SRV_ST_RUNNING
	}
	admin := 0
	switch sv.Admin {
	case lbstats.AdminMaint:
		admin = 1 // SRV_ADMF_FMAINT
	case lbstats.AdminDrain:
		admin = 8 // SRV_ADMF_DRAIN
	}
	status, result, checkState := 1, 0, 0 // INI, unknown, no check
	if sv.Check {
		checkState = 6 // CHK_ST_CONFIGURED | CHK_ST_ENABLED
		if sv.Admin == lbstats.AdminMaint {
			checkState |= 8 // CHK_ST_PAUSED
		}
		if code, ok := checkStatusCode[sv.CheckStatus]; ok {
			status = code
			result = 2 // CHK_RES_FAILED
			if sv.CheckStatus == "L4OK" || sv.CheckStatus == "L6OK" || sv.CheckStatus == "L7OK" {
				result = 3 // CHK_RES_PASSED
			}
		}
	}
	return fmt.Sprintf("%d %s %d %s %s %d %d %d %d %d %d %d %d %d 0 0 0 - %s - 0 0 - - 0\n",
		beID, backend, sid, sv.Name, host, opState, admin, sv.Weight, sv.InitialWeight, sv.LastChangeSeconds,
		status, result, sv.CheckHealth, checkState, port)
}

// netAddrPort splits "ip:port" or "[ip6]:port".
func netAddrPort(s string) ([2]string, error) {
	host, port, err := net.SplitHostPort(s)
	return [2]string{host, port}, err
}

// serverArg splits "backend/server", with haproxy's answer when it is not.
func serverArg(args []string) (backend, server, errText string) {
	if len(args) == 0 {
		return "", "", "Require 'backend/server'.\n"
	}
	backend, server, ok := strings.Cut(args[0], "/")
	if !ok || backend == "" || server == "" {
		return "", "", "Require 'backend/server'.\n"
	}
	return backend, server, ""
}

func (s *Server) getWeight(_ *session, args []string) string {
	backend, server, e := serverArg(args)
	if e != "" {
		return e
	}
	for _, be := range s.opts.Balancer.Snapshot().Backends {
		if be.Name != backend {
			continue
		}
		for _, sv := range be.Servers {
			if sv.Name == server {
				return fmt.Sprintf("%d (initial %d)\n", sv.Weight, sv.InitialWeight)
			}
		}
		return "No such server.\n"
	}
	return "No such backend.\n"
}

// findServer returns the backend and server of "backend/server" in the
// snapshot, or haproxy's answer when there is none.
func findServer(snap lbstats.Snapshot, args []string) (lbstats.BackendStats, lbstats.ServerStats, string) {
	backend, server, e := serverArg(args)
	if e != "" {
		return lbstats.BackendStats{}, lbstats.ServerStats{}, e
	}
	for _, be := range snap.Backends {
		if be.Name != backend {
			continue
		}
		for _, sv := range be.Servers {
			if sv.Name == server {
				return be, sv, ""
			}
		}
		return lbstats.BackendStats{}, lbstats.ServerStats{}, "No such server.\n"
	}
	return lbstats.BackendStats{}, lbstats.ServerStats{}, "No such backend.\n"
}

// parseWeight reads a weight argument as haproxy 2.6 does: an integer in
// C's strtol syntax (an optional sign, decimal digits), alone for an
// absolute weight (0 to 256) or followed by '%' for a share of the
// configured weight (any share from 0, the result capped at 256). Its
// error texts are haproxy's (measured; the first two end with no newline
// in haproxy's answer).
func parseWeight(arg string, initial int) (int, string) {
	i := 0
	if i < len(arg) && (arg[i] == '+' || arg[i] == '-') {
		i++
	}
	j := i
	for j < len(arg) && arg[j] >= '0' && arg[j] <= '9' {
		j++
	}
	if j == i {
		return 0, "Empty weight string empty or preceded by garbage"
	}
	relative := j < len(arg) && arg[j] == '%'
	rest := arg[j:]
	if relative {
		rest = rest[1:]
	}
	if rest != "" {
		return 0, "Trailing garbage in weight string"
	}
	n, err := strconv.ParseInt(arg[:j], 10, 64)
	if err != nil { // out of range: strtol saturates
		n = math.MaxInt64
		if arg[0] == '-' {
			n = math.MinInt64
		}
	}
	if relative {
		if n < 0 {
			return 0, "Relative weight must be positive.\n"
		}
		n = min(n, 1<<40) // no overflow below; the result is capped anyway
		return int(min(int64(initial)*n/100, lb.MaxWeight)), ""
	}
	if n < 0 || n > lb.MaxWeight {
		return 0, "Absolute weight can only be between 0 and 256 inclusive.\n"
	}
	return int(n), ""
}

// setWeight is `set weight <b>/<s> <w>[%]`; `set server <b>/<s> weight`
// is the same.
func (s *Server) setWeight(_ *session, args []string) string {
	be, sv, e := findServer(s.opts.Balancer.Snapshot(), args)
	if e != "" {
		return e
	}
	if len(args) < 2 {
		return "Require <weight> or <weight%>.\n"
	}
	w, e := parseWeight(args[1], sv.InitialWeight)
	if e != "" {
		return e
	}
	err := s.opts.Balancer.SetServerWeight(be.Name, sv.Name, w)
	if errors.Is(err, lb.ErrStaticWeight) {
		return "Backend is using a static LB algorithm and only accepts weights '0%' and '100%'.\n"
	}
	if err != nil {
		return errText(err)
	}
	s.log.Info("server weight set from the runtime API", "server", be.Name+"/"+sv.Name, "weight", w, "initial", sv.InitialWeight)
	return ""
}

// shutdownSessions is `shutdown sessions server <b>/<s>`: every
// connection of the server is closed.
func (s *Server) shutdownSessions(_ *session, args []string) string {
	backend, server, e := serverArg(args)
	if e != "" {
		return e
	}
	n, err := s.opts.Balancer.ShutdownServerSessions(backend, server)
	if err != nil {
		return errText(err)
	}
	s.log.Info("server's connections shut down from the runtime API", "server", backend+"/"+server, "connections", n)
	return ""
}

func (s *Server) disableServer(_ *session, args []string) string {
	return s.setAdmin(args, lbstats.AdminMaint)
}

func (s *Server) enableServer(_ *session, args []string) string {
	return s.setAdmin(args, lbstats.AdminReady)
}

func (s *Server) setServer(_ *session, args []string) string {
	if len(args) < 2 {
		if _, _, e := serverArg(args); e != "" {
			return e
		}
		return "usage: set server <backend>/<server> state ready|drain|maint | weight <w>[%] (vipstack serves 'state' and 'weight')\n"
	}
	if args[1] == "weight" {
		return s.setWeight(nil, append(args[:1:1], args[2:]...))
	}
	if args[1] != "state" {
		return "'set server <srv> " + args[1] + "' is not served by vipstack; it serves 'set server <backend>/<server> state ready|drain|maint' and 'weight <w>[%]'.\n"
	}
	st := lbstats.AdminState(-1)
	if len(args) >= 3 {
		switch args[2] {
		case "ready":
			st = lbstats.AdminReady
		case "drain":
			st = lbstats.AdminDrain
		case "maint":
			st = lbstats.AdminMaint
		}
	}
	if st < 0 {
		return "'set server <srv> state' expects 'ready', 'drain' and 'maint'.\n"
	}
	return s.setAdmin(args[:1], st)
}

func (s *Server) setAdmin(args []string, st lbstats.AdminState) string {
	backend, server, e := serverArg(args)
	if e != "" {
		return e
	}
	err := s.opts.Balancer.SetServerAdmin(backend, server, st)
	if err != nil {
		return errText(err)
	}
	s.log.Info("server state set from the runtime API", "server", backend+"/"+server, "state", st.String())
	return ""
}

// errText is haproxy's answer to a server command whose backend or server
// does not exist, or the error itself.
func errText(err error) string {
	switch {
	case errors.Is(err, lb.ErrNoBackend):
		return "No such backend.\n"
	case errors.Is(err, lb.ErrNoServer):
		return "No such server.\n"
	}
	return err.Error() + "\n"
}
