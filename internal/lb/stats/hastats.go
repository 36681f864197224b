package stats

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/healthcheck"
)

// The stats page's `;csv` and `;json` follow haproxy 2.6's layout, as
// measured with haproxy 2.6.12 (Debian 12) serving the seeds'
// configuration (a TCP frontend, a backend of three checked servers, a
// monitor and a stats listen section):
//
//   - The CSV is `show stat`'s: a "# " header of 128 column names, the
//     103 generic fields (pxname ... agg_check_status), a "-" column, and
//     the 24 module counters (ssl_sess ... h1_spliced_bytes_out); every
//     line ends with a comma.
//   - The JSON is an array with one record per line of the CSV; a record
//     is an array of field objects {objType, proxyId, id, field{pos,
//     name}, processNum, tags{origin, nature, scope}, value{type, value}}
//     for the fields that have a value, in position order: a field the CSV
//     leaves empty is absent. A module counter's pos does not count the
//     "-" column (ssl_sess is column 104 in the CSV and pos 103).
//   - Each section is one proxy, numbered (iid, the JSON's proxyId) in
//     file order from 1, or from 2 when global has a `stats socket`, whose
//     CLI proxy takes 1. A frontend gives a FRONTEND line (type 0), a
//     backend one line per server (type 2, sid from 1 in file order) and
//     a BACKEND line (type 1), a listen section both, FRONTEND first.
//
// vipstack fills a field when it has its value: the counters and states it
// keeps, haproxy's zero for what vipstack has no such feature for (denied
// requests, header rewrites, compression, rate limits, backup servers,
// connection reuse, HTTP requests on a TCP frontend), and the field is left
// out (empty in the CSV, absent from the JSON) when vipstack does not
// measure it: the module counters. The monitor's and stats page's own
// lines are counted as haproxy counts them (web.Count, ListenStats). The session rates, the last
// session's age and the average times (rate, rate_max, conn_rate,
// conn_rate_max, conn_tot, lastsess, qtime ... ttime_max) are counted as
// haproxy counts them (rates.go). Which fields each line has is in
// records below.

// statColumns is haproxy 2.6's `show stat` CSV header, in its order.
var statColumns = [...]string{
	"pxname", "svname", "qcur", "qmax", "scur", "smax", "slim", "stot", "bin", "bout", "dreq", "dresp", "ereq",
	"econ", "eresp", "wretr", "wredis", "status", "weight", "act", "bck", "chkfail", "chkdown", "lastchg",
	"downtime", "qlimit", "pid", "iid", "sid", "throttle", "lbtot", "tracked", "type", "rate", "rate_lim",
	"rate_max", "check_status", "check_code", "check_duration", "hrsp_1xx", "hrsp_2xx", "hrsp_3xx", "hrsp_4xx",
	"hrsp_5xx", "hrsp_other", "hanafail", "req_rate", "req_rate_max", "req_tot", "cli_abrt", "srv_abrt",
	"comp_in", "comp_out", "comp_byp", "comp_rsp", "lastsess", "last_chk", "last_agt", "qtime", "ctime",
	"rtime", "ttime", "agent_status", "agent_code", "agent_duration", "check_desc", "agent_desc", "check_rise",
	"check_fall", "check_health", "agent_rise", "agent_fall", "agent_health", "addr", "cookie", "mode", "algo",
	"conn_rate", "conn_rate_max", "conn_tot", "intercepted", "dcon", "dses", "wrew", "connect", "reuse",
	"cache_lookups", "cache_hits", "srv_icur", "src_ilim", "qtime_max", "ctime_max", "rtime_max", "ttime_max",
	"eint", "idle_conn_cur", "safe_conn_cur", "used_conn_cur", "need_conn_est", "uweight", "agg_server_status",
	"agg_server_check_status", "agg_check_status", "-", "ssl_sess", "ssl_reused_sess", "ssl_failed_handshake",
	"h2_headers_rcvd", "h2_data_rcvd", "h2_settings_rcvd", "h2_rst_stream_rcvd", "h2_goaway_rcvd",
	"h2_detected_conn_protocol_errors", "h2_detected_strm_protocol_errors", "h2_rst_stream_resp",
	"h2_goaway_resp", "h2_open_connections", "h2_backend_open_streams", "h2_total_connections",
	"h2_backend_total_streams", "h1_open_connections", "h1_open_streams", "h1_total_connections",
	"h1_total_streams", "h1_bytes_in", "h1_bytes_out", "h1_spliced_bytes_in", "h1_spliced_bytes_out",
}

