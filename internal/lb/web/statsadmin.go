package web

import (
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// maxForm bounds the admin form body read with a request's head.
const maxForm = 64 << 10

// StatsAdmin is what the stats page's admin form (`stats admin`) changes:
// a Core that implements it can be driven from the page.
type StatsAdmin interface {
	SetServerAdmin(backend, name string, st stats.AdminState) error
	ShutdownServerSessions(backend, name string) (int, error)
}

// remoteAddr is c's peer address, the zero Addr when it has none.
func remoteAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// realm is the password prompt's realm (`stats realm`).
func (s *Site) realm() string {
	if s.Stats.Realm != "" {
		return strings.ReplaceAll(s.Stats.Realm, `"`, `'`)
	}
	return "HAProxy Statistics"
}

// adminAllowed reports whether r's client may use the admin form.
func (s *Site) adminAllowed(r *request) bool {
	if _, ok := s.Core.(StatsAdmin); !ok {
		return false
	}
	switch s.Stats.Admin {
	case lbconfig.AdminAll:
		return true
	case lbconfig.AdminLocal:
		return r.loopback
	}
	return false
}

// statsPage is page with what the section's show-* settings add, and
// the admin form for a client that may use it.
func (s *Site) statsPage(r *request, uri string, refresh bool) stats.Page {
	p := s.page(refresh)
	if s.Stats.ShowNode {
		p.Node = s.Stats.Node
		if p.Node == "" {
			p.Node = hostname()
		}
	}
	p.Desc, p.Legends = s.Stats.Desc, s.Stats.Legends
	if s.adminAllowed(r) {
		p.AdminURI = uri
	}
	return p
}

// adminPost carries out an admin form post (s=SERVER&...&action=ACTION&
// b=#IID or b=NAME) and redirects to the page with haproxy's status:
// ";st=DONE" when every named server was changed, PART for some, NONE
// for none (or none named), ERRP for a bad or missing parameter (an action vipstack does
// not carry out included: the health and agent ones).
func (s *Site) adminPost(r *request, uri string) *response {
	st := s.applyForm(r.form)
	return &response{code: 303, reason: reasons[303], header: []field{{"cache-control", "no-cache"}, {"content-type", "text/plain"},
		{"content-length", "0"}, {"location", uri + ";st=" + string(st)}}, noLength: true}
}

func (s *Site) applyForm(form []byte) stats.AdminStatus {
	admin := s.Core.(StatsAdmin)
	v, err := url.ParseQuery(string(form))
	if err != nil {
		return stats.AdminErrP
	}
	backend := v.Get("b")
	if id, ok := strings.CutPrefix(backend, "#"); ok {
		n, err := strconv.Atoi(id)
		if err != nil {
			return stats.AdminErrP
		}
		backend = s.Core.Snapshot().BackendByID(n)
	}
	servers := v["s"]
	action := v.Get("action")
	if backend == "" || action == "" {
		return stats.AdminErrP
	}
	if len(servers) == 0 {
		return stats.AdminNone
	}
	var apply func(name string) error
	switch action {
	case "ready", "drain", "maint":
		state := map[string]stats.AdminState{"ready": stats.AdminReady, "drain": stats.AdminDrain, "maint": stats.AdminMaint}[action]
		apply = func(name string) error { return admin.SetServerAdmin(backend, name, state) }
	case "shutdown":
		apply = func(name string) error { _, err := admin.ShutdownServerSessions(backend, name); return err }
	default:
		return stats.AdminErrP
	}
	done := 0
	for _, name := range servers {
		if apply(name) == nil {
			done++
		}
	}
	switch done {
	case len(servers):
		return stats.AdminDone
	case 0:
		return stats.AdminNone
	}
	return stats.AdminPart
}

// hostname is the node name `stats show-node` shows without a name, as
// haproxy shows the host's name.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "-"
	}
	return h
}

// monitorHit reports whether r asks a stats section for its monitor-uri.
func (s *Site) monitorHit(r *request) bool {
	return s.Stats != nil && s.Stats.MonitorURI != "" && requestPath(r.uri, s.Stats.MonitorURI) == s.Stats.MonitorURI
}
