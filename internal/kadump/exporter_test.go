package kadump

// exporter_test.go reads the dump files the way keepalived-exporter
// (github.com/mehdy/keepalived-exporter, internal/collector/parser.go and
// collector.go) does: line prefixes of one, three and five spaces, "="
// and ":" separators, the VIP's first and third words, the states by
// their index in INIT, BACKUP, MASTER, FAULT. The exporter's module is not
// served by the Go module proxy here, so it cannot be built; this is a
// re-implementation of its reading rules, written from its source, so the
// tests fail where the exporter would read something else.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

var exStates = []string{"INIT", "BACKUP", "MASTER", "FAULT"}

type exData struct {
	IName        string   `json:"iname"`
	State        int      `json:"state"`
	WantState    int      `json:"wantstate"`
	Intf         string   `json:"ifp_ifname"`
	GArpDelay    int      `json:"garp_delay"`
	VRID         int      `json:"vrid"`
	VIPs         []string `json:"vips"`
	ExcludedVIPs []string `json:"evips"`
}

type exStats struct {
	AdvertRcvd        int `json:"advert_rcvd"`
	AdvertSent        int `json:"advert_sent"`
	BecomeMaster      int `json:"become_master"`
	ReleaseMaster     int `json:"release_master"`
	PacketLenErr      int `json:"packet_len_err"`
	AdvertIntervalErr int `json:"advert_interval_err"`
	IPTTLErr          int `json:"ip_ttl_err"`
	InvalidTypeRcvd   int `json:"invalid_type_rcvd"`
	AddrListErr       int `json:"addr_list_err"`
	InvalidAuthType   int `json:"invalid_authtype"`
	AuthTypeMismatch  int `json:"authtype_mismatch"`
	AuthFailure       int `json:"auth_failure"`
	PRIZeroRcvd       int `json:"pri_zero_rcvd"`
	PRIZeroSent       int `json:"pri_zero_sent"`
}

type exVRRP struct {
	Data  exData  `json:"data"`
	Stats exStats `json:"stats"`
}

type exScript struct{ Name, Status, State string }

func exStateIndex(s string) (int, error) {
	for i, n := range exStates {
		if n == s {
			return i, nil
		}
	}
	return -1, fmt.Errorf("unknown state %q", s)
}

// exParseData follows the exporter's ParseVRRPData.
func exParseData(r io.Reader) (map[string]*exData, error) {
	data := map[string]*exData{}
	sc := bufio.NewScanner(r)
	var instance, key, val string
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, " VRRP Instance") && strings.Contains(l, "="):
			instance = strings.TrimSpace(strings.Split(strings.TrimSpace(l), "=")[1])
			data[instance] = &exData{IName: instance}
		case strings.HasPrefix(l, "   ") && instance != "":
			if strings.HasPrefix(l, "     ") {
				val = strings.TrimSpace(l)
			} else {
				var args []string
				switch {
				case strings.Contains(l, "="):
					args = strings.Split(strings.TrimSpace(l), "=")
				case strings.Contains(l, ":"):
					args = strings.Split(strings.TrimSpace(l), ":")
				default:
					continue
				}
				key = strings.TrimSpace(args[0])
				if key == "Virtual IP" {
					continue
				}
				val = strings.TrimSpace(args[1])
			}
			d := data[instance]
			if (strings.HasPrefix(key, "Virtual IP (") || key == "Virtual IP") && val != "" {
				d.VIPs = append(d.VIPs, val)
			}
			if strings.HasPrefix(key, "Virtual IP Excluded") && val != "" {
				d.ExcludedVIPs = append(d.ExcludedVIPs, val)
			}
			var err error
			switch key {
			case "State":
				d.State, err = exStateIndex(val)
			case "Wantstate":
				d.WantState, err = exStateIndex(val)
			case "Interface", "Listening device":
				d.Intf = val
			case "Gratuitous ARP delay":
				d.GArpDelay, err = strconv.Atoi(val)
			case "Virtual Router ID":
				d.VRID, err = strconv.Atoi(val)
			}
			if err != nil {
				return data, fmt.Errorf("instance %s: %s: %w", instance, key, err)
			}
		case strings.HasPrefix(l, " VRRP Version") || strings.HasPrefix(l, " VRRP Script"):
		default:
			instance = ""
		}
	}
	return data, sc.Err()
}