// statGeneric is the number of generic fields: the "-" column follows.
const statGeneric = 103

// statColumn maps a generic field's name to its position.
var statColumn = func() map[string]int {
	m := make(map[string]int, statGeneric)
	for i, n := range statColumns[:statGeneric] {
		m[n] = i
	}
	return m
}()

// statTags are a field's JSON tags and value type.
type statTags struct {
	Origin, Nature, Scope, Type string
}

// statFieldTags are haproxy 2.6's tags and types of the fields vipstack
// fills, as measured; a Backend's act and bck differ (backendTags).
var statFieldTags = map[string]statTags{
	"pxname":         {"Key", "Name", "Service", "str"},
	"svname":         {"Key", "Name", "Service", "str"},
	"qcur":           {"Metric", "Gauge", "Process", "u32"},
	"qmax":           {"Metric", "Max", "Process", "u32"},
	"scur":           {"Metric", "Gauge", "Process", "u32"},
	"smax":           {"Metric", "Max", "Process", "u32"},
	"slim":           {"Config", "Limit", "Process", "u32"},
	"stot":           {"Metric", "Counter", "Process", "u64"},
	"bin":            {"Metric", "Counter", "Process", "u64"},
	"bout":           {"Metric", "Counter", "Process", "u64"},
	"dreq":           {"Metric", "Counter", "Process", "u64"},
	"dresp":          {"Metric", "Counter", "Process", "u64"},
	"ereq":           {"Metric", "Counter", "Process", "u64"},
	"econ":           {"Metric", "Counter", "Process", "u64"},
	"eresp":          {"Metric", "Counter", "Process", "u64"},
	"cli_abrt":       {"Metric", "Counter", "Process", "u64"},
	"srv_abrt":       {"Metric", "Counter", "Process", "u64"},
	"wretr":          {"Metric", "Counter", "Process", "u64"},
	"wredis":         {"Metric", "Counter", "Process", "u64"},
	"status":         {"Status", "Gauge", "Process", "str"},
	"weight":         {"Metric", "Avg", "Process", "u32"},
	"act":            {"Status", "Gauge", "Process", "u32"},
	"bck":            {"Status", "Gauge", "Process", "u32"},
	"chkfail":        {"Metric", "Counter", "Process", "u64"},
	"chkdown":        {"Metric", "Counter", "Process", "u64"},
	"lastchg":        {"Metric", "Age", "Process", "u32"},
	"downtime":       {"Metric", "Counter", "Process", "u32"},
	"pid":            {"Key", "Gauge", "Process", "u32"},
	"iid":            {"Key", "Gauge", "Service", "u32"},
	"sid":            {"Key", "Gauge", "Service", "u32"},
	"lbtot":          {"Metric", "Counter", "Process", "u64"},
	"type":           {"Config", "Gauge", "Service", "u32"},
	"rate_lim":       {"Config", "Limit", "Process", "u32"},
	"check_status":   {"Metric", "Output", "Process", "str"},
	"check_code":     {"Metric", "Output", "Process", "u32"},
	"check_duration": {"Metric", "Duration", "Process", "u64"},
	"req_rate":       {"Metric", "Rate", "Process", "u32"},
	"req_rate_max":   {"Metric", "Max", "Process", "u32"},
	"req_tot":        {"Metric", "Counter", "Process", "u64"},
	"comp_in":        {"Metric", "Counter", "Process", "u64"},
	"comp_out":       {"Metric", "Counter", "Process", "u64"},
	"comp_byp":       {"Metric", "Counter", "Process", "u64"},
	"comp_rsp":       {"Metric", "Counter", "Process", "u64"},
	"last_chk":       {"Metric", "Output", "Process", "str"},
	"check_desc":     {"Metric", "Output", "Process", "str"},
	"check_rise":     {"Config", "Gauge", "Service", "u32"},
	"check_fall":     {"Config", "Gauge", "Service", "u32"},
	"check_health":   {"Config", "Gauge", "Service", "u32"},
	"mode":           {"Config", "Gauge", "Service", "str"},
	"dcon":           {"Metric", "Counter", "Process", "u64"},
	"dses":           {"Metric", "Counter", "Process", "u64"},
	"wrew":           {"Metric", "Counter", "Process", "u64"},
	"reuse":          {"Metric", "Counter", "Process", "u64"},
	"srv_icur":       {"Metric", "Gauge", "Process", "u32"},
	"idle_conn_cur":  {"Metric", "Gauge", "Process", "u32"},
	"safe_conn_cur":  {"Metric", "Gauge", "Process", "u32"},
	"uweight":        {"Metric", "Avg", "Process", "u32"},
	// The HTTP counters of the monitor and stats sections (measured).
	"hrsp_1xx":      {"Metric", "Counter", "Process", "u64"},
	"hrsp_2xx":      {"Metric", "Counter", "Process", "u64"},
	"hrsp_3xx":      {"Metric", "Counter", "Process", "u64"},
	"hrsp_4xx":      {"Metric", "Counter", "Process", "u64"},
	"hrsp_5xx":      {"Metric", "Counter", "Process", "u64"},
	"hrsp_other":    {"Metric", "Counter", "Process", "u64"},
	"intercepted":   {"Metric", "Counter", "Process", "u64"},
	"cache_lookups": {"Metric", "Counter", "Process", "u64"},
	"cache_hits":    {"Metric", "Counter", "Process", "u64"},
	"eint":          {"Metric", "Counter", "Process", "u64"},
	"connect":       {"Metric", "Counter", "Process", "u64"},
	// rates.go's fields, tags measured (a Backend's rates differ).
	"rate":          {"Metric", "Rate", "Process", "u32"},
	"rate_max":      {"Metric", "Max", "Process", "u32"},
	"conn_rate":     {"Metric", "Rate", "Process", "u32"},
	"conn_rate_max": {"Metric", "Max", "Process", "u32"},
	"conn_tot":      {"Metric", "Counter", "Process", "u64"},
	"lastsess":      {"Metric", "Age", "Process", "s32"},
	"qtime":         {"Metric", "Avg", "Process", "u32"},
	"ctime":         {"Metric", "Avg", "Process", "u32"},
	"rtime":         {"Metric", "Avg", "Process", "u32"},
	"ttime":         {"Metric", "Avg", "Process", "u32"},
	"qtime_max":     {"Metric", "Max", "Process", "u32"},
	"ctime_max":     {"Metric", "Max", "Process", "u32"},
	"rtime_max":     {"Metric", "Max", "Process", "u32"},
	"ttime_max":     {"Metric", "Max", "Process", "u32"},
}

