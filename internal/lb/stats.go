package lb

import (
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/healthcheck"
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
// 2.6.12 counts them (see webCount).
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
}

// hrspClasses name webCount.hrsp's classes.
var hrspClasses = [6]string{"1xx", "2xx", "3xx", "4xx", "5xx", "other"}

func listenStats(name string, c *webCount, now time.Time) ListenStats {
	ls := ListenStats{Name: name, Sessions: c.cur.Load(), MaxSessions: c.smax.Load(), TotalSessions: c.fe.Load(),
		BytesIn: c.bin.Load(), BytesOut: c.bout.Load(),
		Requests: c.reqs.Load(), RequestErrors: c.ereq.Load(), Intercepted: c.intercepted.Load(),
		Rate: c.rate.read(now), MaxRate: uint64(c.rate.max.Load()),
		RequestRate: c.reqRate.read(now), MaxRequestRate: uint64(c.reqRate.max.Load()),
		BackendRequests: c.be.Load(), BackendMaxSessions: c.beSmax.Load(),
		BackendRate: c.beRate.read(now), BackendMaxRate: uint64(c.beRate.max.Load()), BackendLastSessionSec: c.beLast.age(now)}
	for i, class := range hrspClasses {
		if n := c.hrsp[i].Load(); n > 0 {
			if ls.Responses == nil {
				ls.Responses = map[string]uint64{}
			}
			ls.Responses[class] = n
		}
	}
	return ls
}

// Snapshot reads every counter. It takes no lock on the forwarding path.
func (l *LB) Snapshot() Snapshot {
	v := l.view.Load()
	now := l.clk.Now()
	snap := Snapshot{Healthy: l.Healthy(), proxies: proxyRefs(v.cfg), listenFullConn: fullConn(v.cfg.MaxConn, 1)}
	for i, f := range v.frontends {
		fc := v.cfg.Frontends[i]
		fs := FrontendStats{
			Name: f.name, Backend: fc.Backend,
			Sessions: f.cur.Load(), MaxSessions: f.smax.Load(), SessionLimit: v.cfg.MaxConn,
			TotalSessions: f.tot.Load(), BytesIn: f.bin.Load(), BytesOut: f.bout.Load(),
			Queued: f.qcur.Load(), MaxQueued: f.qmax.Load(), QueueTimeouts: f.queueDrops.Load(), NoServer: f.noServer.Load(),
			Rate: f.rate.read(now), MaxRate: uint64(f.rate.max.Load()),
		}
		for _, a := range v.addrs[f.name] {
			fs.Binds = append(fs.Binds, a.String())
		}
		snap.Frontends = append(snap.Frontends, fs)
	}
	for _, p := range v.pools {
		bs := BackendStats{Name: p.name, Balance: string(p.balance), NoServer: p.noSrv.Load(),
			Rate: p.be.rate.read(now), MaxRate: uint64(p.be.rate.max.Load()), LastSessionSeconds: p.be.last.age(now),
			Times: p.be.times.stats(p.be.picked.Load())}
		users := 0
		for _, fc := range v.cfg.Frontends {
			if fc.Backend == p.name {
				users++
			}
		}
		bs.FullConn = fullConn(v.cfg.MaxConn, users)
		bs.Downs, bs.LastChangeSeconds, bs.DowntimeSeconds, _ = l.backendState(p.name, now)
		for _, s := range p.servers {
			ss := serverStats(s, now)
			if ss.Up && ss.Admin == AdminReady && ss.Weight > 0 {
				bs.UpServers++
				bs.Weight += ss.Weight
			}
			bs.Sessions += ss.Sessions
			bs.MaxSessions = max(bs.MaxSessions, ss.MaxSessions)
			bs.TotalSessions += ss.TotalSessions
			bs.BytesIn += ss.BytesIn
			bs.BytesOut += ss.BytesOut
			bs.ConnectErrors += ss.ConnectErrors
			bs.Retries += ss.Retries
			bs.ClientAborts += ss.ClientAborts
			bs.ServerAborts += ss.ServerAborts
			bs.ResponseErrors += ss.ResponseErrors
			bs.Selected += ss.Selected
			bs.Servers = append(bs.Servers, ss)
		}
		bs.Status = "DOWN"
		if bs.UpServers > 0 {
			bs.Status = "UP"
		}
		snap.Backends = append(snap.Backends, bs)
	}
	l.mu.Lock()
	counts := make(map[string]*webCount, len(l.webCounts))
	for k, c := range l.webCounts {
		counts[k] = c
	}
	l.mu.Unlock()
	for _, p := range snap.proxies {
		if c := counts[p.name]; p.kind == proxyListen && c != nil {
			snap.Listens = append(snap.Listens, listenStats(p.name, c, now))
		}
	}
	return snap
}

