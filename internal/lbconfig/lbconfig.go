package lbconfig

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is a whole load balancer.
type Config struct {
	// MaxConn bounds concurrent client connections per frontend (haproxy
	// `maxconn` in defaults); further clients wait in a queue.
	MaxConn int
	// GlobalMaxConn is haproxy's `maxconn` in global: a cap on client
	// connections over all frontends together. 0 means not set. Validate
	// uses it as MaxConn's default.
	GlobalMaxConn int
	Retries       int // connection attempts after the first failure, each to another server when one is up
	Timeouts      Timeouts

	Frontends []Frontend
	Backends  []Backend // referenced by name from frontends
	Monitors  []Monitor // `listen ... monitor-uri`
	Stats     []Stats   // `listen stats`

	// Proxies are the frontend, backend and listen sections in file order,
	// by key (FrontendKey, BackendKey, ListenKey): haproxy numbers its
	// proxies in this order (the stats page's iid). Empty means the order
	// of ProxyOrder.
	Proxies []string
	// ProxyIDs are the sections' own numbers (haproxy's `id N` in a
	// frontend, backend or listen), by the keys of Proxies; the others
	// are numbered around them (ProxyNumbers).
	ProxyIDs map[string]int
	// StatsSocket is set by `stats socket` in global: haproxy then gives the
	// socket's CLI proxy the first proxy number and the sections start at 2.
	// Validate sets it when StatsSockets has any.
	StatsSocket bool
	// StatsSockets are where the runtime API listens (haproxy's `stats
	// socket` lines): see internal/lbcli.
	StatsSockets []StatsSocket
	// LogTag is the tag of the syslog messages (haproxy's `log-tag` in
	// global); empty means "haproxy" (see internal/lb's doc).
	LogTag string

	// PIDFile is where `vipstack lb` writes its process id at start and
	// removes it at exit (haproxy's `pidfile` in global); empty: none.
	PIDFile string
	// User and Group are who `vipstack lb` runs as once its listeners
	// and runtime API sockets are open (haproxy's `user`/`uid` and
	// `group`/`gid` in global): a name or a number; empty keeps root.
	User, Group string
	// Chroot is the directory `vipstack lb` makes its root once its
	// sockets are open (haproxy's `chroot`); empty: none.
	Chroot string
	// UlimitN is the open-file limit `vipstack lb` sets for itself at
	// start (haproxy's `ulimit-n`); 0 leaves the one it got.
	UlimitN int
	// SpreadChecks spreads each check interval randomly by up to this
	// percentage either way (haproxy's `spread-checks`, 0..50).
	SpreadChecks int
	// ExternalCheck is global's `external-check`, which haproxy requires
	// before any section's `option external-check`; InsecureForkWanted
	// is `insecure-fork-wanted`, without which haproxy warns that such
	// checks will likely fail.
	ExternalCheck, InsecureForkWanted bool
	// HardStopAfter bounds a soft stop: connections still open after
	// it are closed (haproxy's `hard-stop-after`); 0: none.
	HardStopAfter time.Duration
	// LogHostname is the host name put in the syslog header of every
	// message (haproxy's `log-send-hostname [NAME]`: NAME, or the
	// host's name); empty: none, as haproxy without it.
	LogHostname string
	// NbThread caps the threads that run Go code (GOMAXPROCS), as
	// haproxy's `nbthread` caps its threads; 0 leaves Go's default (one
	// per CPU, as haproxy 2.6's).
	NbThread int
	// BufSize is haproxy's tune.bufsize (0: its default, DefaultBufSize)
	// and MaxRewrite its tune.maxrewrite (nil: its default,
	// DefaultMaxRewrite): the request head a monitor or stats listener
	// takes must fit in them as haproxy's does (HeadLimits).
	BufSize    int
	MaxRewrite *int

	// Resolvers are the `resolvers` sections: DNS servers that servers
	// naming them (Server.Resolvers) are re-resolved with.
	Resolvers []Resolvers
	// Peers are the `peers` sections kept (stick.go); LocalPeer is
	// global's `localpeer` ("": the host's name).
	Peers     []Peers
	LocalPeer string

	// Source says where each piece was read, for error messages: keys
	// like "backend masters/server m0" map to "file:line". The key scheme
	// is in validate.go (FrontendKey, ItemKey, ServerKey, BindKey, ...).
	Source map[string]string

	// Warnings are non-fatal notes from the reader and from Validate, each
	// starting with "file:line: " when the position is known: settings
	// vipstack accepts but does not act on, and doubtful but valid
	// settings.
	Warnings []string
}

