package cluster

import (
	"reflect"
	"strings"
	"testing"
)

// TestYAMLTypeErrors checks that a value of the wrong type is reported
// with its line, its field, the value and what the field accepts.
func TestYAMLTypeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want string
	}{
		{name: "bool", yaml: good + "vrrp:\n  unicast: yes please\n",
			want: `c.yaml:10: vrrp.unicast: bad value "yes please"; accepted: true or false`},
		{name: "int", yaml: good + "vrrp: {version: three}\n",
			want: `c.yaml:9: vrrp.version: bad value "three"; accepted: 2 or 3`},
		{name: "port out of int range", yaml: good + "ports: {lb: 99999999999999999999}\n",
			want: `c.yaml:9: ports.lb: bad value "99999999999999999999"; accepted: a port, 1..65535`},
		{name: "float port", yaml: good + "ports: {lb: 9445.5}\n",
			want: `c.yaml:9: ports.lb: bad value "9445.5"; accepted: a port, 1..65535`},
		{name: "float version", yaml: good + "vrrp: {version: 3.0}\n",
			want: `c.yaml:9: vrrp.version: bad value "3.0"; accepted: 2 or 3`},
		{name: "duration as a list", yaml: good + "vrrp: {advertInterval: [1s]}\n",
			want: `c.yaml:9: vrrp.advertInterval: bad value (a list); accepted: a duration, e.g. 1s or 100ms`},
		{name: "address as a list", yaml: good + "dnsVIP: [198.18.0.9]\n",
			want: `c.yaml:9: dnsVIP: bad value (a list); accepted: an IP address, e.g. 198.18.0.5`},
		{name: "list as a scalar", yaml: good + "upstreamDNS: 198.18.0.53\n",
			want: `c.yaml:9: upstreamDNS: bad value "198.18.0.53"; accepted: a list of IP addresses or IP:port, e.g. [198.18.0.53]`},
		{name: "list element as a mapping", yaml: strings.Replace(good, "ips: [198.18.0.21]", "ips: [{a: b}]", 1),
			want: `c.yaml:8: nodes[1].ips[0]: bad value (a mapping); accepted: an IP address, e.g. 198.18.0.11`},
		{name: "mapping as a list", yaml: good + "ports: [9445]\n",
			want: `c.yaml:9: ports: bad value (a list); accepted: a mapping of api, lb, ingressHealth, machineConfig, lbMachineConfig, status`},
		{name: "top level as a list", yaml: "- a\n",
			want: `c.yaml:1: bad value (a list); accepted: a mapping of name, baseDomain, apiVIPs, ingressVIPs, dnsVIP, machineNetworks, upstreamDNS, nodes, membership, vrrp, loadBalancer, bgp, ports`},
		{name: "long value", yaml: good + "vrrp: {unicast: '" + strings.Repeat("x", 50) + "'}\n",
			want: `c.yaml:9: vrrp.unicast: bad value "` + strings.Repeat("x", 40) + `"...; accepted: true or false`},
		{name: "alias, at its use", yaml: good + "vrrp: {interface: &a eth0}\nports: {lb: *a}\n",
			want: `c.yaml:10: ports.lb: bad value "eth0"; accepted: a port, 1..65535`},
		{name: "with an unknown field, in line order", yaml: good + "colour: red\nvrrp: {unicast: 1}\n",
			want: "c.yaml:9: unknown field \"colour\"\nc.yaml:10: vrrp.unicast: bad value \"1\"; accepted: true or false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.yaml))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error:\n%v\nwant:\n%s", err, tc.want)
			}
		})
	}
}

// TestAcceptedNamesEveryField checks that every field of the cluster file
// whose type alone does not say what it accepts has its own words.
func TestAcceptedNamesEveryField(t *testing.T) {
	var check func(typ reflect.Type, pattern string)
	check = func(typ reflect.Type, pattern string) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch typ.Kind() {
		case reflect.Struct:
			for f := range typ.Fields() {
				name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if pattern != "" {
					name = pattern + "." + name
				}
				check(f.Type, name)
			}
			return
		case reflect.Slice:
			check(typ.Elem(), pattern+"[]")
		case reflect.Bool:
			return // "true or false" says it
		}
		if got := accepted(pattern, typ); got == accepted("", typ) {
			t.Errorf("%s accepts %q, which only says its type", pattern, got)
		}
	}
	check(reflect.TypeFor[File](), "")
}