// backendTags overrides statFieldTags on Backend lines.
var backendTags = map[string]statTags{
	"act":      {"Metric", "Gauge", "Process", "u32"},
	"bck":      {"Metric", "Gauge", "Process", "u32"},
	"rate":     {"Metric", "Gauge", "Process", "u32"},
	"rate_max": {"Metric", "Gauge", "Process", "u32"},
}

// JSON object types and CSV type numbers of the three kinds of lines.
const (
	objFrontend = "Frontend"
	objBackend  = "Backend"
	objServer   = "Server"
)

// statRecord is one line of the stats: a frontend, backend or server.
type statRecord struct {
	objType string
	proxyID int // iid
	id      int // sid, 0 for a frontend or backend
	set     [statGeneric]bool
	str     [statGeneric]string
	num     [statGeneric]uint64
}

func (r *statRecord) tags(name string) statTags {
	if r.objType == objBackend {
		if t, ok := backendTags[name]; ok {
			return t
		}
	}
	t, ok := statFieldTags[name]
	if !ok {
		panic("lb: stats field without tags: " + name)
	}
	return t
}

func (r *statRecord) s(name, v string) {
	i := statColumn[name]
	r.set[i], r.str[i] = true, v
}

func (r *statRecord) n(name string, v uint64) {
	i := statColumn[name]
	r.set[i], r.num[i] = true, v
}

// i takes a gauge; a negative one (never expected) shows as 0.
func (r *statRecord) i(name string, v int64) { r.n(name, uint64(max(v, 0))) }

// signed takes a signed field (type s32: lastsess, -1 for none).
func (r *statRecord) signed(name string, v int64) { r.n(name, uint64(v)) }

