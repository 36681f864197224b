package stats

import (
	"strconv"
	"strings"
)

// Prometheus writes the figures in the text format of haproxy 2.6's
// Prometheus exporter (`http-request use-service prometheus-exporter`):
// the same metric names and labels (proxy, server, state, code), each
// from the stats field haproxy takes it from. A metric is written for
// the lines whose field vipstack fills; the exporter's metrics vipstack
// has no figure for (the process's, compression, caches, idle
// connections, ...) are left out: docs/haproxy-cfg.md lists them.
func (snap Snapshot) Prometheus() []byte {
	records := snap.records()
	var b strings.Builder
	named := map[string]bool{}
	for _, scope := range []struct {
		obj     string
		prefix  string
		metrics []promMetric
	}{
		{objFrontend, "haproxy_frontend_", promFrontend},
		{objBackend, "haproxy_backend_", promBackend},
		{objServer, "haproxy_server_", promServer},
	} {
		for _, m := range scope.metrics {
			name := scope.prefix + m.name
			for _, r := range records {
				if r.objType != scope.obj {
					continue
				}
				i, ok := statColumn[m.field]
				if !ok || !r.set[i] || m.states != nil && r.str[i] == "" {
					continue
				}
				if !named[name] {
					b.WriteString("# HELP " + name + " " + m.help + "\n# TYPE " + name + " " + m.typ + "\n")
					named[name] = true
				}
				labels := `proxy="` + promEscape(r.str[statColumn["pxname"]]) + `"`
				if scope.obj == objServer {
					labels += `,server="` + promEscape(r.str[statColumn["svname"]]) + `"`
				}
				switch {
				case m.states != nil:
					cur := m.state(r.str[i])
					for _, st := range m.states {
						v := "0"
						if st == cur {
							v = "1"
						}
						b.WriteString(name + "{" + labels + `,state="` + st + `"} ` + v + "\n")
					}
				case m.code != "":
					b.WriteString(name + "{" + labels + `,code="` + m.code + `"} ` + r.number(i, r.tags(m.field)) + "\n")
				case m.seconds:
					b.WriteString(name + "{" + labels + "} " + strconv.FormatFloat(float64(r.num[i])/1000, 'f', 6, 64) + "\n")
				default:
					b.WriteString(name + "{" + labels + "} " + r.number(i, r.tags(m.field)) + "\n")
				}
			}
		}
	}
	return []byte(b.String())
}

// promMetric is one exporter metric and the stats field it shows.
type promMetric struct {
	field, name, typ, help string
	// seconds: the field is in milliseconds, the metric in seconds.
	seconds bool
	// code is the code label of an hrsp_* field.
	code string
	// states are the values of a state label (status, check_status),
	// one line each, 1 for the field's own.
	states []string
	state  func(string) string
}

func promEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// proxyState maps a status field to the exporter's state label.
func proxyState(s string) string {
	switch {
	case s == "OPEN" || strings.HasPrefix(s, "UP") || s == "no check":
		return "UP"
	case strings.HasPrefix(s, "DOWN"):
		return "DOWN"
	case strings.HasPrefix(s, "MAINT"):
		return "MAINT"
	case strings.HasPrefix(s, "DRAIN"):
		return "DRAIN"
	case strings.HasPrefix(s, "NOLB"):
		return "NOLB"
	}
	return s
}

func checkState(s string) string { return strings.TrimPrefix(s, "* ") }

var (
	frontendStates = []string{"DOWN", "UP"}
	serverStates   = []string{"DOWN", "UP", "MAINT", "DRAIN", "NOLB"}
	checkStates    = []string{"HANA", "SOCKERR", "L4OK", "L4TOUT", "L4CON", "L6OK", "L6TOUT", "L6RSP",
		"L7TOUT", "L7RSP", "L7OK", "L7OKC", "L7STS", "PROCERR", "PROCTOUT", "PROCOK"}
)