// StatsSocket is one `stats socket` line: an address for the runtime API.
type StatsSocket struct {
	// Network is "unix" (Address is a file path) or "tcp" (Address is
	// IP:PORT or [IPv6]:PORT).
	Network string
	Address string
	// Mode is a Unix socket's permission bits (haproxy's `mode`, octal);
	// 0 leaves them to the umask.
	Mode uint32
	// Level is what a connection may do: user (the default), operator or
	// admin.
	Level string
	// User and Group own a Unix socket (haproxy's `user`/`uid` and
	// `group`/`gid`): a name or a number; empty leaves the process's.
	User, Group string
	// IdleTimeout closes a connection that sends no line for this long
	// (haproxy's `stats timeout` in global); 0 means lbcli's default,
	// haproxy's 10s.
	IdleTimeout time.Duration
}

// StatsSocketLevels are the accepted StatsSocket.Level values.
var StatsSocketLevels = []string{"user", "operator", "admin"}

// Timeouts are haproxy's `timeout` settings. Zero means not set.
type Timeouts struct {
	Connect       time.Duration
	Client        time.Duration
	Server        time.Duration
	Tunnel        time.Duration
	Queue         time.Duration
	HTTPRequest   time.Duration
	HTTPKeepAlive time.Duration
	// Check is haproxy's `timeout check`: with it, a health check may
	// take min(Connect, inter) to connect and Check more to answer
	// (Server.CheckTimeout).
	Check time.Duration
	// ClientFin and ServerFin replace Client and Server once that side
	// has closed its half of the connection (haproxy's `timeout
	// client-fin`, `timeout server-fin`).
	ClientFin time.Duration
	ServerFin time.Duration
}

// Or is t with each unset field taken from d: a section's own timeouts
// over those of defaults.
func (t Timeouts) Or(d Timeouts) Timeouts {
	pick := func(a, b time.Duration) time.Duration {
		if a != 0 {
			return a
		}
		return b
	}
	return Timeouts{
		Connect: pick(t.Connect, d.Connect), Client: pick(t.Client, d.Client), Server: pick(t.Server, d.Server),
		Tunnel: pick(t.Tunnel, d.Tunnel), Queue: pick(t.Queue, d.Queue), HTTPRequest: pick(t.HTTPRequest, d.HTTPRequest),
		HTTPKeepAlive: pick(t.HTTPKeepAlive, d.HTTPKeepAlive), Check: pick(t.Check, d.Check),
		ClientFin: pick(t.ClientFin, d.ClientFin), ServerFin: pick(t.ServerFin, d.ServerFin),
	}
}

// Effective returns the timeouts a connection of frontend f to backend b
// (nil: none) runs with: the client side's (Client, ClientFin,
// HTTPRequest, HTTPKeepAlive) from f, the server side's (Connect,
// Server, ServerFin, Tunnel, Queue, Check) from b, each over Timeouts,
// as haproxy takes them.
func (c *Config) Effective(f *Frontend, b *Backend) Timeouts {
	fe := f.Timeouts.Or(c.Timeouts)
	be := c.Timeouts
	if b != nil {
		be = b.Timeouts.Or(c.Timeouts)
	}
	fe.Connect, fe.Server, fe.ServerFin, fe.Tunnel, fe.Queue, fe.Check = be.Connect, be.Server, be.ServerFin, be.Tunnel, be.Queue, be.Check
	return fe
}

// Frontend accepts client connections and sends them to a backend.
type Frontend struct {
	Name    string
	Binds   []Bind
	Backend string
	// Log is the connection log's format; nil, with LogTargets, sends
	// haproxy's "Connect from" line at accept instead.
	Log *ConnLog
	// LogTargets receive the frontend's connection lines (haproxy's `log`
	// lines in defaults and the frontend); none sends none.
	LogTargets []LogTarget
	// LogTag is the tag of the section's syslog messages (its own
	// `log-tag`, or defaults'); empty: Config.LogTag.
	LogTag string
	// HTTP makes the frontend an HTTP reverse proxy (mode http); nil
	// relays TCP.
	HTTP *HTTPFrontend
	// Timeouts are the frontend's own (timeout lines in the section);
	// unset ones come from Config.Timeouts. Of them, the client side's
	// apply (Config.Effective).
	Timeouts Timeouts
	// MaxConn caps the frontend's concurrent clients (`maxconn` in the
	// section); 0 means Config.MaxConn.
	MaxConn int
	// KeepAlive turns TCP keep-alives (SO_KEEPALIVE) on for the client
	// sockets (`option clitcpka`, or `option tcpka` in the frontend).
	KeepAlive bool
	// TCPRequest are the frontend's tcp-request rules (mode tcp); nil:
	// none.
	TCPRequest *TCPRequest
}