// number is field i's value as text, signed for an s32 field.
func (r *statRecord) number(i int, t statTags) string {
	if t.Type == "s32" {
		return strconv.FormatInt(int64(r.num[i]), 10)
	}
	return strconv.FormatUint(r.num[i], 10)
}

// times sets the session rate, last session and times of a server or
// backend line (rates.go; rtime is 0 in TCP mode).
func (r *statRecord) times(rate, maxRate uint64, lastSess int64, t TimeStats) {
	r.n("rate", rate)
	r.n("rate_max", maxRate)
	r.signed("lastsess", lastSess)
	r.n("qtime", t.QueueMS)
	r.n("ctime", t.ConnectMS)
	r.n("ttime", t.TotalMS)
	r.n("qtime_max", t.MaxQueueMS)
	r.n("ctime_max", t.MaxConnectMS)
	r.n("ttime_max", t.MaxTotalMS)
	r.zero("rtime", "rtime_max")
}

// zero sets fields to 0: features vipstack does not have.
func (r *statRecord) zero(names ...string) {
	for _, n := range names {
		r.n(n, 0)
	}
}

func newRecord(objType string, iid, sid int, pxname, svname, mode string) *statRecord {
	r := &statRecord{objType: objType, proxyID: iid, id: sid}
	r.s("pxname", pxname)
	r.s("svname", svname)
	r.n("pid", 1)
	r.n("iid", uint64(iid))
	r.n("sid", uint64(sid))
	typ := map[string]uint64{objFrontend: 0, objBackend: 1, objServer: 2}[objType]
	r.n("type", typ)
	r.s("mode", mode)
	return r
}

// proxyKind is what a section is to haproxy's stats.
type proxyKind int

const (
	proxyFrontend proxyKind = iota
	proxyBackend
	proxyListen // a monitor or stats page: a frontend and a backend without servers
)

// proxyRef is one section in haproxy's numbering.
type proxyRef struct {
	kind proxyKind
	name string
	iid  int
}

// proxyOrder is the sections of a snapshot built by hand (no config):
// frontends, then backends.
func (snap Snapshot) proxyOrder() []proxyRef {
	if snap.proxies != nil {
		return snap.proxies
	}
	var refs []proxyRef
	for _, f := range snap.Frontends {
		refs = append(refs, proxyRef{kind: proxyFrontend, name: f.Name, iid: len(refs) + 1})
	}
	for _, b := range snap.Backends {
		refs = append(refs, proxyRef{kind: proxyBackend, name: b.Name, iid: len(refs) + 1})
	}
	return refs
}

// records lays a snapshot out as haproxy's stats lines, in its order.
func (snap Snapshot) records() []*statRecord {
	var out []*statRecord
	for _, p := range snap.proxyOrder() {
		switch p.kind {
		case proxyFrontend:
			for _, f := range snap.Frontends {
				if f.Name == p.name && snap.filter.keeps(p.iid, 1, 0) {
					out = append(out, frontendRecord(f, p.iid))
					break
				}
			}
		case proxyBackend:
			for _, b := range snap.Backends {
				if b.Name == p.name {
					out = append(out, backendRecords(b, p.iid, snap.hideDown, snap.filter)...)
					break
				}
			}
		case proxyListen:
			var ls *ListenStats
			for i := range snap.Listens {
				if snap.Listens[i].Name == p.name {
					ls = &snap.Listens[i]
				}
			}
			if snap.filter.keeps(p.iid, 1, 0) {
				out = append(out, listenFrontendRecord(p, ls))
			}
			if snap.filter.keeps(p.iid, 2, 0) {
				fullConn := snap.listenFullConn
				if ls != nil && ls.MaxConn > 0 {
					fullConn = FullConn(ls.MaxConn, 1)
				}
				out = append(out, listenBackendRecord(p, ls, fullConn))
			}
		}
	}
	return out
}

