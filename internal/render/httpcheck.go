package render

import (
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// httpCheckLines are the `http-check` lines that follow `option httpchk`
// for what the check has beyond method, URI and version: a connect port,
// the send rule's headers and body, the expected status codes. Values are
// written as haproxy.cfg words (quoteWord).
func httpCheckLines(c lbconfig.HTTPCheck) [][]string {
	var out [][]string
	switch {
	case c.ConnectPort != 0:
		out = append(out, []string{"http-check", "connect", "port", strconv.Itoa(c.ConnectPort)})
	case c.Connect:
		out = append(out, []string{"http-check", "connect"})
	}
	if len(c.Headers) > 0 || c.Body != "" {
		send := []string{"http-check", "send"}
		for _, h := range c.Headers {
			send = append(send, "hdr", quoteWord(h.Name), quoteWord(h.Value))
		}
		if c.Body != "" {
			send = append(send, "body", quoteWord(c.Body))
		}
		out = append(out, send)
	}
	if c.ExpectStatus != "" {
		out = append(out, []string{"http-check", "expect", "status", c.ExpectStatus})
	}
	if e := c.ExpectBody; e != nil {
		line := []string{"http-check", "expect"}
		if e.Not {
			line = append(line, "!")
		}
		kind := "string"
		if e.Regex {
			kind = "rstring"
		}
		out = append(out, append(line, kind, quoteWord(e.Text)))
	}
	return out
}

// quoteWord writes s as one haproxy.cfg word: as it is when it has
// nothing the reader would split or expand, else in double quotes with
// '"', '\' and '$' escaped. Line breaks are refused by lbconfig.Validate
// before this.
func quoteWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t#\\'\"$") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`)
	return `"` + r.Replace(s) + `"`
}
