package lb

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/healthcheck"
	"github.com/vipstack/vipstack/internal/lb/stats"
)

// collector exposes the LB's counters to Prometheus. It reads them at
// scrape time, so the forwarding path does no metrics work beyond its
// atomic counters.
type collector struct {
	l *LB
	d descs
}

type descs struct {
	healthy, idleCloses, logDrops                                *prometheus.Desc
	srvUp, srvCur, srvTot, srvIn, srvOut, srvChecks, srvRetries  *prometheus.Desc
	srvConnErr, srvDowns, srvWeight                              *prometheus.Desc
	srvCliAbrt, srvSrvAbrt, srvRespErr                           *prometheus.Desc
	feCur, feTot, feIn, feOut, feQueue, feQueueDrops, feNoServer *prometheus.Desc
	beUp, beDowns                                                *prometheus.Desc
	// The average times and last session of servers and backends
	// (rates.go); the rates are the counters' rate() in Prometheus.
	srvQTime, srvCTime, srvTTime, srvLastSess *prometheus.Desc
	beQTime, beCTime, beTTime, beLastSess     *prometheus.Desc
	// The monitor and stats sections (ListenStats).
	lsCur, lsTot, lsResp, lsReqErr, lsIntercepted, lsBackend *prometheus.Desc
}

