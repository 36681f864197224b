package lb

import (
	"time"

	"github.com/vipstack/vipstack/internal/healthcheck"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lb/web"
)

// Snapshot reads every counter. It takes no lock on the forwarding path.
func (l *LB) Snapshot() stats.Snapshot {
	v := l.view.Load()
	now := l.clk.Now()
	snap := stats.New(v.cfg, l.Healthy())
	var kernel map[string]uint64
	if l.opts.KernelSessions != nil {
		kernel = l.opts.KernelSessions()
	}
	for i, f := range v.frontends {
		fc := v.cfg.Frontends[i]
		fs := stats.FrontendStats{
			Name: f.name, Backend: fc.Backend,
			Sessions: f.cur.Load(), MaxSessions: f.smax.Load(), SessionLimit: v.cfg.MaxConn,
			TotalSessions: f.tot.Load() + kernel[f.name], BytesIn: f.bin.Load(), BytesOut: f.bout.Load(),
			Queued: f.qcur.Load(), MaxQueued: f.qmax.Load(), QueueTimeouts: f.queueDrops.Load(), NoServer: f.noServer.Load(),
			DeniedConn: f.deniedConn.Load(), DeniedReq: f.deniedReq.Load(), SilentDrops: f.silentDrops.Load(),
			Rate: f.rate.Read(now), MaxRate: f.rate.Max(),
		}
		for _, a := range v.addrs[f.name] {
			fs.Binds = append(fs.Binds, a.String())
		}
		snap.Frontends = append(snap.Frontends, fs)
	}
	for _, p := range v.pools {
		bs := stats.BackendStats{Name: p.name, Balance: string(p.balance), NoServer: p.noSrv.Load(),
			Rate: p.be.rate.Read(now), MaxRate: p.be.rate.Max(), LastSessionSeconds: p.be.last.Age(now),
			Times: p.be.times.Stats(p.be.picked.Load())}
		users := 0
		for _, fc := range v.cfg.Frontends {
			if fc.Backend == p.name {
				users++
			}
		}
		bs.FullConn = stats.FullConn(v.cfg.MaxConn, users)
		for _, bc := range v.cfg.Backends {
			if bc.Name == p.name && bc.FullConn > 0 {
				bs.FullConn = bc.FullConn // `fullconn`
			}
		}
		bs.Downs, bs.LastChangeSeconds, bs.DowntimeSeconds, _ = l.backendState(p.name, now)
		for _, s := range p.servers {
			ss := serverStats(s, now)
			if ss.Up && ss.Admin == stats.AdminReady && ss.Weight > 0 {
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
		bs.TotalSessions += p.be.leftTot.Load()
		bs.BytesIn += p.be.leftBin.Load()
		bs.Status = "DOWN"
		if bs.UpServers > 0 {
			bs.Status = "UP"
		}
		snap.Backends = append(snap.Backends, bs)
	}
	l.mu.Lock()
	counts := make(map[string]*web.Count, len(l.webCounts))
	for k, c := range l.webCounts {
		counts[k] = c
	}
	l.mu.Unlock()
	for _, name := range snap.ListenNames() {
		if c := counts[name]; c != nil {
			ls := c.ListenStats(name, now)
			ls.MaxConn = listenMaxConn(v.cfg, name)
			snap.Listens = append(snap.Listens, ls)
		}
	}
	return snap
}

func serverStats(s *server, now time.Time) stats.ServerStats {
	sv := s.view()
	weight, initial := s.weight.get()
	ss := stats.ServerStats{
		Name: s.name, Addr: s.addrString(), Up: s.up.Load(), Weight: weight, InitialWeight: initial,
		Sessions: s.cur.Load(), MaxSessions: s.smax.Load(), TotalSessions: s.tot.Load(),
		BytesIn: s.bin.Load(), BytesOut: s.bout.Load(), ConnectErrors: s.econ.Load(),
		Retries: s.wretr.Load(), Selected: s.lbtot.Load(),
		ClientAborts: s.cliAbrt.Load(), ServerAborts: s.srvAbrt.Load(), ResponseErrors: s.eresp.Load(),
		Rate: s.rate.Read(now), MaxRate: s.rate.Max(), LastSessionSeconds: s.last.Age(now),
		Check:             sv.check.enabled,
		LastChangeSeconds: int64(now.Sub(sv.since) / time.Second),
	}
	ss.Times = s.times.Stats(ss.Selected)
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
	switch ss.Admin = stats.AdminState(s.admin.Load()); {
	case ss.Admin == stats.AdminMaint:
		// The check is paused; its last result stays (the stats CSV
		// leaves it out, as haproxy's MAINT line does).
		ss.Status, ss.Up = "MAINT", false
	case ss.Admin == stats.AdminDrain && ss.Up:
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