// Bind is one listening address. An unspecified address with V4V6 listens
// on every IPv4 and IPv6 address (haproxy `bind :::9445 v4v6`).
type Bind struct {
	Addr netip.AddrPort // unspecified address (0.0.0.0 or ::) for all
	V4V6 bool
	// V6Only: an unspecified IPv6 address takes IPv6 only (`v6only`),
	// whatever the system's default.
	V6Only bool
	// Host is the original host text when it was a name such as
	// "localhost" (resolved by the listener).
	Host string
	// TLS is `ssl` and its parameters: the bind terminates TLS (in a
	// frontend only); nil: plain TCP.
	TLS *BindTLS
	// Abstract is the name of an abstract UNIX socket (`bind abns@NAME`)
	// the bind listens on instead of Addr, which is then unset: haproxy's
	// way to chain a server of one section to a bind of another (`server
	// NAME abns@NAME`). Mode http frontends only.
	Abstract string
	// Sock are the options of the listening socket.
	Sock BindSock
}

// BindSock are the bind parameters that set options on the listening
// socket, with the values haproxy 2.6 gives them.
type BindSock struct {
	// DeferAccept (`defer-accept`): TCP_DEFER_ACCEPT of one second, so
	// a client is accepted once it has sent data (or the kernel gave up
	// waiting).
	DeferAccept bool
	// TFO (`tfo`): TCP_FASTOPEN, its queue as long as the backlog.
	TFO bool
	// Interface (`interface NAME`): SO_BINDTODEVICE, only clients
	// arriving on that interface.
	Interface string
	// Transparent (`transparent`): IP_TRANSPARENT (IPV6_TRANSPARENT),
	// listening on an address that is not the host's.
	Transparent bool
	// Backlog (`backlog N` on the bind, else the proxy's): the length of
	// the listen queue; 0: haproxy's, the frontend's maxconn.
	Backlog int
}

// String writes s as the bind parameters that set it ("" when none).
func (s BindSock) String() string {
	var out []string
	if s.DeferAccept {
		out = append(out, "defer-accept")
	}
	if s.TFO {
		out = append(out, "tfo")
	}
	if s.Interface != "" {
		out = append(out, "interface "+s.Interface)
	}
	if s.Transparent {
		out = append(out, "transparent")
	}
	if s.Backlog > 0 {
		out = append(out, "backlog "+strconv.Itoa(s.Backlog))
	}
	return strings.Join(out, " ")
}

// MaxAbstract is the longest abstract socket name: sun_path's 108 bytes
// less the leading NUL.
const MaxAbstract = 107

// AbstractPath is the address Go's net package takes for the abstract
// UNIX socket name as haproxy binds and connects to it: the name after
// the leading NUL, padded with NULs to the whole of sun_path (haproxy
// gives the full sockaddr_un's length, and an abstract address is its
// bytes up to that length, so "x" and "x" padded are different sockets).
func AbstractPath(name string) string {
	return "@" + name + strings.Repeat("\x00", max(MaxAbstract-len(name), 0))
}

// Balance is the server selection algorithm.
type Balance string

const (
	RoundRobin Balance = "roundrobin"
	LeastConn  Balance = "leastconn"
	Source     Balance = "source"
	// StaticRR takes the servers in turn by their weights as at load,
	// haproxy's map of slots walked in order (the map source indexes).
	StaticRR Balance = "static-rr"
	// First sends each connection to the first server, by id, with a
	// free connection slot (below its maxconn).
	First Balance = "first"
	// Random draws two servers at random, by weight, and takes the one
	// with fewer connections per unit of weight (haproxy 2.6's random,
	// whose draws default to 2).
	Random Balance = "random"
	// URI and Header hash the request's path or a header (mode http).
	URI    Balance = "uri"
	Header Balance = "hdr"
)