// exParseScripts follows the exporter's ParseVRRPScript.
func exParseScripts(r io.Reader) []exScript {
	var out []exScript
	var s exScript
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, " VRRP Script") && strings.Contains(l, "="):
			if s.Name != "" {
				out = append(out, s)
				s = exScript{}
			}
			s.Name = strings.TrimSpace(strings.Split(strings.TrimSpace(l), "=")[1])
		case strings.HasPrefix(l, "   ") && s.Name != "":
			if !strings.Contains(l, "=") {
				continue
			}
			kv := strings.Split(strings.TrimSpace(l), "=")
			switch strings.TrimSpace(kv[0]) {
			case "Status":
				s.Status = strings.TrimSpace(kv[1])
			case "State":
				s.State = strings.TrimSpace(kv[1])
			}
		case !strings.HasPrefix(l, "    "):
			if s.Name != "" {
				out = append(out, s)
				s = exScript{}
			}
		}
	}
	if s.Name != "" {
		out = append(out, s)
	}
	return out
}

// exParseStats follows the exporter's ParseStats.
func exParseStats(r io.Reader) (map[string]*exStats, error) {
	stats := map[string]*exStats{}
	sc := bufio.NewScanner(r)
	var instance, section string
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "VRRP Instance") && strings.Contains(l, ":"):
			instance = strings.TrimSpace(strings.Split(strings.TrimSpace(l), ":")[1])
			stats[instance] = &exStats{}
		case strings.HasPrefix(l, "  ") && strings.HasSuffix(l, ":"):
			section = strings.TrimSpace(strings.Split(strings.TrimSpace(l), ":")[0])
		case strings.HasPrefix(l, "    ") && section != "":
			kv := strings.Split(strings.TrimSpace(l), ":")
			key := strings.TrimSpace(kv[0])
			v, err := strconv.Atoi(strings.TrimSpace(kv[1]))
			if err != nil {
				return stats, fmt.Errorf("%s: %w", key, err)
			}
			s := stats[instance]
			switch section + "/" + key {
			case "Advertisements/Received":
				s.AdvertRcvd = v
			case "Advertisements/Sent":
				s.AdvertSent = v
			case "Packet Errors/Length":
				s.PacketLenErr = v
			case "Packet Errors/TTL":
				s.IPTTLErr = v
			case "Packet Errors/Invalid Type":
				s.InvalidTypeRcvd = v
			case "Packet Errors/Advertisement Interval":
				s.AdvertIntervalErr = v
			case "Packet Errors/Address List":
				s.AddrListErr = v
			case "Authentication Errors/Invalid Type":
				s.InvalidAuthType = v
			case "Authentication Errors/Type Mismatch":
				s.AuthTypeMismatch = v
			case "Authentication Errors/Failure":
				s.AuthFailure = v
			case "Priority Zero/Received":
				s.PRIZeroRcvd = v
			case "Priority Zero/Sent":
				s.PRIZeroSent = v
			}
		case strings.HasPrefix(l, "  ") && !strings.HasSuffix(l, ":") && !strings.HasPrefix(l, "    "):
			kv := strings.Split(strings.TrimSpace(l), ":")
			key := strings.TrimSpace(kv[0])
			section = ""
			v, err := strconv.Atoi(strings.TrimSpace(kv[1]))
			if err != nil {
				return stats, fmt.Errorf("%s: %w", key, err)
			}
			switch key {
			case "Became master":
				stats[instance].BecomeMaster = v
			case "Released master":
				stats[instance].ReleaseMaster = v
			}
		}
	}
	return stats, sc.Err()
}

