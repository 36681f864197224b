package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/vipstack/vipstack/internal/benchdoc"

	"github.com/vipstack/vipstack/hack/internal/hostcheck"
)

// result is one file's row of run.sh's RESULTS table.
type result struct {
	Kind, File       string
	UpClass, VSClass string
	Refused          string
}

// count is one measure of a set of files: how many upstream accepts, how
// many vipstack accepts, and how many of upstream's vipstack accepts too;
// the files where they differ, by name.
type count struct {
	Up, VS, Both int
	Refused      []string // upstream accepts, vipstack refuses
	Extra        []string // vipstack accepts, upstream refuses
}

// add counts a file; note follows its name where it is listed.
func (c *count) add(file string, up, vs bool, note string) {
	name := strings.TrimSuffix(filepath.Base(file), ".conf") + note
	switch {
	case up && vs:
		c.Up, c.VS, c.Both = c.Up+1, c.VS+1, c.Both+1
	case up:
		c.Up++
		c.Refused = append(c.Refused, name)
	case vs:
		c.VS++
		c.Extra = append(c.Extra, name)
	}
}

// share is the part of upstream's files vipstack accepts too.
func (c count) share() float64 {
	if c.Up == 0 {
		return 0
	}
	return float64(c.Both) / float64(c.Up)
}

// figure is one kind of file the issue sets a target for: run.sh's
// measure here, and the one with what the files name provided (nil when
// that step did not run or does not apply).
type figure struct {
	What     string
	Target   float64 // share of upstream's files; 1 means every one
	Here     count
	Provided *count
}

// verdict is the measure the result is taken from.
func (f figure) verdict() count {
	if f.Provided != nil {
		return *f.Provided
	}
	return f.Here
}

var (
	virtualServer = regexp.MustCompile(`(?m)^\s*virtual_server(_group)?\b`)
	apiBalancer   = regexp.MustCompile(`:6443\b`)
)

// accepted is check.py's rule: a host-only complaint (a missing interface,
// script or host name on this machine) does not count as a refusal.
func accepted(class string) bool { return class == "accept" || class == "host-only" }

// figures computes the figures; text reads a corpus file; checked
// holds the verdicts of the files re-checked with what they name provided,
// by file (nil: that step did not run).
func figures(rows []result, text func(file string) string, checked map[string]hostcheck.Verdict) []figure {
	ka := figure{What: "keepalived.conf without `virtual_server` (keepalived -t)", Target: 0.95}
	hp := figure{What: "haproxy.cfg (haproxy -c)", Target: 0.90}
	api := figure{What: "haproxy.cfg balancing a Kubernetes API (:6443)", Target: 1}
	dns := figure{What: "Corefile with stock plugins only", Target: 0.95}
	if checked != nil {
		hp.Provided, api.Provided, dns.Provided = &count{}, &count{}, &count{}
	}
	for _, r := range rows {
		switch r.Kind {
		case "keepalived":
			if !virtualServer.MatchString(text(r.File)) {
				ka.Here.add(r.File, accepted(r.UpClass), accepted(r.VSClass), "")
			}
		case "haproxy":
			isAPI := apiBalancer.MatchString(text(r.File))
			hp.Here.add(r.File, accepted(r.UpClass), accepted(r.VSClass), "")
			if isAPI {
				api.Here.add(r.File, accepted(r.UpClass), accepted(r.VSClass), "")
			}
			if checked != nil {
				up, vs, note := provided(r, checked)
				hp.Provided.add(r.File, up, vs, note)
				if isAPI {
					api.Provided.add(r.File, up, vs, note)
				}
			}
		case "corefile":
			// run.sh has no Corefile checker: check.py calls a Corefile
			// accepted upstream when every plugin it names is stock,
			// and only those count.
			if r.UpClass != "accept" {
				continue
			}
			dns.Here.add(r.File, true, accepted(r.VSClass), "")
			if checked != nil {
				up, vs, note := provided(r, checked)
				dns.Provided.add(r.File, up, vs, note)
			}
		}
	}
	return []figure{ka, hp, api, dns}
}

// provided is a file's result with what it names provided: the re-check's
// where it was re-checked (only a clean accept counts), run.sh's where it
// was not (upstream did not refuse it for this host only). note marks a
// side that still refuses it for this host only.
func provided(r result, checked map[string]hostcheck.Verdict) (up, vs bool, note string) {
	v, ok := checked[r.File]
	if !ok {
		return accepted(r.UpClass), accepted(r.VSClass), ""
	}
	switch {
	case v.Up.Class == "host-only":
		note = " (upstream: for this host only: " + clip(v.Up.Msg) + ")"
	case v.VS.Class == "host-only":
		note = " (vipstack: for this host only: " + clip(v.VS.Msg) + ")"
	}
	return v.Up.Class == "accept", v.VS.Class == "accept", note
}

const (
	hereLabel     = "here (run.sh)"
	providedLabel = "with what the files name provided"
)

// report writes the figures; skipped says why the provided-hosts step did
// not run ("" when it ran).
func report(figs []figure, skipped string) *benchdoc.Report {
	rep := &benchdoc.Report{}
	tb := benchdoc.Table{Header: []string{"files", "checked", "upstream accepts", "vipstack accepts", "of upstream's, vipstack accepts", "target", "result"}}
	var diffs []string
	for _, f := range figs {
		target := fmt.Sprintf("%.0f%%", 100*f.Target)
		if f.Target == 1 {
			target = "every one"
		}
		result := passMiss(f.verdict().share(), f.Target)
		if f.Provided != nil {
			tb.Add(row(f.What, hereLabel, f.Here, target, "next row")...)
			tb.Add(row(f.What, providedLabel, *f.Provided, target, result)...)
		} else {
			tb.Add(row(f.What, hereLabel, f.Here, target, result)...)
		}
		label := hereLabel
		if f.Provided != nil {
			label = providedLabel
		}
		diffs = append(diffs, differences(f.What+", "+label, f.verdict())...)
	}
	if skipped == "" {
		rep.Para("The result is taken from the rows checked with what the files name provided (hack/internal/hostcheck: " +
			"private mount and network namespace, /etc/hosts on 198.18.0.0/15, self-signed certificates; stock CoreDNS as the Corefile checker); " +
			"keepalived.conf has run.sh's row only.")
	} else {
		rep.Para("The result is taken from run.sh's rows: the check with what the files name provided did not run: %s.", skipped)
	}
	rep.Table(tb)
	rep.List(diffs)
	return rep
}

func row(what, label string, c count, target, result string) []string {
	return []string{what, label, fmt.Sprint(c.Up), fmt.Sprint(c.VS), fmt.Sprintf("%d (%.0f%%)", c.Both, 100*c.share()), target, result}
}

func passMiss(share, target float64) string {
	if share < target {
		return "MISS"
	}
	return "PASS"
}

// differences names the files where upstream and vipstack differ.
func differences(what string, c count) []string {
	var out []string
	if len(c.Refused) > 0 {
		out = append(out, what+": upstream accepts, vipstack refuses: "+strings.Join(c.Refused, ", "))
	}
	if len(c.Extra) > 0 {
		out = append(out, what+": vipstack accepts, upstream refuses: "+strings.Join(c.Extra, ", "))
	}
	return out
}

// clip shortens a message to a list item's note.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}
