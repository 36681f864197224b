package httpproxy

import (
	"net/http"
	"net/netip"
)

// Rules are a frontend's and its backends' request rules (acl,
// http-request, redirect, use_backend) for the loop engine
// (lb/httploop), which runs them on an *http.Request it builds from the
// parsed head when the frontend has rules: both engines share the
// evaluation.
type Rules struct{ c *compiled }

// NewRules compiles cfg's rules.
func NewRules(cfg Config) *Rules { return &Rules{c: compile(cfg)} }

// Decision is what the rules decided for a request.
type Decision struct {
	// Backend is the backend the request goes to (use_backend, else
	// default_backend; "" for none, or one the configuration lacks).
	Backend string
	// Status is non-zero when the rules answered: a deny's status, or a
	// redirect's code with Location.
	Status   int
	Location string
	// Term is the log's termination state of an answer of the rules.
	Term string
}

// Decide runs the frontend's http-request and redirect rules, its
// use_backend rules, then the chosen backend's rules on r, in haproxy's
// order (as ServeHTTP does before it forwards). The rewrites edit r's
// URL, Host and Header. A rule the loop does not serve (use-service,
// return) ends nothing here: lb/httploop refuses them at load.
func (rs *Rules) Decide(r *http.Request, src, dst netip.AddrPort) Decision {
	c := rs.c
	rq := &request{r: r, src: src, dst: dst, samples: c.samples}
	fe := c.cfg.Frontend.HTTP
	if fe == nil {
		return Decision{}
	}
	if v := apply(&fe.HTTPProxy, c.feACLs, rq); v.status != 0 {
		return Decision{Status: v.status, Location: v.location, Term: v.term()}
	}
	backend := c.cfg.Frontend.Backend
	for _, u := range fe.UseBackends {
		if c.feACLs.cond(u.Cond, rq) {
			backend = u.Backend
			break
		}
	}
	b := c.cfg.Backends[backend]
	if b == nil {
		return Decision{}
	}
	if b.HTTP != nil {
		if v := apply(&b.HTTP.HTTPProxy, c.beACLs[backend], rq); v.status != 0 {
			return Decision{Backend: backend, Status: v.status, Location: v.location, Term: v.term()}
		}
	}
	return Decision{Backend: backend}
}