// listenFrontendRecord is the FRONTEND line of a monitor or stats
// section; ls, its counts, is nil in a snapshot built by hand.
func listenFrontendRecord(p proxyRef, ls *ListenStats) *statRecord {
	fe := newRecord(objFrontend, p.iid, 0, p.name, "FRONTEND", "http")
	fe.s("status", "OPEN")
	slim := uint64(ListenMaxConn)
	if ls != nil && ls.MaxConn > 0 {
		slim = uint64(ls.MaxConn)
	}
	fe.n("slim", slim)
	fe.zero("rate_lim", "comp_in", "comp_out", "comp_byp", "comp_rsp", "dcon", "dses", "wrew")
	if ls == nil {
		return fe
	}
	fe.i("scur", ls.Sessions)
	fe.i("smax", ls.MaxSessions)
	fe.n("stot", ls.TotalSessions)
	fe.n("bin", ls.BytesIn)
	fe.n("bout", ls.BytesOut)
	fe.n("ereq", ls.RequestErrors)
	fe.n("rate", ls.Rate)
	fe.n("rate_max", ls.MaxRate)
	fe.n("conn_rate", ls.Rate)
	fe.n("conn_rate_max", ls.MaxRate)
	fe.n("conn_tot", ls.TotalSessions)
	fe.n("req_rate", ls.RequestRate)
	fe.n("req_rate_max", ls.MaxRequestRate)
	fe.n("req_tot", ls.Requests)
	fe.n("intercepted", ls.Intercepted)
	for _, class := range ResponseClasses {
		fe.n("hrsp_"+class, ls.Responses[class])
	}
	fe.zero("dreq", "dresp", "cache_lookups", "cache_hits", "eint")
	return fe
}

// listenBackendRecord is the BACKEND line of a monitor or stats section:
// the requests passed to its backend, without a server, each a session
// and a connection error answered 503 (measured: stot, econ, req_tot and
// hrsp_5xx 1 for one such request); its bytes are the frontend's, as
// haproxy shows them.
func listenBackendRecord(p proxyRef, ls *ListenStats, fullConn int) *statRecord {
	be := newRecord(objBackend, p.iid, 0, p.name, "BACKEND", "http")
	if fullConn > 0 {
		be.n("slim", uint64(fullConn))
	}
	be.s("status", "UP") // haproxy's, for a backend without servers
	be.zero("qcur", "qmax", "weight", "act", "bck", "lbtot", "comp_in", "comp_out", "comp_byp", "comp_rsp",
		"wrew", "reuse", "uweight")
	if ls == nil {
		return be
	}
	be.n("scur", 0)
	be.i("smax", ls.BackendMaxSessions)
	be.n("stot", ls.BackendRequests)
	be.n("bin", ls.BytesIn)
	be.n("bout", ls.BytesOut)
	be.n("econ", ls.BackendRequests)
	be.n("req_tot", ls.BackendRequests)
	for _, class := range ResponseClasses {
		be.n("hrsp_"+class, 0)
	}
	be.n("hrsp_5xx", ls.BackendRequests)
	be.times(ls.BackendRate, ls.BackendMaxRate, ls.BackendLastSessionSec, TimeStats{})
	be.zero("dreq", "dresp", "eresp", "wretr", "wredis", "cli_abrt", "srv_abrt", "chkdown", "connect",
		"cache_lookups", "cache_hits", "eint")
	return be
}

func frontendRecord(f FrontendStats, iid int) *statRecord {
	r := newRecord(objFrontend, iid, 0, f.Name, "FRONTEND", "tcp")
	r.i("scur", f.Sessions)
	r.i("smax", f.MaxSessions)
	if f.SessionLimit > 0 {
		r.n("slim", uint64(f.SessionLimit))
	}
	r.n("stot", f.TotalSessions)
	r.n("bin", f.BytesIn)
	r.n("bout", f.BytesOut)
	r.s("status", "OPEN")
	// TCP mode: a session is a connection (rates.go).
	r.n("rate", f.Rate)
	r.n("rate_max", f.MaxRate)
	r.n("conn_rate", f.Rate)
	r.n("conn_rate_max", f.MaxRate)
	r.n("conn_tot", f.TotalSessions+f.DeniedConn+f.SilentDrops)
	r.n("dreq", f.DeniedReq+f.SilentDrops)
	r.n("dcon", f.DeniedConn)
	r.zero("dresp", "ereq", "rate_lim", "req_rate", "req_rate_max", "req_tot",
		"comp_in", "comp_out", "comp_byp", "comp_rsp", "dses", "wrew")
	return r
}