// fullConn is haproxy's default fullconn of a backend that users
// frontends of maxconn each use (see BackendStats.FullConn).
func fullConn(maxconn, users int) int {
	return max(1, (maxconn*users+9)/10)
}

func serverStats(s *server, now time.Time) ServerStats {
	sv := s.view()
	weight, initial := s.weight.get()
	ss := ServerStats{
		Name: s.name, Addr: s.addr.String(), Up: s.up.Load(), Weight: weight, InitialWeight: initial,
		Sessions: s.cur.Load(), MaxSessions: s.smax.Load(), TotalSessions: s.tot.Load(),
		BytesIn: s.bin.Load(), BytesOut: s.bout.Load(), ConnectErrors: s.econ.Load(),
		Retries: s.wretr.Load(), Selected: s.lbtot.Load(),
		ClientAborts: s.cliAbrt.Load(), ServerAborts: s.srvAbrt.Load(), ResponseErrors: s.eresp.Load(),
		Rate: s.rate.read(now), MaxRate: uint64(s.rate.max.Load()), LastSessionSeconds: s.last.age(now),
		Check:             sv.check.enabled,
		LastChangeSeconds: int64(now.Sub(sv.since) / time.Second),
	}
	ss.Times = s.times.stats(ss.Selected)
	down := sv.downtime
	if !sv.downSince.IsZero() {
		down += now.Sub(sv.downSince)
	}
	ss.DowntimeSeconds = int64(down / time.Second)
	switch {
	case !sv.check.enabled:
		ss.Status = "no check"
	case sv.hasState:
		st := sv.state
		ss.Status = st.String()
		ss.CheckStatus, ss.CheckCode, ss.CheckInfo = st.Last.Status, st.Last.Code, st.Last.Info
		ss.CheckDurationMS = st.Last.Duration.Milliseconds()
		ss.ChecksFailed, ss.Downs = s.chkfail.Load(), st.Downs
		ss.CheckRise, ss.CheckFall, ss.CheckHealth = st.Rise, st.Fall, checkHealth(st)
	default:
		ss.Status = "DOWN"
		if ss.Up {
			ss.Status = "UP"
		}
	}
	ss.Downs += s.downsBase.Load()
	switch ss.Admin = AdminState(s.admin.Load()); {
	case ss.Admin == AdminMaint:
		// The check is paused; its last result stays (the stats CSV
		// leaves it out, as haproxy's MAINT line does).
		ss.Status, ss.Up = "MAINT", false
	case ss.Admin == AdminDrain && ss.Up:
		ss.Status = "DRAIN"
	}
	for i, name := range healthcheck.Statuses() {
		if n := s.results[i].Load(); n > 0 {
			if ss.CheckResults == nil {
				ss.CheckResults = map[string]uint64{}
			}
			ss.CheckResults[name] = n
		}
	}
	return ss
}

// checkHealth is haproxy's health counter of a checked server: it counts
// up on a passed check to rise+fall-1 and down on a failed one to 0, and
// the server is UP from rise (haproxy's server starts at rise: UP, and
// DOWN at its first failure).
func checkHealth(st healthcheck.State) int {
	switch {
	case st.Pending:
		return st.Rise
	case st.Up:
		return max(st.Rise+st.Fall-1-st.Failures, st.Rise)
	}
	return min(st.Successes, st.Rise-1)
}

// proxyRefs numbers the sections as haproxy does: in file order from 1,
// from 2 when its `stats socket` takes 1.
func proxyRefs(cfg *lbconfig.Config) []proxyRef {
	keys := cfg.ProxyOrder()
	refs := make([]proxyRef, 0, len(keys))
	iid := 1
	if cfg.StatsSocket {
		iid = 2
	}
	for _, k := range keys {
		kind, name, _ := strings.Cut(k, " ")
		ref := proxyRef{name: name, iid: iid}
		switch kind {
		case "frontend":
			ref.kind = proxyFrontend
		case "backend":
			ref.kind = proxyBackend
		default:
			ref.kind = proxyListen
		}
		refs = append(refs, ref)
		iid++
	}
	return refs
}
