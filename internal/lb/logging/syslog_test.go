package logging

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vipstack/vipstack/internal/healthcheck"
	"github.com/vipstack/vipstack/internal/lb/logging/logtest"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestSyslogLines checks the messages against the lines haproxy 2.6.12
// sent for the same events (measured on loopback with log targets on
// Unix datagram sockets, `option httpchk` and log-health-checks on one
// backend, not on another).
func TestSyslogLines(t *testing.T) {
	refused := healthcheck.Result{Status: healthcheck.L4CON, Info: "Connection refused"}
	down := func(succ, rise int) healthcheck.State { return healthcheck.State{Successes: succ, Rise: rise, Fall: 2} }
	up := func(fails, fall int) healthcheck.State {
		return healthcheck.State{Up: true, Failures: fails, Rise: 2, Fall: fall}
	}
	withLast := func(st healthcheck.State, r healthcheck.Result) healthcheck.State { st.Last = r; return st }
	tests := []struct {
		name string
		got  []byte
		want string // measured
	}{
		{"check refused", HealthCheckLine("be/s1", refused, down(0, 2)),
			`Health check for server be/s1 failed, reason: Layer4 connection problem, info: "Connection refused", check duration: 0ms, status: 0/2 DOWN.`},
		{"check passed, TCP", HealthCheckLine("be/s2", healthcheck.Result{OK: true, Status: healthcheck.L4OK}, up(0, 2)),
			`Health check for server be/s2 succeeded, reason: Layer4 check passed, check duration: 0ms, status: 2/2 UP.`},
		{"check passed, HTTP, rising", HealthCheckLine("be2/s1", healthcheck.Result{OK: true, Status: healthcheck.L7OK, Code: 200, Info: "OK", Duration: time.Millisecond}, down(1, 2)),
			`Health check for server be2/s1 succeeded, reason: Layer7 check passed, code: 200, check duration: 1ms, status: 1/2 DOWN.`},
		{"check wrong status", HealthCheckLine("be2/s2", healthcheck.Result{Status: healthcheck.L7STS, Code: 503, Info: "Service Unavailable", Duration: time.Millisecond}, down(0, 2)),
			`Health check for server be2/s2 failed, reason: Layer7 wrong status, code: 503, info: "Service Unavailable", check duration: 1ms, status: 0/2 DOWN.`},
		{"check invalid response: no info", HealthCheckLine("be2/s3", healthcheck.Result{Status: healthcheck.L7RSP, Info: "malformed HTTP response"}, down(0, 2)),
			`Health check for server be2/s3 failed, reason: Layer7 invalid response, check duration: 0ms, status: 0/2 DOWN.`},
		{"check reset, falling", HealthCheckLine("be2/s1", healthcheck.Result{Status: healthcheck.SOCKERR, Info: "Connection reset by peer", Duration: 10 * time.Millisecond}, up(1, 2)),
			`Health check for server be2/s1 failed, reason: Socket error, info: "Connection reset by peer", check duration: 10ms, status: 1/2 UP.`},
		// check-ssl (measured, haproxy 2.6.12: the same info for a
		// certificate its ca-file does not verify, a plain HTTP
		// answer, a close and a reset; none for a timeout).
		{"TLS handshake failed: haproxy's info, not the TLS library's", HealthCheckLine("badca/s1", healthcheck.Result{Status: healthcheck.L6RSP, Info: "tls: failed to verify certificate: x509: certificate signed by unknown authority", Duration: 2 * time.Millisecond}, down(0, 2)),
			`Health check for server badca/s1 failed, reason: Layer6 invalid response, info: "SSL handshake failure", check duration: 2ms, status: 0/2 DOWN.`},
		{"TLS handshake timed out: no info", HealthCheckLine("silent/s1", healthcheck.Result{Status: healthcheck.L6TOUT, Info: "TLS handshake timed out", Duration: 1001 * time.Millisecond}, down(0, 2)),
			`Health check for server silent/s1 failed, reason: Layer6 timeout, check duration: 1001ms, status: 0/2 DOWN.`},
		{"TLS check passed", HealthCheckLine("ok/s1", healthcheck.Result{OK: true, Status: healthcheck.L6OK, Duration: 4 * time.Millisecond}, up(0, 3)),
			`Health check for server ok/s1 succeeded, reason: Layer6 check passed, check duration: 4ms, status: 3/3 UP.`},
		{"DOWN after a TLS failure, with the check", ServerStateLine("http/s1", withLast(down(0, 2), healthcheck.Result{Status: healthcheck.L6RSP, Info: "tls: first record does not look like a TLS handshake"}), true, 0, 0),
			`Server http/s1 is DOWN, reason: Layer6 invalid response, info: "SSL handshake failure", check duration: 0ms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.`},
		{"DOWN with the check", ServerStateLine("be/s1", withLast(down(0, 2), refused), true, 1, 0),
			`Server be/s1 is DOWN, reason: Layer4 connection problem, info: "Connection refused", check duration: 0ms. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.`},
		{"DOWN with log-health-checks", ServerStateLine("be2/s1", withLast(down(0, 2), refused), false, 2, 0),
			`Server be2/s1 is DOWN. 2 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.`},
		{"UP with the check", ServerStateLine("be/s1", withLast(up(0, 2), healthcheck.Result{OK: true, Status: healthcheck.L7OK, Code: 200, Info: "OK"}), true, 1, 0),
			`Server be/s1 is UP, reason: Layer7 check passed, code: 200, check duration: 0ms. 1 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.`},
		{"UP with log-health-checks", ServerStateLine("be2/s1", up(0, 2), false, 1, 0),
			`Server be2/s1 is UP. 1 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.`},
		{"no server", NoServerLine("be2"), `backend be2 has no server available!`},
		// A reason with control characters, quotes, angle brackets and
		// bytes above 0x7e: haproxy writes each as <XX>, after keeping
		// its first 127 bytes (measured, the same in the DOWN line).
		{"check info escaped", HealthCheckLine("be/s1", healthcheck.Result{Status: healthcheck.L7STS, Code: 503, Info: "<b>\x1b[31m\"q\" \\ #%\x7f\xc3\xa9"}, down(0, 2)),
			`Health check for server be/s1 failed, reason: Layer7 wrong status, code: 503, info: "<3C>b<3E><1B>[31m<22>q<22> \ #%<7F><C3><A9>", check duration: 0ms, status: 0/2 DOWN.`},
		{"DOWN info escaped", ServerStateLine("be/s1", withLast(down(0, 2), healthcheck.Result{Status: healthcheck.L7STS, Code: 503, Info: "<b>\x1b[31m\"q\" \\ #%\x7f\xc3\xa9"}), true, 0, 0),
			`Server be/s1 is DOWN, reason: Layer7 wrong status, code: 503, info: "<3C>b<3E><1B>[31m<22>q<22> \ #%<7F><C3><A9>", check duration: 0ms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.`},
		{"check info: every byte but CR and LF, cut at 127 then escaped", HealthCheckLine("be/s1", healthcheck.Result{Status: healthcheck.L7STS, Code: 503, Info: allBytes}, down(0, 2)),
			`Health check for server be/s1 failed, reason: Layer7 wrong status, code: 503, info: "<01><02><03><04><05><06><07><08><09><0B><0C><0E><0F><10><11><12><13><14><15><16><17><18><19><1A><1B><1C><1D><1E><1F> !<22>#$%&'()*+,-./0123456789:;<3C>=<3E>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_` + "`" + `abcdefghijklmnopqrstuvwxyz{|}~<7F><80><81>", check duration: 0ms, status: 0/2 DOWN.`},
	}
	for _, tt := range tests {
		if got := string(tt.got); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

// allBytes is every byte from 0x01 to 0xff but CR and LF, in order: the
// reason phrase of TestSyslogLines's measured line.
var allBytes = func() string {
	var b []byte
	for c := 1; c < 256; c++ {
		if c != '\r' && c != '\n' {
			b = append(b, byte(c))
		}
	}
	return string(b)
}()

// recordSink is a Sink's writer that keeps each write.
type recordSink struct{ got []string }

func (r *recordSink) Write(b []byte) (int, error) {
	r.got = append(r.got, string(b))
	return len(b), nil
}

// TestSyslogDatagrams checks the header, the PRI, level filtering and
// minimum level against haproxy 2.6.12's datagrams (measured: `log SOCK
// local0` got "<129>" for a server DOWN, `local0 info warning` "<132>"
// for it and for "no server available", `local2 notice` "<144>" for the
// latter (emerg) and nothing for a "Connect from" line (info)).
func TestSyslogDatagrams(t *testing.T) {
	at := time.Date(2026, time.November, 3, 19, 34, 4, 0, time.Local)
	tests := []struct {
		name  string
		dest  Dest
		level int
		msg   string
		want  []string
	}{
		{"alert to local0", Dest{facility: 16, level: 7}, lbconfig.LevelAlert, "Server be/s1 is DOWN.",
			[]string{"<129>Nov  3 19:34:04 haproxy[22150]: Server be/s1 is DOWN.\n"}},
		{"notice to local0", Dest{facility: 16, level: 7}, lbconfig.LevelNotice, "Health check",
			[]string{"<133>Nov  3 19:34:04 haproxy[22150]: Health check\n"}},
		{"info to local1", Dest{facility: 17, level: 7}, lbconfig.LevelInfo, "Connect from",
			[]string{"<142>Nov  3 19:34:04 haproxy[22150]: Connect from\n"}},
		{"minimum level caps an alert", Dest{facility: 16, level: 6, minLevel: 4}, lbconfig.LevelAlert, "down",
			[]string{"<132>Nov  3 19:34:04 haproxy[22150]: down\n"}},
		{"minimum level caps emerg", Dest{facility: 16, level: 6, minLevel: 4}, lbconfig.LevelEmerg, "none",
			[]string{"<132>Nov  3 19:34:04 haproxy[22150]: none\n"}},
		{"minimum level leaves info", Dest{facility: 16, level: 6, minLevel: 4}, lbconfig.LevelInfo, "conn",
			[]string{"<134>Nov  3 19:34:04 haproxy[22150]: conn\n"}},
		{"emerg passes notice", Dest{facility: 18, level: 5}, lbconfig.LevelEmerg, "none",
			[]string{"<144>Nov  3 19:34:04 haproxy[22150]: none\n"}},
		{"info stopped by notice", Dest{facility: 18, level: 5}, lbconfig.LevelInfo, "Connect from", nil},
		{"raw", Dest{facility: 16, level: 7, raw: true}, lbconfig.LevelInfo, "a line", []string{"a line\n"}},
		{"format rfc3164: a host name", Dest{facility: 16, level: 7, host: true}, lbconfig.LevelInfo, "Connect from",
			[]string{"<134>Nov  3 19:34:04 localhost haproxy[22150]: Connect from\n"}},
		{"log-tag", Dest{facility: 16, level: 7, tag: "hx"}, lbconfig.LevelNotice, "m",
			[]string{"<133>Nov  3 19:34:04 hx[22150]: m\n"}},
		// haproxy 2.6.12 cuts a line at its default len 1024 (measured,
		// TestLongLogLineMatchesHaproxy): with the RFC 3164 header the
		// header and message fill 1024 bytes and the newline comes past
		// them; raw, the newline is the 1024th byte.
		{"raw cut at 1024 bytes, newline included", Dest{facility: 16, level: 7, raw: true}, lbconfig.LevelInfo, strings.Repeat("x", 2000),
			[]string{strings.Repeat("x", 1023) + "\n"}},
		{"RFC 3164 cut at 1024 bytes, newline past them", Dest{facility: 16, level: 7}, lbconfig.LevelInfo, strings.Repeat("x", 2000),
			[]string{"<134>Nov  3 19:34:04 haproxy[22150]: " + strings.Repeat("x", 1024-len("<134>Nov  3 19:34:04 haproxy[22150]: ")) + "\n"}},
		{"RFC 3164 line of 1024 bytes whole", Dest{facility: 16, level: 7}, lbconfig.LevelInfo, strings.Repeat("y", 1024-len("<134>Nov  3 19:34:04 haproxy[22150]: ")),
			[]string{"<134>Nov  3 19:34:04 haproxy[22150]: " + strings.Repeat("y", 1024-len("<134>Nov  3 19:34:04 haproxy[22150]: ")) + "\n"}},
		// `len N` (measured, TestLogLenMatchesHaproxy): the target's
		// datagram is cut to N and the newline comes past it, raw or
		// not; the message itself to the configuration's largest len
		// (at least 1024) less one.
		{"len 80", Dest{facility: 16, level: 7, maxLen: 80, lineMax: 1024}, lbconfig.LevelInfo, strings.Repeat("x", 3000),
			[]string{"<134>Nov  3 19:34:04 haproxy[22150]: " + strings.Repeat("x", 80-len("<134>Nov  3 19:34:04 haproxy[22150]: ")) + "\n"}},
		{"len 80 raw", Dest{facility: 16, level: 7, raw: true, maxLen: 80, lineMax: 1024}, lbconfig.LevelInfo, strings.Repeat("x", 3000),
			[]string{strings.Repeat("x", 80) + "\n"}},
		{"len 2000", Dest{facility: 16, level: 7, maxLen: 2000, lineMax: 2000}, lbconfig.LevelInfo, strings.Repeat("x", 3000),
			[]string{"<134>Nov  3 19:34:04 haproxy[22150]: " + strings.Repeat("x", 2000-len("<134>Nov  3 19:34:04 haproxy[22150]: ")) + "\n"}},
		{"len 2000 raw: the message holds 1999", Dest{facility: 16, level: 7, raw: true, maxLen: 2000, lineMax: 2000}, lbconfig.LevelInfo, strings.Repeat("x", 3000),
			[]string{strings.Repeat("x", 1999) + "\n"}},
		{"default len raw beside a len 2000", Dest{facility: 16, level: 7, raw: true, maxLen: 1024, lineMax: 2000}, lbconfig.LevelInfo, strings.Repeat("x", 3000),
			[]string{strings.Repeat("x", 1024) + "\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordSink{}
			d := tt.dest
			d.sink = &Sink{network: "stdout", w: rec}
			if d.tag == "" {
				d.tag = DefaultTag
			}
			deliver(&Dests{d}, tt.level, at, []byte(tt.msg), 22150, nil)
			if diff := cmp.Diff(tt.want, rec.got); diff != "" {
				t.Errorf("datagrams (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLogSinkUnreachable: a socket target that cannot be reached is
// reported once, its messages dropped; it is tried again after Retry
// and reported when it works.
func TestLogSinkUnreachable(t *testing.T) {
	path := t.TempDir() + "/log.sock"
	var reports []string
	s := &Sink{network: "unixgram", address: path, report: func(s *Sink, err error) {
		reports = append(reports, s.String()+": "+map[bool]string{true: "failed", false: "works"}[err != nil])
	}}
	now := time.Unix(1000, 0)
	if s.send([]byte("a\n"), now) || s.send([]byte("b\n"), now.Add(Retry/2)) {
		t.Fatal("sent to a socket that does not exist")
	}
	ln := logtest.ListenUnixgram(t, path)
	if s.send([]byte("c\n"), now.Add(Retry/2)) {
		t.Error("tried again before Retry")
	}
	if !s.send([]byte("d\n"), now.Add(Retry)) {
		t.Error("not sent once the socket exists and Retry passed")
	}
	if got := logtest.ReadDatagram(t, ln, bound); got != "d\n" {
		t.Errorf("received %q, want d", got)
	}
	want := []string{path + ": failed", path + ": works"}
	if diff := cmp.Diff(want, reports); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
	s.Close()
}

// TestAdminLines checks the runtime API's state change messages against
// what haproxy 2.6.12 sent (measured on a backend be of two checked
// servers and a backend be2 of one unchecked server, with `set server
// ... state`, `disable server` and `enable server`; levels: 0 emerg, 1
// alert, 5 notice).
func TestAdminLines(t *testing.T) {
	type l = Line
	tests := []struct {
		name string
		c    AdminChange
		want []Line
	}{
		{"ready to maint, UP, another left",
			AdminChange{Backend: "be", ID: "be/s1", From: stats.AdminReady, To: stats.AdminMaint, Up: true, Before: 2, After: 1},
			[]l{{1, "Server be/s1 is going DOWN for maintenance. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue."}}},
		{"ready to maint, the last one",
			AdminChange{Backend: "be", ID: "be/s2", From: stats.AdminReady, To: stats.AdminMaint, Up: true, Before: 1, After: 0},
			[]l{{1, "Server be/s2 is going DOWN for maintenance. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue."},
				{0, "backend be has no server available!"}}},
		{"drain to maint: notice, and the backend had no usable server to lose",
			AdminChange{Backend: "be", ID: "be/s1", From: stats.AdminDrain, To: stats.AdminMaint, Up: true, Sessions: 3, Before: 1, After: 1},
			[]l{{5, "Server be/s1 is going DOWN for maintenance. 1 active and 0 backup servers left. 3 sessions active, 0 requeued, 0 remaining in queue."}}},
		{"ready to maint, DOWN",
			AdminChange{Backend: "be", ID: "be/s1", From: stats.AdminReady, To: stats.AdminMaint, Up: false, Before: 1, After: 1},
			[]l{{5, "Server be/s1 was DOWN and now enters maintenance."}}},
		{"drain to maint, DOWN",
			AdminChange{Backend: "be", ID: "be/s1", From: stats.AdminDrain, To: stats.AdminMaint, Up: false, Before: 1, After: 1},
			[]l{{5, "Server be/s1 was DOWN and now enters maintenance."}}},
		{"maint to ready",
			AdminChange{Backend: "be", ID: "be/s1", From: stats.AdminMaint, To: stats.AdminReady, Before: 1, After: 2},
			[]l{{5, "Server be/s1 is UP/READY (leaving forced maintenance)."}}},
		{"maint to drain",
			AdminChange{Backend: "be2", ID: "be2/s1", From: stats.AdminMaint, To: stats.AdminDrain, Before: 0, After: 0},
			[]l{{5, "Server be2/s1 is UP/DRAIN (leaving forced maintenance)."}, {5, "Server be2/s1 remains in forced drain mode."}}},
		{"ready to drain, UP, another left",
			AdminChange{Backend: "be", ID: "be/s1", From: stats.AdminReady, To: stats.AdminDrain, Up: true, Before: 2, After: 1},
			[]l{{5, "Server be/s1 enters drain state. 1 active and 0 backup servers online. 0 sessions requeued, 0 total in queue."}}},
		{"ready to drain, the last one",
			AdminChange{Backend: "be2", ID: "be2/s1", From: stats.AdminReady, To: stats.AdminDrain, Up: true, Before: 1, After: 0},
			[]l{{5, "Server be2/s1 enters drain state. 0 active and 0 backup servers online. 0 sessions requeued, 0 total in queue."},
				{0, "backend be2 has no server available!"}}},
		{"ready to drain, DOWN",
			AdminChange{Backend: "be", ID: "be/s1", From: stats.AdminReady, To: stats.AdminDrain, Up: false, Before: 1, After: 1},
			[]l{{5, "Server be/s1 enters drain state. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue."}}},
		{"drain to ready, UP",
			AdminChange{Backend: "be", ID: "be/s1", From: stats.AdminDrain, To: stats.AdminReady, Up: true, Before: 1, After: 2},
			[]l{{5, "Server be/s1 is UP (leaving forced drain)."}}},
		{"drain to ready, DOWN",
			AdminChange{Backend: "be", ID: "be/s1", From: stats.AdminDrain, To: stats.AdminReady, Up: false, Before: 1, After: 1},
			[]l{{5, "Server be/s1 is DOWN (leaving forced drain)."}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, AdminLines(tt.c)); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStoppedLine checks the soft stop's line against haproxy 2.6.12's
// (measured on SIGUSR1).
func TestStoppedLine(t *testing.T) {
	for _, tt := range []struct {
		name   string
		fe, be uint64
		want   string
	}{
		{"fe", 3, 0, "Proxy fe stopped (cumulated conns: FE: 3, BE: 0)."},
		{"health_check_http_url", 6, 1, "Proxy health_check_http_url stopped (cumulated conns: FE: 6, BE: 1)."},
		{"be", 0, 3, "Proxy be stopped (cumulated conns: FE: 0, BE: 3)."},
	} {
		if got := string(StoppedLine(tt.name, tt.fe, tt.be)); got != tt.want {
			t.Errorf("got %s\nwant %s", got, tt.want)
		}
	}
}
