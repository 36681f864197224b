package stats

import (
	"fmt"
	"html"
	"strings"
)

// BackendByID is the name of the backend section numbered iid (the
// stats page's "#iid" in an admin form), "" when there is none.
func (snap Snapshot) BackendByID(iid int) string {
	for _, p := range snap.proxies {
		if p.iid == iid && p.kind == proxyBackend {
			return p.name
		}
	}
	return ""
}

// adminActions are the actions of the stats page's admin form that
// vipstack carries out: the admin states and killing the sessions.
var adminActions = [][2]string{
	{"ready", "Set state to READY"}, {"drain", "Set state to DRAIN"}, {"maint", "Set state to MAINT"},
	{"shutdown", "Kill Sessions"},
}

// htmlAdminForm writes the admin form of backend iid with its servers:
// a checkbox each, an action and Apply, posted to uri as haproxy's form
// posts (s=server..., action=..., b=#iid).
func htmlAdminForm(b *strings.Builder, uri string, iid int, servers []string) {
	if len(servers) == 0 {
		return
	}
	fmt.Fprintf(b, "<form method=\"post\" action=\"%s\"><input type=\"hidden\" name=\"b\" value=\"#%d\">", html.EscapeString(uri), iid)
	for _, s := range servers {
		e := html.EscapeString(s)
		fmt.Fprintf(b, "<label><input type=\"checkbox\" name=\"s\" value=\"%s\">%s</label> ", e, e)
	}
	b.WriteString("Choose the action to perform on the checked servers: <select name=\"action\"><option value=\"\"></option>")
	for _, a := range adminActions {
		fmt.Fprintf(b, "<option value=\"%s\">%s</option>", a[0], a[1])
	}
	b.WriteString("</select> <input type=\"submit\" value=\"Apply\"></form>\n")
}

// adminServers are the server names of the records of one section when
// it is a backend, and its iid.
func adminServers(recs []*statRecord) (int, []string) {
	var names []string
	for _, r := range recs {
		if r.objType == objServer {
			names = append(names, r.text("svname"))
		}
	}
	return recs[0].proxyID, names
}

// AdminStatus is the outcome of an admin form post, as haproxy writes it
// in the redirect (";st=DONE").
type AdminStatus string

const (
	AdminDone AdminStatus = "DONE" // every server changed
	AdminPart AdminStatus = "PART" // some
	AdminNone AdminStatus = "NONE" // none
	AdminErrP AdminStatus = "ERRP" // a bad parameter
	AdminDeny AdminStatus = "DENY" // stats admin does not allow it
)

// htmlHead writes what `stats show-node`, `stats show-desc` and `stats
// show-legends` add to the page.
func htmlHead(b *strings.Builder, p Page) {
	if p.Node != "" {
		fmt.Fprintf(b, "<p>Node: %s</p>\n", html.EscapeString(p.Node))
	}
	if p.Desc != "" {
		fmt.Fprintf(b, "<p>Description: %s</p>\n", html.EscapeString(p.Desc))
	}
	if p.Legends {
		b.WriteString("<table class=\"tbl\"><tr class=\"active_up\"><td>active UP</td></tr>" +
			"<tr class=\"active_going_down\"><td>active UP, going down</td></tr>" +
			"<tr class=\"active_going_up\"><td>active DOWN, going up</td></tr>" +
			"<tr class=\"active_down\"><td>active or backup DOWN</td></tr>" +
			"<tr class=\"active_no_check\"><td>not checked</td></tr>" +
			"<tr class=\"active_draining\"><td>active or backup SOFT STOPPED for maintenance (DRAIN)</td></tr>" +
			"<tr class=\"maintain\"><td>active or backup DOWN for maintenance (MAINT)</td></tr></table>\n" +
			"<p>Note: \"NOLB\"/\"DRAIN\" = UP with load-balancing disabled.</p>\n")
	}
}
