package stats

import (
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Snapshot is the state and counters of every frontend, backend and
// server in the configuration in force.
type Snapshot struct {
	Healthy   bool            `json:"healthy"`
	Frontends []FrontendStats `json:"frontends"`
	Backends  []BackendStats  `json:"backends"`
	// Listens are the monitor and stats sections, by name.
	Listens []ListenStats `json:"listens,omitempty"`

	// proxies are the sections in haproxy's numbering, for the stats
	// CSV and JSON; nil in a snapshot built by hand (see proxyOrder).
	proxies []proxyRef
	// hideDown leaves DOWN servers out of the stats page, haproxy's ";up"
	// (see HideDown).
	hideDown bool
	// filter limits the stats lines (see Filter); nil for all.
	filter *StatFilter
	// listenFullConn is the session limit of a monitor or stats
	// section's backend line: haproxy's fullconn for a backend its own
	// frontend alone uses (see BackendStats.FullConn).
	listenFullConn int
}

// HideDown returns snap with its DOWN servers left out of the stats page's
// lines (HTML, CSV and JSON), as haproxy's ";up": a server DOWN or still
// rising ("DOWN 1/3") is hidden, one UP or going down ("UP 1/2") is shown,
// and the servers shown keep their ids (sid). The backends' figures are
// unchanged.
func (snap Snapshot) HideDown() Snapshot {
	snap.hideDown = true
	return snap
}

// FrontendStats is one frontend.
type FrontendStats struct {
	Name          string   `json:"name"`
	Backend       string   `json:"backend"`
	Binds         []string `json:"binds"`
	Sessions      int64    `json:"current_sessions"`
	MaxSessions   int64    `json:"max_sessions"`
	SessionLimit  int      `json:"session_limit"` // maxconn, 0 for none
	TotalSessions uint64   `json:"total_sessions"`
	BytesIn       uint64   `json:"bytes_in"`  // client to server
	BytesOut      uint64   `json:"bytes_out"` // server to client
	Queued        int64    `json:"queued"`
	MaxQueued     int64    `json:"max_queued"`
	QueueTimeouts uint64   `json:"queue_timeouts"`
	NoServer      uint64   `json:"no_server"` // clients closed because no server could be reached
	// DeniedConn, SilentDrops and DeniedReq are the clients
	// tcp-request connection rules rejected and silently dropped and
	// content rules rejected. haproxy 2.6 shows DeniedConn as dcon and
	// the other two as dreq (measured); the connections turned away by
	// a connection rule are no sessions, but count in conn_tot.
	DeniedConn  uint64 `json:"denied_connections"`
	SilentDrops uint64 `json:"silent_drops"`
	DeniedReq   uint64 `json:"denied_requests"`
	// Rate is the clients of the last second and MaxRate the most a
	// second counted (haproxy's rate and rate_max, which its conn_rate
	// and conn_rate_max equal in TCP mode; rates.go).
	Rate    uint64 `json:"rate"`
	MaxRate uint64 `json:"max_rate"`
}

// BackendStats is one backend and its servers.
type BackendStats struct {
	Name          string `json:"name"`
	Balance       string `json:"balance"`
	Status        string `json:"status"`     // UP while a server is UP
	UpServers     int    `json:"up_servers"` // UP, ready and of a weight above 0
	Weight        int    `json:"weight"`     // total weight of UP servers
	Sessions      int64  `json:"current_sessions"`
	MaxSessions   int64  `json:"max_sessions"`
	TotalSessions uint64 `json:"total_sessions"`
	BytesIn       uint64 `json:"bytes_in"`
	BytesOut      uint64 `json:"bytes_out"`
	ConnectErrors uint64 `json:"connect_errors"`
	Retries       uint64 `json:"retries"`
	// Downs counts its UP to DOWN changes (DOWN: no usable server),
	// LastChangeSeconds is the time since its last change and
	// DowntimeSeconds its total time DOWN (backendstate.go).
	Downs             uint64 `json:"downs"`
	LastChangeSeconds int64  `json:"last_change_seconds"`
	DowntimeSeconds   int64  `json:"downtime_seconds"`
	// The aborts of its servers' connections (see ServerStats).
	ClientAborts   uint64 `json:"client_aborts"`
	ServerAborts   uint64 `json:"server_aborts"`
	ResponseErrors uint64 `json:"response_errors"`
	// NoServer counts the clients that failed because no UP server was
	// left to try (none at all, or none after failed attempts that were
	// to be retried).
	NoServer uint64 `json:"no_server"`
	Selected uint64 `json:"selected"`
	// FullConn is haproxy's default fullconn, which its stats show as the
	// backend's session limit: a tenth of the maxconn of the frontends
	// that use the backend, rounded up, and 1 for a backend no frontend
	// uses (measured with haproxy 2.6.12). vipstack limits sessions per
	// frontend only: nothing else uses it (haproxy's minconn, which
	// scales server limits by it, is not in the configs vipstack reads).
	FullConn int `json:"full_conn"`
	// Rate, MaxRate: its clients of the last second, and the most a
	// second counted; LastSessionSeconds: the seconds since its last
	// client, -1 for none; Times: the averages of its sessions' times
	// (rates.go).
	Rate               uint64        `json:"rate"`
	MaxRate            uint64        `json:"max_rate"`
	LastSessionSeconds int64         `json:"last_session_seconds"`
	Times              TimeStats     `json:"times"`
	Servers            []ServerStats `json:"servers"`
}

// Clients is haproxy's count of the clients the backend took: each once,
// whether a server took it, its connects all failed (after its retries)
// or no server was UP to try (NOSRV). It is the backend's stot in the
// stats and the BE of the soft stop's "Proxy be stopped (cumulated conns:
// FE: 0, BE: 3)." line (haproxy's be_counters.cum_conn: measured, 2.6.12,
// three clients to a backend whose one server is DOWN and one to a
// backend without servers give BE: 3 and BE: 1).
func (b BackendStats) Clients() uint64 {
	// The counters are read one by one while clients come and go: a
	// retry counted between two reads must not wrap the difference.
	failed := b.ConnectErrors - min(b.Retries, b.ConnectErrors)
	return b.TotalSessions + failed + b.NoServer
}

// ServerStats is one server.
type ServerStats struct {
	Name   string `json:"name"`
	Addr   string `json:"addr"`
	Status string `json:"status"` // haproxy's: UP, DOWN, "UP 1/2", "DOWN 1/3", "no check"
	Up     bool   `json:"up"`
	Weight int    `json:"weight"` // in force: the configured one unless the runtime API changed it
	// InitialWeight is the configured weight (haproxy's "initial").
	InitialWeight int `json:"initial_weight"`
	// Admin is the state an operator set (AdminState): ready, drain or
	// maint. A server in drain or maint takes no new connection.
	Admin AdminState `json:"admin"`

	Sessions      int64  `json:"current_sessions"`
	MaxSessions   int64  `json:"max_sessions"`
	TotalSessions uint64 `json:"total_sessions"`
	BytesIn       uint64 `json:"bytes_in"`
	BytesOut      uint64 `json:"bytes_out"`
	ConnectErrors uint64 `json:"connect_errors"`
	Retries       uint64 `json:"retries"`  // failed connects followed by a retry
	Selected      uint64 `json:"selected"` // times picked, haproxy's lbtot
	// ClientAborts counts the connections the client ended with an error
	// or a timeout (CD, cD, haproxy's cli_abrt), ServerAborts those the
	// server did (SD, sD, srv_abrt), and ResponseErrors the server's
	// errors among them (SD, haproxy's eresp in TCP mode).
	ClientAborts   uint64 `json:"client_aborts"`
	ServerAborts   uint64 `json:"server_aborts"`
	ResponseErrors uint64 `json:"response_errors"`
	// Rate, MaxRate and LastSessionSeconds count the times it was
	// picked, as Selected does (not its retries); Times are the averages
	// of the sessions that connected (see BackendStats).
	Rate               uint64    `json:"rate"`
	MaxRate            uint64    `json:"max_rate"`
	LastSessionSeconds int64     `json:"last_session_seconds"`
	Times              TimeStats `json:"times"`

	Check           bool              `json:"check"`
	CheckStatus     string            `json:"check_status,omitempty"` // L7OK, L4CON, ...
	CheckCode       int               `json:"check_code,omitempty"`
	CheckInfo       string            `json:"check_info,omitempty"`
	CheckDurationMS int64             `json:"check_duration_ms"`
	ChecksFailed    uint64            `json:"checks_failed"` // while UP or going down, haproxy's chkfail
	CheckRise       int               `json:"check_rise,omitempty"`
	CheckFall       int               `json:"check_fall,omitempty"`
	CheckHealth     int               `json:"check_health,omitempty"` // haproxy's: 0..rise+fall-1, UP from rise
	Downs           uint64            `json:"downs"`
	CheckResults    map[string]uint64 `json:"check_results,omitempty"`

	LastChangeSeconds int64 `json:"last_change_seconds"`
	DowntimeSeconds   int64 `json:"downtime_seconds"`
}

// ListenStats is a monitor or stats section: its connections and
// requests (its FRONTEND line of the stats) and the requests it passed to
// its backend, which has no server (its BACKEND line), counted as haproxy
// 2.6.12 counts them (see web.Count).
type ListenStats struct {
	Name          string `json:"name"`
	Sessions      int64  `json:"current_sessions"`
	MaxSessions   int64  `json:"max_sessions"`
	TotalSessions uint64 `json:"total_sessions"`
	// BytesIn and BytesOut are the requests' and answers' sizes as
	// haproxy stores them (HTX), not the bytes on the wire.
	BytesIn  uint64 `json:"bytes_in"`
	BytesOut uint64 `json:"bytes_out"`
	// Requests counts every request, RequestErrors those refused or not
	// sent in time, Intercepted those the section answered itself,
	// Responses the answers by class ("1xx" ... "5xx", "other").
	Requests      uint64            `json:"requests"`
	RequestErrors uint64            `json:"request_errors"`
	Intercepted   uint64            `json:"intercepted"`
	Responses     map[string]uint64 `json:"responses,omitempty"`
	// Rate, MaxRate: connections; RequestRate, MaxRequestRate:
	// requests (rates.go).
	Rate           uint64 `json:"rate"`
	MaxRate        uint64 `json:"max_rate"`
	RequestRate    uint64 `json:"request_rate"`
	MaxRequestRate uint64 `json:"max_request_rate"`
	// The backend: the requests it answered 503 (each a session and a
	// connection error), their most at once and rate, and haproxy's
	// lastsess: the seconds since a stats section's last request, -1 for
	// none and always for a monitor (measured).
	BackendRequests       uint64 `json:"backend_requests"`
	BackendMaxSessions    int64  `json:"backend_max_sessions"`
	BackendRate           uint64 `json:"backend_rate"`
	BackendMaxRate        uint64 `json:"backend_max_rate"`
	BackendLastSessionSec int64  `json:"backend_last_session_seconds"`
	// MaxConn is the section's own maxconn, 0 for none: its FRONTEND's
	// slim, and its BACKEND's from it (FullConn), as haproxy shows them.
	MaxConn int `json:"maxconn,omitempty"`
}

// FullConn is haproxy's default fullconn of a backend that users
// frontends of maxconn each use (see BackendStats.FullConn).
func FullConn(maxconn, users int) int {
	return max(1, (maxconn*users+9)/10)
}

// proxyRefs numbers the sections as haproxy does: in file order from 1,
// from 2 when its `stats socket` takes 1, around the sections' own ids
// (lbconfig.Config.ProxyNumbers).
func proxyRefs(cfg *lbconfig.Config) []proxyRef {
	keys := cfg.ProxyOrder()
	ids := cfg.ProxyNumbers()
	refs := make([]proxyRef, 0, len(keys))
	for _, k := range keys {
		kind, name, _ := strings.Cut(k, " ")
		ref := proxyRef{name: name, iid: ids[k]}
		switch kind {
		case "frontend":
			ref.kind = proxyFrontend
		case "backend":
			ref.kind = proxyBackend
		default:
			ref.kind = proxyListen
		}
		refs = append(refs, ref)
	}
	return refs
}

// New returns an empty snapshot of the configuration cfg, its sections
// numbered as haproxy numbers them, for the LB to fill.
func New(cfg *lbconfig.Config, healthy bool) Snapshot {
	return Snapshot{Healthy: healthy, proxies: proxyRefs(cfg), listenFullConn: FullConn(cfg.MaxConn, 1)}
}

// ListenNames are the monitor and stats sections of the snapshot's
// configuration, in haproxy's order.
func (snap Snapshot) ListenNames() []string {
	var names []string
	for _, p := range snap.proxies {
		if p.kind == proxyListen {
			names = append(names, p.name)
		}
	}
	return names
}

// ListenMaxConn is the clients a monitor or stats listener serves at
// once, the FRONTEND line's slim of its section.
const ListenMaxConn = 256

// ResponseClasses name ListenStats.Responses' classes: 1xx to 5xx, then
// other codes.
var ResponseClasses = [6]string{"1xx", "2xx", "3xx", "4xx", "5xx", "other"}

// DownHidden says whether HideDown (or a filter's UpOnly) hides the DOWN
// servers.
func (snap Snapshot) DownHidden() bool { return snap.hideDown }