// Backend is a set of servers.
type Backend struct {
	Name    string
	Balance Balance
	Check   HTTPCheck // Method == "" means TCP connect checks
	// TCPCheck is `option tcp-check`'s dialogue (`tcp-check` rules); empty
	// means a connect check. Not with Check.
	TCPCheck []TCPCheckRule
	// SSLHelloCheck is `option ssl-hello-chk`: a TLS ClientHello that a
	// TLS answer passes. Not with Check or TCPCheck.
	SSLHelloCheck     bool
	LogHealthChecks   bool
	Servers           []Server
	DontLogNull       bool
	RedispatchOnRetry bool // `option redispatch`; vipstack always retries on another server, see docs
	// LogTargets receive the backend's health check lines (with
	// LogHealthChecks) and its servers' state changes.
	LogTargets []LogTarget
	// LogTag is the tag of the section's syslog messages (its own
	// `log-tag`, or defaults'); empty: Config.LogTag.
	LogTag string
	// HTTP is the backend's mode http settings; nil for mode tcp.
	HTTP *HTTPBackend
	// Timeouts are the backend's own; of them the server side's apply
	// (Config.Effective).
	Timeouts Timeouts
	// Retries is the backend's own `retries`; 0 means Config.Retries.
	Retries int
	// KeepAlive turns TCP keep-alives (SO_KEEPALIVE) on for the server
	// sockets (`option srvtcpka`, or `option tcpka` in the backend).
	KeepAlive bool
	// HashType is `hash-type`: "consistent" maps balance source's
	// clients on a ring of the servers, so that a server going DOWN or
	// coming back moves only its own clients; "" or "map-based" take the
	// hash modulo the servers' total weight.
	HashType string
	// PgSQLUser is `option pgsql-check user NAME`: a PostgreSQL startup
	// message for NAME (healthcheck.PgSQL); "" for none.
	PgSQLUser string
	// RedisCheck is `option redis-check`: a PING in Redis's protocol,
	// passing on +PONG (healthcheck.Redis).
	RedisCheck bool
	// MySQLCheck is `option mysql-check`: the MySQL handshake (and,
	// with a user, an authentication) checked; nil: not this check.
	MySQLCheck *MySQLCheck
	// ExternalCheck is `option external-check` with its `external-check
	// command` and `path`: each check runs a program (extcheck.go); nil:
	// not this check.
	ExternalCheck *ExternalCheck
	// StickTable is the backend's `stick-table`, nil without one;
	// StickRules its `stick on|match|store-request` rules (stick.go).
	StickTable *StickTable
	StickRules []StickRule
	// FullConn is `fullconn`: the backend's session limit as its stats
	// show it (slim); 0: haproxy's default (stats.FullConn). haproxy
	// scales servers' minconn by it, which vipstack does not read.
	FullConn int
	// AllBackups uses every UP backup server at once when no other
	// server is UP (`option allbackups`), instead of the first.
	AllBackups bool
	// AbortOnClose (`option abortonclose`) drops a client that closed
	// its side while waiting in the queue or for its server's connect,
	// even when it sent bytes first: they never reach a server. Without
	// it such a client waits for its server, which gets the bytes.
	AbortOnClose bool
}

// HTTPCheck is `option httpchk METHOD URI VERSION`.
type HTTPCheck struct {
	Method, URI, Version string
	// ExpectStatus is `http-check expect status`: codes and ranges,
	// comma separated ("200", "200-399,401"); empty means 2xx and 3xx.
	ExpectStatus string
	// ExpectBody is `http-check expect [!] string|rstring`: the answer's
	// body decides, whatever its status; nil: none.
	ExpectBody *BodyExpect
	// Headers and Body go with the request: `http-check send hdr NAME
	// VALUE ... body STRING`, or haproxy's older form, header lines
	// after the version of `option httpchk` (httpcheck.go).
	Headers []HTTPCheckHeader
	Body    string
	// Connect is an explicit `http-check connect` rule, and ConnectPort
	// its `port PORT`: checks connect to it instead of the server's port
	// or its `port`; 0: none. With the rule, checks send no PROXY
	// header (Server.SendProxy), as haproxy's.
	Connect     bool
	ConnectPort int
}

