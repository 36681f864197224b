package lb

import (
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/healthcheck"
)

// Snapshot is the state and counters of every frontend, backend and
// server in the configuration in force.
type Snapshot struct {
	Healthy   bool            `json:"healthy"`
	Frontends []FrontendStats `json:"frontends"`
	Backends  []BackendStats  `json:"backends"`
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
}

// BackendStats is one backend and its servers.
type BackendStats struct {
	Name          string        `json:"name"`
	Balance       string        `json:"balance"`
	Status        string        `json:"status"` // UP while a server is UP
	UpServers     int           `json:"up_servers"`
	Weight        int           `json:"weight"` // total weight of UP servers
	Sessions      int64         `json:"current_sessions"`
	MaxSessions   int64         `json:"max_sessions"`
	TotalSessions uint64        `json:"total_sessions"`
	BytesIn       uint64        `json:"bytes_in"`
	BytesOut      uint64        `json:"bytes_out"`
	ConnectErrors uint64        `json:"connect_errors"`
	Retries       uint64        `json:"retries"`
	Selected      uint64        `json:"selected"`
	Servers       []ServerStats `json:"servers"`
}

// ServerStats is one server.
type ServerStats struct {
	Name   string `json:"name"`
	Addr   string `json:"addr"`
	Status string `json:"status"` // haproxy's: UP, DOWN, "UP 1/2", "DOWN 1/3", "no check"
	Up     bool   `json:"up"`
	Weight int    `json:"weight"`

	Sessions      int64  `json:"current_sessions"`
	MaxSessions   int64  `json:"max_sessions"`
	TotalSessions uint64 `json:"total_sessions"`
	BytesIn       uint64 `json:"bytes_in"`
	BytesOut      uint64 `json:"bytes_out"`
	ConnectErrors uint64 `json:"connect_errors"`
	Retries       uint64 `json:"retries"`  // failed connects followed by a retry
	Selected      uint64 `json:"selected"` // times picked, haproxy's lbtot

	Check           bool              `json:"check"`
	CheckStatus     string            `json:"check_status,omitempty"` // L7OK, L4CON, ...
	CheckCode       int               `json:"check_code,omitempty"`
	CheckInfo       string            `json:"check_info,omitempty"`
	CheckDurationMS int64             `json:"check_duration_ms"`
	ChecksFailed    uint64            `json:"checks_failed"` // while UP or going down, haproxy's chkfail
	Downs           uint64            `json:"downs"`
	CheckResults    map[string]uint64 `json:"check_results,omitempty"`

	LastChangeSeconds int64 `json:"last_change_seconds"`
	DowntimeSeconds   int64 `json:"downtime_seconds"`
}