func backendRecords(b BackendStats, iid int, hideDown bool, f *StatFilter) []*statRecord {
	var out []*statRecord
	for i, s := range b.Servers {
		if hideDown && !s.Up {
			continue // its sid stays taken, as in haproxy
		}
		if !f.keeps(iid, 4, i+1) || (f != nil && f.NoMaint && s.Admin == AdminMaint) {
			continue
		}
		r := newRecord(objServer, iid, i+1, b.Name, s.Name, "tcp")
		r.i("scur", s.Sessions)
		r.i("smax", s.MaxSessions)
		// haproxy counts a session on a server at each connection attempt,
		// and a failed attempt as a retry (wretr) or, when it was the
		// client's last, as a connection error (econ): measured with
		// `retries 3` and one refusing server, stot 4, wretr 3, econ 1.
		// vipstack's ConnectErrors counts every failed attempt.
		r.n("stot", s.TotalSessions+s.ConnectErrors)
		r.n("bin", s.BytesIn)
		r.n("bout", s.BytesOut)
		r.n("econ", s.ConnectErrors-s.Retries)
		r.n("wretr", s.Retries)
		r.n("cli_abrt", s.ClientAborts)
		r.n("srv_abrt", s.ServerAborts)
		r.n("eresp", s.ResponseErrors)
		r.s("status", s.Status)
		r.n("weight", uint64(s.Weight))
		r.n("uweight", uint64(s.Weight))
		r.n("act", 1)
		r.i("lastchg", s.LastChangeSeconds)
		r.n("lbtot", s.Selected)
		r.times(s.Rate, s.MaxRate, s.LastSessionSeconds, s.Times)
		if s.Check {
			r.n("chkfail", s.ChecksFailed)
			r.n("chkdown", s.Downs)
			r.i("downtime", s.DowntimeSeconds)
			// haproxy's MAINT line leaves the paused check's fields empty.
			if s.Admin != AdminMaint {
				if s.CheckStatus != "" {
					r.s("check_status", s.CheckStatus)
					if s.CheckCode != 0 {
						r.n("check_code", uint64(s.CheckCode))
					}
					r.i("check_duration", s.CheckDurationMS)
					r.s("check_desc", healthcheck.Description(s.CheckStatus))
					r.s("last_chk", s.LastCheck())
				}
				if s.CheckRise > 0 {
					r.n("check_rise", uint64(s.CheckRise))
					r.n("check_fall", uint64(s.CheckFall))
					r.n("check_health", uint64(s.CheckHealth))
				}
			}
		}
		r.zero("qcur", "qmax", "dresp", "wredis", "bck", "wrew", "reuse", "srv_icur", "idle_conn_cur", "safe_conn_cur")
		out = append(out, r)
	}
	r := newRecord(objBackend, iid, 0, b.Name, "BACKEND", "tcp")
	r.i("scur", b.Sessions)
	r.i("smax", b.MaxSessions)
	// The backend counts each client once, whether it reached a server or
	// failed (haproxy's stot 1, econ 1 for a client that no server took,
	// after its retries or with every server DOWN).
	failed := b.Clients() - b.TotalSessions
	r.n("stot", b.Clients())
	r.n("bin", b.BytesIn)
	r.n("bout", b.BytesOut)
	r.n("econ", failed)
	r.n("wretr", b.Retries)
	r.n("cli_abrt", b.ClientAborts)
	r.n("srv_abrt", b.ServerAborts)
	r.n("eresp", b.ResponseErrors)
	r.s("status", b.Status)
	r.n("weight", uint64(b.Weight))
	r.n("uweight", uint64(b.Weight))
	r.n("act", uint64(b.UpServers))
	r.n("lbtot", b.Selected)
	if b.FullConn > 0 {
		r.n("slim", uint64(b.FullConn))
	}
	r.times(b.Rate, b.MaxRate, b.LastSessionSeconds, b.Times)
	// haproxy's backend, DOWN while no server is usable: its changes,
	// the time since the last and its time DOWN (backendstate.go).
	r.n("chkdown", b.Downs)
	r.i("lastchg", b.LastChangeSeconds)
	r.i("downtime", b.DowntimeSeconds)
	r.zero("qcur", "qmax", "dreq", "dresp", "wredis", "bck", "comp_in", "comp_out", "comp_byp", "comp_rsp", "wrew", "reuse")
	if !f.keeps(iid, 2, 0) {
		return out
	}
	return append(out, r)
}