// Metrics common to the three scopes, by stats field.
var (
	mScur   = promMetric{field: "scur", name: "current_sessions", typ: "gauge", help: "Sessions open now."}
	mSmax   = promMetric{field: "smax", name: "max_sessions", typ: "gauge", help: "Most sessions open at once."}
	mSlim   = promMetric{field: "slim", name: "limit_sessions", typ: "gauge", help: "Cap on open sessions."}
	mStot   = promMetric{field: "stot", name: "sessions_total", typ: "counter", help: "Sessions since start."}
	mBin    = promMetric{field: "bin", name: "bytes_in_total", typ: "counter", help: "Bytes received from clients."}
	mBout   = promMetric{field: "bout", name: "bytes_out_total", typ: "counter", help: "Bytes sent to clients."}
	mDreq   = promMetric{field: "dreq", name: "requests_denied_total", typ: "counter", help: "Requests denied."}
	mDresp  = promMetric{field: "dresp", name: "responses_denied_total", typ: "counter", help: "Responses denied."}
	mQcur   = promMetric{field: "qcur", name: "current_queue", typ: "gauge", help: "Clients waiting in the queue now."}
	mQmax   = promMetric{field: "qmax", name: "max_queue", typ: "gauge", help: "Most clients waiting at once."}
	mEcon   = promMetric{field: "econ", name: "connection_errors_total", typ: "counter", help: "Failed connects to servers."}
	mEresp  = promMetric{field: "eresp", name: "response_errors_total", typ: "counter", help: "Errors reading from servers."}
	mWretr  = promMetric{field: "wretr", name: "retry_warnings_total", typ: "counter", help: "Connect retries."}
	mWredis = promMetric{field: "wredis", name: "redispatch_warnings_total", typ: "counter", help: "Redispatches to another server."}
	mWeight = promMetric{field: "weight", name: "weight", typ: "gauge", help: "Effective weight."}
	mChkdn  = promMetric{field: "chkdown", name: "check_up_down_total", typ: "counter", help: "Transitions from UP to DOWN."}
	mLastch = promMetric{field: "lastchg", name: "check_last_change_seconds", typ: "gauge", help: "Seconds since the last UP/DOWN change."}
	mDownt  = promMetric{field: "downtime", name: "downtime_seconds_total", typ: "counter", help: "Seconds spent DOWN."}
	mLbtot  = promMetric{field: "lbtot", name: "loadbalanced_total", typ: "counter", help: "Times picked by the balancing algorithm."}
	mRmax   = promMetric{field: "rate_max", name: "max_session_rate", typ: "gauge", help: "Highest sessions per second."}
	mCabrt  = promMetric{field: "cli_abrt", name: "client_aborts_total", typ: "counter", help: "Transfers aborted by the client."}
	mSabrt  = promMetric{field: "srv_abrt", name: "server_aborts_total", typ: "counter", help: "Transfers aborted by the server."}
	mLsess  = promMetric{field: "lastsess", name: "last_session_seconds", typ: "gauge", help: "Seconds since the last session."}
	mQtime  = promMetric{field: "qtime", name: "queue_time_average_seconds", typ: "gauge", help: "Average queue time of the last sessions.", seconds: true}
	mCtime  = promMetric{field: "ctime", name: "connect_time_average_seconds", typ: "gauge", help: "Average connect time of the last sessions.", seconds: true}
	mRtime  = promMetric{field: "rtime", name: "response_time_average_seconds", typ: "gauge", help: "Average response time of the last sessions.", seconds: true}
	mTtime  = promMetric{field: "ttime", name: "total_time_average_seconds", typ: "gauge", help: "Average total time of the last sessions.", seconds: true}
	mQtmax  = promMetric{field: "qtime_max", name: "max_queue_time_seconds", typ: "gauge", help: "Longest queue time.", seconds: true}
	mCtmax  = promMetric{field: "ctime_max", name: "max_connect_time_seconds", typ: "gauge", help: "Longest connect time.", seconds: true}
	mRtmax  = promMetric{field: "rtime_max", name: "max_response_time_seconds", typ: "gauge", help: "Longest response time.", seconds: true}
	mTtmax  = promMetric{field: "ttime_max", name: "max_total_time_seconds", typ: "gauge", help: "Longest total time.", seconds: true}
	mUw     = promMetric{field: "uweight", name: "uweight", typ: "gauge", help: "Configured weight."}
)