// Snapshot reads every counter. It takes no lock on the forwarding path.
func (l *LB) Snapshot() Snapshot {
	v := l.view.Load()
	now := l.clk.Now()
	snap := Snapshot{Healthy: l.Healthy()}
	for i, f := range v.frontends {
		fc := v.cfg.Frontends[i]
		fs := FrontendStats{
			Name: f.name, Backend: fc.Backend,
			Sessions: f.cur.Load(), MaxSessions: f.smax.Load(), SessionLimit: v.cfg.MaxConn,
			TotalSessions: f.tot.Load(), BytesIn: f.bin.Load(), BytesOut: f.bout.Load(),
			Queued: f.qcur.Load(), MaxQueued: f.qmax.Load(), QueueTimeouts: f.queueDrops.Load(), NoServer: f.noServer.Load(),
		}
		for _, a := range v.addrs[f.name] {
			fs.Binds = append(fs.Binds, a.String())
		}
		snap.Frontends = append(snap.Frontends, fs)
	}
	for _, p := range v.pools {
		bs := BackendStats{Name: p.name, Balance: string(p.balance)}
		for i, s := range p.servers {
			ss := serverStats(s, p.weights[i], now)
			if ss.Up {
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
			bs.Selected += ss.Selected
			bs.Servers = append(bs.Servers, ss)
		}
		bs.Status = "DOWN"
		if bs.UpServers > 0 {
			bs.Status = "UP"
		}
		snap.Backends = append(snap.Backends, bs)
	}
	return snap
}

func serverStats(s *server, weight int, now time.Time) ServerStats {
	sv := s.view()
	ss := ServerStats{
		Name: s.name, Addr: s.addr.String(), Up: s.up.Load(), Weight: weight,
		Sessions: s.cur.Load(), MaxSessions: s.smax.Load(), TotalSessions: s.tot.Load(),
		BytesIn: s.bin.Load(), BytesOut: s.bout.Load(), ConnectErrors: s.econ.Load(),
		Retries: s.wretr.Load(), Selected: s.lbtot.Load(),
		Check:             sv.check.enabled,
		LastChangeSeconds: int64(now.Sub(sv.since) / time.Second),
	}
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
	default:
		ss.Status = "DOWN"
		if ss.Up {
			ss.Status = "UP"
		}
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

// csvHeader names the first columns of haproxy 2.6's `show stat` CSV
// (management.txt, "9.1. CSV format"), in its order, up to
// check_duration; scripts that index haproxy's columns by position read
// these alike.
const csvHeader = "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout," +
	"dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight,act," +
	"bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,throttle," +
	"lbtot,tracked,type,rate,rate_lim,rate_max,check_status,check_code,check_duration,\n"

// Column positions in csvHeader.
const (
	colPxname = iota
	colSvname
	colQcur
	colQmax
	colScur
	colSmax
	colSlim
	colStot
	colBin
	colBout
	colDreq
	colDresp
	colEreq
	colEcon
	colEresp
	colWretr
	colWredis
	colStatus
	colWeight
	colAct
	colBck
	colChkfail
	colChkdown
	colLastchg
	colDowntime
	colQlimit
	colPid
	colIid
	colSid
	colThrottle
	colLbtot
	colTracked
	colType
	colRate
	colRateLim
	colRateMax
	colCheckStatus
	colCheckCode
	colCheckDuration
	nColumns
)

// CSV renders a snapshot as haproxy's stats CSV: a "# " header line, then
// per frontend a FRONTEND row, and per backend one row per server and a
// BACKEND row. Each line ends with a comma, as haproxy's do.
func (snap Snapshot) CSV() string {
	var b strings.Builder
	b.WriteString(csvHeader)
	row := func(r *[nColumns]string) {
		for _, f := range r {
			b.WriteString(csvField(f))
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	u64 := func(v uint64) string { return strconv.FormatUint(v, 10) }
	iid := 0
	for _, f := range snap.Frontends {
		iid++
		var r [nColumns]string
		r[colPxname], r[colSvname] = f.Name, "FRONTEND"
		r[colScur], r[colSmax], r[colStot] = i64(f.Sessions), i64(f.MaxSessions), u64(f.TotalSessions)
		if f.SessionLimit > 0 {
			r[colSlim] = strconv.Itoa(f.SessionLimit)
		}
		r[colBin], r[colBout] = u64(f.BytesIn), u64(f.BytesOut)
		r[colDreq], r[colDresp], r[colEreq] = "0", "0", "0"
		r[colStatus] = "OPEN"
		r[colPid], r[colIid], r[colSid], r[colType] = "1", strconv.Itoa(iid), "0", "0"
		row(&r)
	}
	for _, bk := range snap.Backends {
		iid++
		for sid, s := range bk.Servers {
			var r [nColumns]string
			r[colPxname], r[colSvname] = bk.Name, s.Name
			r[colQcur], r[colQmax] = "0", "0"
			r[colScur], r[colSmax], r[colStot] = i64(s.Sessions), i64(s.MaxSessions), u64(s.TotalSessions)
			r[colBin], r[colBout] = u64(s.BytesIn), u64(s.BytesOut)
			r[colDresp], r[colEcon], r[colEresp], r[colWretr], r[colWredis] = "0", u64(s.ConnectErrors), "0", u64(s.Retries), "0"
			r[colStatus], r[colWeight], r[colAct], r[colBck] = s.Status, strconv.Itoa(s.Weight), "1", "0"
			if s.Check {
				r[colChkfail], r[colChkdown] = u64(s.ChecksFailed), u64(s.Downs)
				r[colCheckStatus] = s.CheckStatus
				if s.CheckCode != 0 {
					r[colCheckCode] = strconv.Itoa(s.CheckCode)
				}
				if s.CheckStatus != "" {
					r[colCheckDuration] = i64(s.CheckDurationMS)
				}
			}
			r[colLastchg], r[colDowntime] = i64(s.LastChangeSeconds), i64(s.DowntimeSeconds)
			r[colPid], r[colIid], r[colSid], r[colType] = "1", strconv.Itoa(iid), strconv.Itoa(sid+1), "2"
			r[colLbtot] = u64(s.Selected)
			row(&r)
		}
		var r [nColumns]string
		r[colPxname], r[colSvname] = bk.Name, "BACKEND"
		r[colQcur], r[colQmax] = "0", "0"
		r[colScur], r[colSmax], r[colStot] = i64(bk.Sessions), i64(bk.MaxSessions), u64(bk.TotalSessions)
		r[colBin], r[colBout] = u64(bk.BytesIn), u64(bk.BytesOut)
		r[colDreq], r[colDresp], r[colEcon], r[colEresp], r[colWretr], r[colWredis] = "0", "0", u64(bk.ConnectErrors), "0", u64(bk.Retries), "0"
		r[colStatus], r[colWeight], r[colAct], r[colBck] = bk.Status, strconv.Itoa(bk.Weight), strconv.Itoa(bk.UpServers), "0"
		r[colPid], r[colIid], r[colSid], r[colType] = "1", strconv.Itoa(iid), "0", "1"
		r[colLbtot] = u64(bk.Selected)
		row(&r)
	}
	return b.String()
}

// csvField keeps a field from breaking the line: haproxy names cannot hold
// commas or newlines, but check information (an error text) can.
func csvField(s string) string {
	if !strings.ContainsAny(s, ",\n\r") {
		return s
	}
	return strings.NewReplacer(",", ";", "\n", " ", "\r", " ").Replace(s)
}