func newCollector(l *LB) collector {
	sl := []string{"backend", "server"}
	fl := []string{"frontend"}
	ll := []string{"section"}
	n := prometheus.NewDesc
	return collector{l: l, d: descs{
		healthy:      n("vipstack_lb_healthy", "1 while at least one server of any backend is UP and has passed a check or has none (the monitor URI answers 200), else 0.", nil, nil),
		idleCloses:   n("vipstack_lb_idle_timeouts_total", "Connections closed by the client, server or tunnel idle timeout.", nil, nil),
		logDrops:     n("vipstack_lb_access_log_dropped_total", "Connection log lines dropped because standard error did not keep up.", nil, nil),
		srvUp:        n("vipstack_lb_server_up", "1 if the server is UP, 0 if DOWN.", sl, nil),
		srvWeight:    n("vipstack_lb_server_weight", "The server's configured weight.", sl, nil),
		srvCur:       n("vipstack_lb_server_current_sessions", "Connections to the server now open (or being opened).", sl, nil),
		srvTot:       n("vipstack_lb_server_sessions_total", "Connections established to the server.", sl, nil),
		srvIn:        n("vipstack_lb_server_bytes_in_total", "Bytes relayed from clients to the server.", sl, nil),
		srvOut:       n("vipstack_lb_server_bytes_out_total", "Bytes relayed from the server to clients.", sl, nil),
		srvChecks:    n("vipstack_lb_server_check_results_total", "Health check results by haproxy check status (L7OK, L4CON, ...).", append(sl, "result"), nil),
		srvConnErr:   n("vipstack_lb_server_connect_errors_total", "Failed connection attempts to the server.", sl, nil),
		srvRetries:   n("vipstack_lb_server_connect_retries_total", "Failed connection attempts to the server that were retried (on another server when one is UP).", sl, nil),
		srvDowns:     n("vipstack_lb_server_downs_total", "UP to DOWN transitions of the server.", sl, nil),
		srvCliAbrt:   n("vipstack_lb_server_client_aborts_total", "Connections to the server that the client ended with a reset or by its idle timeout (haproxy's cli_abrt).", sl, nil),
		srvSrvAbrt:   n("vipstack_lb_server_server_aborts_total", "Connections that the server ended with a reset or by its idle timeout (haproxy's srv_abrt).", sl, nil),
		srvRespErr:   n("vipstack_lb_server_response_errors_total", "Connections that the server ended with a reset (haproxy's eresp).", sl, nil),
		beUp:         n("vipstack_lb_backend_up_servers", "UP servers in the backend.", []string{"backend"}, nil),
		beDowns:      n("vipstack_lb_backend_downs_total", "Changes of the backend to DOWN: none of its servers usable (UP, ready, weight above 0).", []string{"backend"}, nil),
		srvQTime:     n("vipstack_lb_server_queue_time_average_seconds", "Average time the server's last 1024 sessions waited for a slot (haproxy's qtime).", sl, nil),
		srvCTime:     n("vipstack_lb_server_connect_time_average_seconds", "Average time the server's last 1024 sessions took to connect (haproxy's ctime).", sl, nil),
		srvTTime:     n("vipstack_lb_server_total_time_average_seconds", "Average time from accept to close of the server's last 1024 sessions (haproxy's ttime).", sl, nil),
		srvLastSess:  n("vipstack_lb_server_last_session_seconds", "Seconds since the server was last picked for a client (haproxy's lastsess); absent before the first.", sl, nil),
		beQTime:      n("vipstack_lb_backend_queue_time_average_seconds", "Average time the backend's last 1024 sessions waited for a slot (haproxy's qtime).", []string{"backend"}, nil),
		beCTime:      n("vipstack_lb_backend_connect_time_average_seconds", "Average time the backend's last 1024 sessions took to connect (haproxy's ctime).", []string{"backend"}, nil),
		beTTime:      n("vipstack_lb_backend_total_time_average_seconds", "Average time from accept to close of the backend's last 1024 sessions (haproxy's ttime).", []string{"backend"}, nil),
		beLastSess:   n("vipstack_lb_backend_last_session_seconds", "Seconds since the backend's last client (haproxy's lastsess); absent before the first.", []string{"backend"}, nil),
		feCur:        n("vipstack_lb_frontend_current_connections", "Client connections admitted and open.", fl, nil),
		feTot:        n("vipstack_lb_frontend_connections_total", "Client connections accepted.", fl, nil),
		feIn:         n("vipstack_lb_frontend_bytes_in_total", "Bytes received from clients and relayed.", fl, nil),
		feOut:        n("vipstack_lb_frontend_bytes_out_total", "Bytes relayed to clients.", fl, nil),
		feQueue:      n("vipstack_lb_frontend_queue_length", "Clients waiting for a slot (the frontend is at maxconn).", fl, nil),
		feQueueDrops: n("vipstack_lb_frontend_queue_timeouts_total", "Clients closed after waiting `timeout queue` for a slot.", fl, nil),
		feNoServer:   n("vipstack_lb_frontend_no_server_total", "Clients closed because no server was UP or every connection attempt failed.", fl, nil),
		lsCur:        n("vipstack_lb_listen_current_connections", "Client connections open on a monitor or stats section.", ll, nil),
		lsTot:        n("vipstack_lb_listen_connections_total", "Client connections accepted by a monitor or stats section.", ll, nil),
		lsResp: n("vipstack_lb_listen_responses_total", "Answers of a monitor or stats section by class (1xx ... 5xx, other; haproxy's hrsp_*), its refusals (400, 408) included.",
			append(ll, "class"), nil),
		lsReqErr:      n("vipstack_lb_listen_request_errors_total", "Requests a monitor or stats section refused or did not get in time (haproxy's ereq).", ll, nil),
		lsIntercepted: n("vipstack_lb_listen_intercepted_total", "Requests a monitor or stats section answered itself: monitor URI hits, stats pages (haproxy's intercepted).", ll, nil),
		lsBackend:     n("vipstack_lb_listen_backend_requests_total", "Requests a monitor or stats section passed to its backend, which has no server: answered 503.", ll, nil),
	}}
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	d := c.d
	for _, x := range []*prometheus.Desc{d.healthy, d.idleCloses, d.logDrops, d.srvUp, d.srvWeight, d.srvCur, d.srvTot, d.srvIn, d.srvOut, d.srvChecks,
		d.srvConnErr, d.srvRetries, d.srvDowns, d.srvCliAbrt, d.srvSrvAbrt, d.srvRespErr, d.beUp, d.beDowns, d.feCur, d.feTot, d.feIn, d.feOut, d.feQueue, d.feQueueDrops, d.feNoServer,
		d.srvQTime, d.srvCTime, d.srvTTime, d.srvLastSess, d.beQTime, d.beCTime, d.beTTime, d.beLastSess,
		d.lsCur, d.lsTot, d.lsResp, d.lsReqErr, d.lsIntercepted, d.lsBackend} {
		ch <- x
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	d := c.d
	snap := c.l.Snapshot()
	g := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	ctr := func(desc *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	times := func(q, c, t *prometheus.Desc, ts stats.TimeStats, labels ...string) {
		g(q, float64(ts.QueueMS)/1000, labels...)
		g(c, float64(ts.ConnectMS)/1000, labels...)
		g(t, float64(ts.TotalMS)/1000, labels...)
	}
	g(d.healthy, b2f(snap.Healthy))
	ctr(d.idleCloses, c.l.idleCloses.Load())
	ctr(d.logDrops, c.l.accessLog.Dropped())
	for _, f := range snap.Frontends {
		g(d.feCur, float64(f.Sessions), f.Name)
		ctr(d.feTot, f.TotalSessions, f.Name)
		ctr(d.feIn, f.BytesIn, f.Name)
		ctr(d.feOut, f.BytesOut, f.Name)
		g(d.feQueue, float64(f.Queued), f.Name)
		ctr(d.feQueueDrops, f.QueueTimeouts, f.Name)
		ctr(d.feNoServer, f.NoServer, f.Name)
	}
	for _, ls := range snap.Listens {
		g(d.lsCur, float64(ls.Sessions), ls.Name)
		ctr(d.lsTot, ls.TotalSessions, ls.Name)
		for _, class := range stats.ResponseClasses {
			ctr(d.lsResp, ls.Responses[class], ls.Name, class)
		}
		ctr(d.lsReqErr, ls.RequestErrors, ls.Name)
		ctr(d.lsIntercepted, ls.Intercepted, ls.Name)
		ctr(d.lsBackend, ls.BackendRequests, ls.Name)
	}
	for _, b := range snap.Backends {
		g(d.beUp, float64(b.UpServers), b.Name)
		ctr(d.beDowns, b.Downs, b.Name)
		times(d.beQTime, d.beCTime, d.beTTime, b.Times, b.Name)
		if b.LastSessionSeconds >= 0 {
			g(d.beLastSess, float64(b.LastSessionSeconds), b.Name)
		}
		for _, s := range b.Servers {
			g(d.srvUp, b2f(s.Up), b.Name, s.Name)
			g(d.srvWeight, float64(s.Weight), b.Name, s.Name)
			g(d.srvCur, float64(s.Sessions), b.Name, s.Name)
			ctr(d.srvTot, s.TotalSessions, b.Name, s.Name)
			ctr(d.srvIn, s.BytesIn, b.Name, s.Name)
			ctr(d.srvOut, s.BytesOut, b.Name, s.Name)
			ctr(d.srvConnErr, s.ConnectErrors, b.Name, s.Name)
			ctr(d.srvRetries, s.Retries, b.Name, s.Name)
			ctr(d.srvDowns, s.Downs, b.Name, s.Name)
			ctr(d.srvCliAbrt, s.ClientAborts, b.Name, s.Name)
			ctr(d.srvSrvAbrt, s.ServerAborts, b.Name, s.Name)
			ctr(d.srvRespErr, s.ResponseErrors, b.Name, s.Name)
			times(d.srvQTime, d.srvCTime, d.srvTTime, s.Times, b.Name, s.Name)
			if s.LastSessionSeconds >= 0 {
				g(d.srvLastSess, float64(s.LastSessionSeconds), b.Name, s.Name)
			}
			if s.Check {
				for _, st := range healthcheck.Statuses() {
					ctr(d.srvChecks, s.CheckResults[st], b.Name, s.Name, st)
				}
			}
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