// BodyExpect is an HTTP check's expectation on the answer's body, as
// much of it as the check's buffer holds: it contains Text (`string`),
// or Text is a regular expression that matches it (`rstring`); Not
// (`!`) fails the check when it does.
type BodyExpect struct {
	Text  string
	Regex bool
	Not   bool
}

// TCPCheckRule is one `tcp-check` rule: a connect (Port, 0 for the
// server's), a Send or an Expect (`expect string`).
type TCPCheckRule struct {
	Connect bool
	Port    int
	Send    string
	Expect  string
}

// StatusRanges parses ExpectStatus into inclusive ranges.
func StatusRanges(s string) ([][2]int, error) {
	var out [][2]int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 100 || b > 599 || a > b {
			return nil, fmt.Errorf("status %q is not a code or range of codes 100..599 (accepted: 200, 200-399, 200,301)", part)
		}
		out = append(out, [2]int{a, b})
	}
	return out, nil
}

// Server is one backend server.
type Server struct {
	Name     string
	Addr     netip.AddrPort
	Weight   int  // 0..256, default 1
	Check    bool // health checks on
	CheckSSL bool // checks over TLS
	Verify   bool // verify the server certificate (false with `verify none`)
	Inter    time.Duration
	Fall     int
	Rise     int
	// Host is the host name Addr was resolved from at load, "" for an
	// IP address.
	Host string
	// Abstract is the name of the abstract UNIX socket the server is
	// (`server NAME abns@NAME`), Addr then unset. Mode http backends only,
	// without checks.
	Abstract string
	// CheckTimeout bounds one health check; 0 means Inter, haproxy's rule
	// without `timeout check`. The reader sets it from Timeouts.Check.
	CheckTimeout time.Duration

	// The parameters below are haproxy's of the same names (see
	// docs/haproxy-cfg.md); zero values mean haproxy's defaults.

	// FastInter is the check interval while the server changes state
	// (UP with failed checks, DOWN with passed ones); 0 means Inter.
	FastInter time.Duration
	// DownInter is the check interval while the server is DOWN; 0 means
	// Inter.
	DownInter time.Duration
	// CheckPort is the port health checks connect to (`port`); 0 means
	// Addr's.
	CheckPort int
	// ShutdownOnDown closes the server's connections when a check marks
	// it DOWN (`on-marked-down shutdown-sessions`).
	ShutdownOnDown bool
	// MaxConn caps the server's concurrent connections; further clients
	// wait in the backend's queue (`maxconn`); 0 means no cap.
	MaxConn int
	// MaxQueue caps the clients waiting for this server when it is full;
	// 0 means no cap.
	MaxQueue int
	// SlowStart ramps the server's weight up over this time after it
	// comes UP again (not at start, as in haproxy); 0 means none.
	SlowStart time.Duration
	// Backup servers take connections only while no other server of the
	// backend is UP; then the first UP one (all with
	// Backend.AllBackups).
	Backup bool
	// ID is the server's number on the stats page (sid); 0 means its
	// position in the backend.
	ID int
	// Resolvers names the Config.Resolvers section that re-resolves
	// Host while the LB runs (`resolvers NAME`); empty: resolved once,
	// at load. ResolvePrefer is the address family taken when a name has
	// both: "ipv6" (haproxy's default) or "ipv4".
	Resolvers     string
	ResolvePrefer string
	// InitAddr is `init-addr`: how the reader finds Host's first address
	// (last, libc, none, or an IP address, comma separated, tried in
	// order); empty means haproxy's "last,libc".
	InitAddr string
	// Unresolved: Host did not resolve at load and `init-addr none`
	// allowed that; the server stays in maintenance until its resolvers
	// find an address (Addr's IP is unspecified meanwhile).
	Unresolved bool
	// Disabled is `disabled`: the server starts in maintenance (MAINT),
	// without checks or traffic, until the runtime API's `enable server`
	// or `set server ... state ready`, as in haproxy.
	Disabled bool
	// SSL is `ssl`: connections to the server, and its health checks,
	// are TLS (in mode http backends), verified as Verify says.
	SSL bool
	// TLS are the parameters of the server's TLS, for SSL and for
	// CheckSSL (ca-file, sni, versions, ciphers; global's
	// ssl-default-server-* applied); nil: Go's and haproxy's defaults.
	TLS *ServerTLS
	// SendProxy writes a PROXY protocol header, version 1 or 2, on each
	// connection to the server before the client's bytes (haproxy's
	// `send-proxy`, `send-proxy-v2`); 0: none.
	SendProxy int
	// NoPort: the address was written without a port (Addr's is 0);
	// each connection goes to the port its client connected to, as in
	// haproxy. Checks then need CheckPort.
	NoPort bool
}