// csvHeader is haproxy 2.6's `show stat` header line.
var csvHeader = "# " + strings.Join(statColumns[:], ",") + ",\n"

// CSV renders a snapshot as haproxy 2.6's stats CSV (see the top of this
// file): the header, then one line per frontend, server and backend, each
// ending with a comma. A field vipstack does not measure is empty.
func (snap Snapshot) CSV() string {
	var b strings.Builder
	b.WriteString(csvHeader)
	for _, r := range snap.records() {
		for i := range statColumns {
			switch {
			case i == statGeneric:
				b.WriteByte('-')
			case i < statGeneric && r.set[i]:
				if t := r.tags(statColumns[i]); t.Type == "str" {
					b.WriteString(csvField(r.str[i]))
				} else {
					b.WriteString(r.number(i, t))
				}
			}
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// csvField quotes a field as haproxy 2.6.12 does: haproxy's names cannot
// hold commas, quotes or line ends, but a check's information (a server's
// reason phrase) can. A field that holds one is written between double
// quotes, with each quote doubled (measured: `"Service, Unavailable"`,
// `"say ""no"""`), so a CSV reader gets the text back.
func csvField(s string) string {
	if !strings.ContainsAny(s, ",\"\n\r") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// jsonField is one field object of haproxy's JSON stats.
type jsonField struct {
	ObjType    string    `json:"objType"`
	ProxyID    int       `json:"proxyId"`
	ID         int       `json:"id"`
	Field      jsonPos   `json:"field"`
	ProcessNum int       `json:"processNum"`
	Tags       jsonTags  `json:"tags"`
	Value      jsonValue `json:"value"`
}

type jsonPos struct {
	Pos  int    `json:"pos"`
	Name string `json:"name"`
}

type jsonTags struct {
	Origin string `json:"origin"`
	Nature string `json:"nature"`
	Scope  string `json:"scope"`
}

type jsonValue struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// JSON renders a snapshot as haproxy 2.6's `;json` stats (see the top of
// this file): compact, with a final newline.
func (snap Snapshot) JSON() []byte {
	recs := [][]jsonField{}
	for _, r := range snap.records() {
		var fields []jsonField
		for i := range statGeneric {
			if !r.set[i] {
				continue
			}
			name := statColumns[i]
			t := r.tags(name)
			var v any = r.num[i]
			switch t.Type {
			case "str":
				v = r.str[i]
			case "s32":
				v = int64(r.num[i])
			}
			fields = append(fields, jsonField{
				ObjType: r.objType, ProxyID: r.proxyID, ID: r.id,
				Field: jsonPos{Pos: i, Name: name}, ProcessNum: 1,
				Tags:  jsonTags{Origin: t.Origin, Nature: t.Nature, Scope: t.Scope},
				Value: jsonValue{Type: t.Type, Value: v},
			})
		}
		recs = append(recs, fields)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(recs) // cannot fail: strings and numbers only
	return b.Bytes()
}

// LastCheck is haproxy's last_chk for the server's last check: empty
// after a passed check (measured: a "200 OK" answer gives L7OK and ""),
// haproxy's text for a check-ssl failure (measured: "SSL handshake
// failure", and "" for L6TOUT), not the TLS library's reason kept in
// CheckInfo, and CheckInfo otherwise. The stats' CSV, JSON and HTML page
// and `vipstack status` show it.
func (s ServerStats) LastCheck() string {
	switch s.CheckStatus {
	case healthcheck.L4OK, healthcheck.L6OK, healthcheck.L7OK:
		return ""
	}
	return healthcheck.HaproxyInfo(healthcheck.Result{Status: s.CheckStatus, Info: s.CheckInfo})
}

// GenericColumns is the number of haproxy's generic CSV fields, the
// first of every line.
const GenericColumns = statGeneric

// Columns is haproxy 2.6's `show stat` CSV header, in its order.
func Columns() []string { return slices.Clone(statColumns[:]) }

// Column is the position of a generic field in a CSV line (0, the first
// column's, for a name that is not one).
func Column(name string) int { return statColumn[name] }
