package dns

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// readmeRow is one row of the answer table in clusterdns/README.md:
// | `NAME TYPE` | `RDATA`, `RDATA` | or NODATA or NXDOMAIN.
var readmeRow = regexp.MustCompile("^\\| `([^ `]+) ([A-Z]+)` \\| (.+) \\|$")

// TestReadme runs every Corefile example in clusterdns/README.md and checks
// the README's answer table against it.
func TestReadme(t *testing.T) {
	corefiles, prose := readmeCorefiles(t, "clusterdns/README.md")
	var rows [][]string
	for _, line := range prose {
		if m := readmeRow.FindStringSubmatch(line); m != nil {
			rows = append(rows, m[1:])
		}
	}
	if len(corefiles) == 0 || len(rows) == 0 {
		t.Fatalf("README has %d corefile examples and %d answer rows; want some of each", len(corefiles), len(rows))
	}
	for i, corefile := range corefiles {
		// Listen on a free loopback port and forward to a local stub.
		corefile = strings.Replace(corefile, ". {\n", ".:0 {\n    bind 127.0.0.1\n", 1)
		corefile = strings.Replace(corefile, "forward . 198.18.0.1", "forward . "+stub(t), 1)
		addr := start(t, corefile)
		if i > 0 {
			continue // the table describes the first example
		}
		for _, r := range rows {
			name, qtype, cell := r[0], dns.StringToType[r[1]], r[2]
			rcode, answer, ns := query(t, addr, name, qtype)
			var want []string
			wantRcode := "NOERROR"
			switch cell {
			case "NODATA":
				if len(ns) != 1 || !strings.Contains(ns[0], " SOA ") {
					t.Errorf("%s %s: authority %q, want the SOA (NODATA)", r[1], name, ns)
				}
			case "NXDOMAIN":
				wantRcode = "NXDOMAIN"
			default:
				for _, v := range strings.Split(cell, ", ") {
					want = append(want, dns.Fqdn(name)+" "+r[1]+" "+strings.Trim(v, "`"))
				}
			}
			if rcode != wantRcode {
				t.Errorf("%s %s: rcode %s, want %s", r[1], name, rcode, wantRcode)
			}
			slices.Sort(want)
			if !matchAll(want, answer) {
				t.Errorf("%s %s: answer %q, README says %q", r[1], name, answer, want)
			}
		}
	}
}

// matchAll compares answer lines, where SERIAL in want matches any number.
func matchAll(want, got []string) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(want[i]), "SERIAL", `\d+`) + "$"
		if !regexp.MustCompile(re).MatchString(got[i]) {
			return false
		}
	}
	return true
}

// TestReadmeMDNS checks every Corefile example in mdnsplugin/README.md
// (Check: starting one would browse mDNS outside a test namespace).
func TestReadmeMDNS(t *testing.T) {
	corefiles, _ := readmeCorefiles(t, "mdnsplugin/README.md")
	if len(corefiles) == 0 {
		t.Fatal("mdnsplugin/README.md has no corefile example")
	}
	for i, cf := range corefiles {
		if err := srv.Check(Corefile{Contents: []byte(cf)}); err != nil {
			t.Errorf("example %d: %v\n%s", i+1, err, cf)
		}
	}
}

// readmeCorefiles reads a README and returns its Corefile examples (the
// blocks fenced by "~~~ corefile" and "~~~") and its other lines.
func readmeCorefiles(t *testing.T, path string) (corefiles, prose []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cur []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "~~~ corefile"):
			in, cur = true, nil
		case in && strings.HasPrefix(line, "~~~"):
			in = false
			corefiles = append(corefiles, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, line)
		default:
			prose = append(prose, line)
		}
	}
	return corefiles, prose
}