// Monitor is a `listen` section in `mode http` with a `monitor-uri`: it
// answers 200 while at least one server of any backend is up and has
// passed a check (or has none), 503 otherwise.
type Monitor struct {
	Name  string
	Binds []Bind
	URI   string
	// Log is the section's log format, nil for none: with it, each
	// request but the monitor's own is logged in it to LogTargets
	// (internal/lb/web.RequestLog), as haproxy does.
	Log *ConnLog
	// LogTargets receive haproxy's "Connect from ... (NAME/HTTP)" line
	// for each request; empty where the section has a log format
	// (haproxy then logs no monitor request).
	LogTargets []LogTarget
	// LogTag is the tag of the section's syslog messages (its own
	// `log-tag`, or defaults'); empty: Config.LogTag.
	LogTag string
	// ErrorFiles are defaults' errorfiles by status code (whole HTTP
	// answers): the section's own answers of those codes, as haproxy's
	// (internal/lb/web).
	ErrorFiles map[int][]byte
	// MaxConn is the section's own `maxconn`: past it, new clients wait
	// in the listening socket's queue until a client leaves, as in
	// haproxy; 0 keeps internal/lb/web's own cap, where a new client
	// takes the place of an idle one.
	MaxConn int
}

// Stats is a `listen` section with `stats enable`.
type Stats struct {
	// ErrorFiles: as Monitor's.
	ErrorFiles  map[int][]byte
	Name        string
	Binds       []Bind
	URI         string
	Refresh     time.Duration
	HideVersion bool
	Users       []UserPass // `stats auth USER:PASS`; empty means no auth
	// Log is the section's log format, nil for none: with it, each
	// request is logged in it to LogTargets (internal/lb/web.RequestLog).
	Log *ConnLog
	// LogTargets receive haproxy's "Connect from ... (NAME/HTTP)" line
	// for each request; empty where the section has a log format.
	LogTargets []LogTarget
	// LogTag is the tag of the section's syslog messages (its own
	// `log-tag`, or defaults'); empty: Config.LogTag.
	LogTag string
	// MonitorURI is a `monitor-uri` in the same listen: requests for it
	// get the monitor's answer, before the stats page's authentication,
	// as in haproxy; empty: none.
	MonitorURI string
	// Realm is the realm of the password prompt (`stats realm`); empty
	// means haproxy's "HAProxy Statistics".
	Realm string
	// Admin says which clients may change servers from the page (`stats
	// admin if|unless COND`): AdminNone, AdminAll or AdminLocal.
	Admin StatsAdmin
	// ShowNode shows the node's name on the page (`stats show-node
	// [NAME]`): Node, or the host name when Node is empty.
	ShowNode bool
	Node     string
	// Desc is shown on the page (`stats show-desc DESC`), and Legends
	// adds the legend of the rows' colours (`stats show-legends`).
	Desc    string
	Legends bool
	// Timeouts are the section's own (client, http-request,
	// http-keep-alive apply); unset ones come from Config.Timeouts.
	Timeouts Timeouts
	// MaxConn: as Monitor's.
	MaxConn int
	// Prometheus is `http-request use-service prometheus-exporter`:
	// matching requests get the figures in haproxy's exporter's format
	// (before the stats page); nil: none. (In an HTTP frontend or
	// backend the exporter is an HTTPRule with Action "use-service",
	// under any condition.)
	Prometheus *PrometheusService
}

// PrometheusService says which requests of a stats listen the exporter
// answers: those whose path is one of Paths (`if { path P... }`), or is
// none of them with Unless; every request when Paths is empty.
type PrometheusService struct {
	Paths  []string `yaml:"paths,omitempty"`
	Unless bool     `yaml:"unless,omitempty"`
}

// Matches reports whether a request for path goes to the exporter.
func (s *PrometheusService) Matches(path string) bool {
	if len(s.Paths) == 0 {
		return true
	}
	return slices.Contains(s.Paths, path) != s.Unless
}

// StatsAdmin is who may use the stats page's admin form.
type StatsAdmin int

