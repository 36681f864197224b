package stats

import (
	"strconv"
	"strings"
)

// Letters of haproxy's typed output for a field's origin, nature and
// scope (measured from haproxy 2.6's `show stat typed`: "KNS" for pxname,
// "MaP" for weight, "MAP" for lastchg, "MDP" for check_duration).
var (
	typedOrigin = map[string]string{"Key": "K", "Metric": "M", "Status": "S", "Config": "C", "Product": "P"}
	typedNature = map[string]string{"Name": "N", "Gauge": "G", "Max": "M", "Limit": "L", "Counter": "C", "Avg": "a",
		"Age": "A", "Output": "O", "Duration": "D", "Rate": "R", "Time": "T"}
	typedScope = map[string]string{"Service": "S", "Process": "P"}
)

// Typed renders a snapshot as haproxy 2.6's `show stat typed`: a line per
// field with a value, "F.<iid>.<sid>.<pos>.<name>.1:<tags>:<type>:<value>"
// (F, B or S for a frontend, backend or server line), the lines and
// fields those of JSON.
func (snap Snapshot) Typed() string {
	var b strings.Builder
	for _, r := range snap.records() {
		prefix := r.objType[:1] + "." + strconv.Itoa(r.proxyID) + "." + strconv.Itoa(r.id) + "."
		for i := range statGeneric {
			if !r.set[i] {
				continue
			}
			name := statColumns[i]
			t := r.tags(name)
			v := r.str[i]
			if t.Type != "str" {
				v = r.number(i, t)
			}
			b.WriteString(prefix + strconv.Itoa(i) + "." + name + ".1:" +
				typedOrigin[t.Origin] + typedNature[t.Nature] + typedScope[t.Scope] + ":" + t.Type + ":" + v + "\n")
		}
	}
	return b.String()
}