// exJoin is the exporter's getKeepalivedStats for the text files.
func exJoin(dataR, statsR io.Reader) ([]exVRRP, error) {
	data, err := exParseData(dataR)
	if err != nil {
		return nil, err
	}
	stats, err := exParseStats(statsR)
	if err != nil {
		return nil, err
	}
	for name, d := range data {
		if d.VRID == 0 {
			return nil, fmt.Errorf("incomplete data: instance %s has vrid=0", name)
		}
	}
	if len(data) != len(stats) {
		return nil, fmt.Errorf("keepalived.data and keepalived.stats are not synced: %d and %d instances", len(data), len(stats))
	}
	var out []exVRRP
	for name, d := range data {
		s, ok := stats[name]
		if !ok {
			return nil, fmt.Errorf("no stats for instance %s", name)
		}
		out = append(out, exVRRP{Data: *d, Stats: *s})
	}
	return out, nil
}

func exParseJSON(r io.Reader) ([]exVRRP, error) {
	var out []exVRRP
	err := json.NewDecoder(r).Decode(&out)
	return out, err
}

// exParseVIP is the exporter's ParseVIP: the first and third words.
func exParseVIP(v string) (ip, intf string, ok bool) {
	w := strings.Split(v, " ")
	if len(w) < 3 {
		return "", "", false
	}
	return w[0], w[2], true
}

// exMetrics is the exporter's Collect: each series as one line
// `name{label="value",...} value`, sorted.
func exMetrics(vrrps []exVRRP, scripts []exScript) []string {
	var out []string
	add := func(name string, v int, labels ...string) {
		var b strings.Builder
		for i := 0; i < len(labels); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%q", labels[i], labels[i+1])
		}
		out = append(out, fmt.Sprintf("%s{%s} %d", name, b.String(), v))
	}
	for _, v := range vrrps {
		d, s := v.Data, v.Stats
		common := []string{"iname", d.IName, "intf", d.Intf, "vrid", strconv.Itoa(d.VRID)}
		for _, c := range []struct {
			name string
			v    int
		}{
			{"keepalived_advertisements_received_total", s.AdvertRcvd},
			{"keepalived_advertisements_sent_total", s.AdvertSent},
			{"keepalived_become_master_total", s.BecomeMaster},
			{"keepalived_release_master_total", s.ReleaseMaster},
			{"keepalived_packet_length_errors_total", s.PacketLenErr},
			{"keepalived_advertisements_interval_errors_total", s.AdvertIntervalErr},
			{"keepalived_ip_ttl_errors_total", s.IPTTLErr},
			{"keepalived_invalid_type_received_total", s.InvalidTypeRcvd},
			{"keepalived_address_list_errors_total", s.AddrListErr},
			{"keepalived_authentication_invalid_total", s.InvalidAuthType},
			{"keepalived_authentication_mismatch_total", s.AuthTypeMismatch},
			{"keepalived_authentication_failure_total", s.AuthFailure},
			{"keepalived_priority_zero_received_total", s.PRIZeroRcvd},
			{"keepalived_priority_zero_sent_total", s.PRIZeroSent},
			{"keepalived_gratuitous_arp_delay_total", d.GArpDelay},
		} {
			add(c.name, c.v, common...)
		}
		for _, ip := range d.VIPs {
			if addr, intf, ok := exParseVIP(ip); ok {
				add("keepalived_vrrp_state", d.State, "iname", d.IName, "intf", intf, "vrid", strconv.Itoa(d.VRID), "ip_address", addr)
			}
		}
		for _, ip := range d.ExcludedVIPs {
			if addr, intf, ok := exParseVIP(ip); ok {
				add("keepalived_vrrp_excluded_state", d.State, "iname", d.IName, "intf", intf, "vrid", strconv.Itoa(d.VRID), "ip_address", addr)
			}
		}
		if len(d.VIPs) == 0 {
			add("keepalived_vrrp_state", d.State, "iname", d.IName, "intf", d.Intf, "vrid", strconv.Itoa(d.VRID), "ip_address", "")
		}
	}
	for _, s := range scripts {
		for i, n := range []string{"BAD", "GOOD"} {
			if n == s.Status {
				add("keepalived_script_status", i, "name", s.Name)
			}
		}
		for i, n := range []string{"idle", "running", "requested termination", "forcing termination"} {
			if n == s.State {
				add("keepalived_script_state", i, "name", s.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}