func hrsp(help string) []promMetric {
	var out []promMetric
	for _, c := range []string{"1xx", "2xx", "3xx", "4xx", "5xx", "other"} {
		out = append(out, promMetric{field: "hrsp_" + c, name: "http_responses_total", typ: "counter", help: help, code: c})
	}
	return out
}

var promFrontend = append(append([]promMetric{mScur, mSmax, mSlim, mStot, mBin, mBout, mDreq, mDresp,
	{field: "ereq", name: "request_errors_total", typ: "counter", help: "Requests that failed to parse or arrive."},
	{field: "status", name: "status", typ: "gauge", help: "Whether the frontend accepts clients.", states: frontendStates, state: proxyState},
	{field: "rate_lim", name: "limit_session_rate", typ: "gauge", help: "Cap on new sessions per second."},
	mRmax}, hrsp("HTTP responses by class.")...),
	promMetric{field: "req_rate_max", name: "http_requests_rate_max", typ: "gauge", help: "Highest HTTP requests per second."},
	promMetric{field: "req_tot", name: "http_requests_total", typ: "counter", help: "HTTP requests."},
	promMetric{field: "conn_rate_max", name: "connections_rate_max", typ: "gauge", help: "Highest connections per second."},
	promMetric{field: "conn_tot", name: "connections_total", typ: "counter", help: "Connections accepted."},
	promMetric{field: "intercepted", name: "intercepted_requests_total", typ: "counter", help: "Requests answered by the proxy itself."},
)

var promBackend = append(append([]promMetric{mQcur, mQmax, mScur, mSmax, mSlim, mStot, mBin, mBout, mDreq, mDresp,
	mEcon, mEresp, mWretr, mWredis,
	{field: "status", name: "status", typ: "gauge", help: "Whether the backend has a server UP.", states: frontendStates, state: proxyState},
	mWeight,
	{field: "act", name: "active_servers", typ: "gauge", help: "Active servers UP."},
	{field: "bck", name: "backup_servers", typ: "gauge", help: "Backup servers UP."},
	mChkdn, mLastch, mDownt, mLbtot, mRmax}, hrsp("HTTP responses by class.")...),
	promMetric{field: "req_tot", name: "http_requests_total", typ: "counter", help: "HTTP requests."},
	mCabrt, mSabrt, mLsess, mQtime, mCtime, mRtime, mTtime, mQtmax, mCtmax, mRtmax, mTtmax, mUw,
)

var promServer = append(append([]promMetric{mQcur, mQmax, mScur, mSmax, mSlim, mStot, mBin, mBout, mDresp,
	mEcon, mEresp, mWretr, mWredis,
	{field: "status", name: "status", typ: "gauge", help: "The server's state.", states: serverStates, state: proxyState},
	mWeight,
	{field: "chkfail", name: "check_failures_total", typ: "counter", help: "Failed checks."},
	mChkdn, mLastch, mDownt,
	{field: "qlimit", name: "queue_limit", typ: "gauge", help: "Cap on the server's queue."},
	{field: "throttle", name: "current_throttle", typ: "gauge", help: "Slow start's share of the weight, percent."},
	mLbtot, mRmax,
	{field: "check_status", name: "check_status", typ: "gauge", help: "The last check's result.", states: checkStates, state: checkState},
	{field: "check_code", name: "check_code", typ: "gauge", help: "The last check's layer 5-7 code."},
	{field: "check_duration", name: "check_duration_seconds", typ: "gauge", help: "The last check's duration.", seconds: true},
}, hrsp("HTTP responses by class.")...),
	mCabrt, mSabrt, mLsess, mQtime, mCtime, mRtime, mTtime, mQtmax, mCtmax, mRtmax, mTtmax, mUw,
)