const (
	AdminNone  StatsAdmin = iota // nobody: a POST gets ";st=DENY"
	AdminAll                     // `stats admin if TRUE`, `unless FALSE`
	AdminLocal                   // `stats admin if LOCALHOST`: clients from 127.0.0.0/8 and ::1
)

// UserPass is one stats user.
type UserPass struct{ User, Pass string }

// ProxyOrder is Proxies or, for a configuration not read from a file (the
// cluster file's, the YAML form's), frontends, monitors, stats, then
// backends: the order `vipstack render` writes haproxy.cfg in, so that a
// node running vipstack and one running the rendered haproxy number their
// stats lines alike.
func (c *Config) ProxyOrder() []string {
	if len(c.Proxies) > 0 {
		return c.Proxies
	}
	var keys []string
	for _, f := range c.Frontends {
		keys = append(keys, FrontendKey(f.Name))
	}
	for _, m := range c.Monitors {
		keys = append(keys, ListenKey(m.Name))
	}
	for _, s := range c.Stats {
		keys = append(keys, ListenKey(s.Name))
	}
	for _, b := range c.Backends {
		keys = append(keys, BackendKey(b.Name))
	}
	return keys
}

// haproxy 2.6's buffer sizes (tune.bufsize, tune.maxrewrite), and the range
// of tune.bufsize vipstack takes: haproxy takes any positive size, but a
// head of less than 1 KiB holds no request worth serving, and above
// 1 MiB a buffer per connection is memory a few clients could exhaust.
const (
	DefaultBufSize    = 16384
	DefaultMaxRewrite = 1024
	MinBufSize        = 1024
	MaxBufSize        = 1 << 20
)

// htxOverhead is what haproxy 2.6's HTX buffer keeps of itself besides a
// request's blocks (measured: with tune.bufsize 16384 and maxrewrite 1024
// a head of 15291 bytes as HTX stores it is taken and one more is
// refused with 400; with 32768 and 8192, 24507).
const htxOverhead = 69

// HeadLimits returns the bytes a request head may take raw and as
// haproxy's HTX stores it (each header's name and value, the request
// line's parts, and 8 bytes per block), for c's tune.bufsize and
// tune.maxrewrite. haproxy reserves maxrewrite bytes of the buffer for
// rewrites, at most half of it.
func (c *Config) HeadLimits() (raw, htx int) {
	raw = c.BufSize
	if raw == 0 {
		raw = DefaultBufSize
	}
	rewrite := DefaultMaxRewrite
	if c.MaxRewrite != nil {
		rewrite = *c.MaxRewrite
	}
	rewrite = min(rewrite, raw/2)
	return raw, raw - rewrite - htxOverhead
}

// ProxyNumbers numbers the sections of ProxyOrder as haproxy 2.6 does
// (its proxy uuid, the stats page's iid): a counter starts at 1, or 2 when
// a stats socket's proxy takes 1, and moves one per section; a section
// with its own id (ProxyIDs) keeps it, another takes the smallest number
// from the counter on that no section holds. Measured: with a stats
// socket, frontends fe and fe2 and backends be1 (id 1), be2, be3 (id 3)
// and a listen (id 100) in that order get 2, 1, 4, 3, 100 and 7.
func (c *Config) ProxyNumbers() map[string]int {
	used := map[int]bool{}
	for _, id := range c.ProxyIDs {
		used[id] = true
	}
	out := map[string]int{}
	next := 1
	if c.StatsSocket {
		next = 2
	}
	for _, k := range c.ProxyOrder() {
		if id, ok := c.ProxyIDs[k]; ok {
			out[k] = id
		} else {
			for used[next] {
				next++
			}
			out[k] = next
			used[next] = true
		}
		next++
	}
	return out
}

// ServerTarget is where a connection to a server at addr goes when its
// client connected to local: addr, but the client's destination address
// when addr's IP is unspecified (`server NAME *:PORT`, 0.0.0.0 or ::)
// and its destination port when addr's port is 0 (written without one),
// as haproxy 2.6 connects.
func ServerTarget(addr, local netip.AddrPort) netip.AddrPort {
	ip, port := addr.Addr(), addr.Port()
	if ip.IsUnspecified() {
		ip = local.Addr()
	}
	if port == 0 {
		port = local.Port()
	}
	return netip.AddrPortFrom(ip, port)
}
