package lbconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// MaxYAMLSize is the largest YAML file LoadYAML and ParseYAML accept.
const MaxYAMLSize = 1 << 20

// yamlConfig is the native YAML form of a Config; see ParseYAML.
type yamlConfig struct {
	MaxConn       int            `yaml:"maxConn,omitempty"`
	GlobalMaxConn int            `yaml:"globalMaxConn,omitempty"`
	Retries       *int           `yaml:"retries,omitempty"`
	Timeouts      yamlTimeouts   `yaml:"timeouts,omitempty"`
	Frontends     []yamlFrontend `yaml:"frontends,omitempty"`
	Backends      []yamlBackend  `yaml:"backends,omitempty"`
	Monitors      []yamlMonitor  `yaml:"monitors,omitempty"`
	Stats         []yamlStats    `yaml:"stats,omitempty"`
	StatsSockets  []yamlSocket   `yaml:"statsSockets,omitempty"`
	LogTag        string         `yaml:"logTag,omitempty"`
	BufSize       int            `yaml:"bufSize,omitempty"`
	MaxRewrite    *int           `yaml:"maxRewrite,omitempty"`
	// ProxyIDs are the sections' ids by key ("backend NAME").
	ProxyIDs map[string]int `yaml:"proxyIDs,omitempty"`
}

// yamlSocket is a stats socket: address is a file path (a Unix socket) or
// IP:PORT (TCP); mode is octal, as in haproxy.cfg.
type yamlSocket struct {
	Address string `yaml:"address"`
	Mode    string `yaml:"mode,omitempty"`
	Level   string `yaml:"level,omitempty"`
	User    string `yaml:"user,omitempty"`
	Group   string `yaml:"group,omitempty"`
}

type yamlTimeouts struct {
	Connect       duration `yaml:"connect,omitempty"`
	Client        duration `yaml:"client,omitempty"`
	Server        duration `yaml:"server,omitempty"`
	Tunnel        duration `yaml:"tunnel,omitempty"`
	Queue         duration `yaml:"queue,omitempty"`
	HTTPRequest   duration `yaml:"httpRequest,omitempty"`
	HTTPKeepAlive duration `yaml:"httpKeepAlive,omitempty"`
}

type yamlBind struct {
	Addr string `yaml:"addr"`
	V4V6 bool   `yaml:"v4v6,omitempty"`
}

type yamlFrontend struct {
	Name    string       `yaml:"name"`
	Binds   []yamlBind   `yaml:"binds"`
	Backend string       `yaml:"backend"`
	Log     *yamlConnLog `yaml:"log,omitempty"`
	// LogTargets are haproxy `log` lines' values, "/dev/log local0
	// info". A log format without targets goes to standard error
	// ("stderr format raw local0"), as before targets existed.
	LogTargets []string `yaml:"logTargets,omitempty"`
}

type yamlConnLog struct {
	Format      string `yaml:"format"`
	DontLogNull bool   `yaml:"dontLogNull,omitempty"`
}

type yamlBackend struct {
	Name            string         `yaml:"name"`
	Balance         string         `yaml:"balance,omitempty"`
	HTTPCheck       *yamlHTTPCheck `yaml:"httpCheck,omitempty"`
	LogHealthChecks bool           `yaml:"logHealthChecks,omitempty"`
	DontLogNull     bool           `yaml:"dontLogNull,omitempty"`
	Redispatch      bool           `yaml:"redispatch,omitempty"`
	LogTargets      []string       `yaml:"logTargets,omitempty"`
	Servers         []yamlServer   `yaml:"servers"`
}

type yamlHTTPCheck struct {
	Method  string `yaml:"method"`
	URI     string `yaml:"uri,omitempty"`
	Version string `yaml:"version,omitempty"`
}

type yamlServer struct {
	Name     string   `yaml:"name"`
	Addr     string   `yaml:"addr"`
	Weight   *int     `yaml:"weight,omitempty"`
	Check    bool     `yaml:"check,omitempty"`
	CheckSSL bool     `yaml:"checkSSL,omitempty"`
	Verify   *bool    `yaml:"verify,omitempty"`
	Inter    duration `yaml:"inter,omitempty"`
	Fall     int      `yaml:"fall,omitempty"`
	Rise     int      `yaml:"rise,omitempty"`
}

type yamlMonitor struct {
	Name       string     `yaml:"name"`
	Binds      []yamlBind `yaml:"binds"`
	URI        string     `yaml:"uri"`
	LogTargets []string   `yaml:"logTargets,omitempty"`
}

type yamlStats struct {
	Name        string     `yaml:"name"`
	Binds       []yamlBind `yaml:"binds"`
	URI         string     `yaml:"uri"`
	Refresh     duration   `yaml:"refresh,omitempty"`
	HideVersion bool       `yaml:"hideVersion,omitempty"`
	Users       []yamlUser `yaml:"users,omitempty"`
	LogTargets  []string   `yaml:"logTargets,omitempty"`
	// Prometheus is Stats.Prometheus: the exporter's paths (none: every
	// request) and unless.
	Prometheus *PrometheusService `yaml:"prometheus,omitempty"`
}

type yamlUser struct {
	User string `yaml:"user"`
	Pass string `yaml:"pass"`
}

// typeNames turns the Go names in the YAML library's messages into the
// form's own words.
func typeNames() *strings.Replacer {
	return strings.NewReplacer(
		"lbconfig.yamlConfig", "the top level", "lbconfig.yamlTimeouts", "timeouts",
		"lbconfig.yamlBind", "a bind", "lbconfig.yamlFrontend", "a frontend", "lbconfig.yamlBackend", "a backend",
		"lbconfig.yamlHTTPCheck", "httpCheck", "lbconfig.yamlServer", "a server", "lbconfig.yamlMonitor", "a monitor",
		"lbconfig.yamlStats", "a stats page", "lbconfig.yamlUser", "a stats user", "lbconfig.duration", "a duration",
		"lbconfig.yamlSocket", "a stats socket", "lbconfig.yamlConnLog", "a frontend's log",
	)
}

// yamlTypes are the YAML form's structs by the name the decoder's errors
// give them.
var yamlTypes = map[string]reflect.Type{
	"lbconfig.yamlConfig": reflect.TypeFor[yamlConfig](), "lbconfig.yamlTimeouts": reflect.TypeFor[yamlTimeouts](),
	"lbconfig.yamlBind": reflect.TypeFor[yamlBind](), "lbconfig.yamlFrontend": reflect.TypeFor[yamlFrontend](),
	"lbconfig.yamlConnLog": reflect.TypeFor[yamlConnLog](),
	"lbconfig.yamlBackend": reflect.TypeFor[yamlBackend](), "lbconfig.yamlHTTPCheck": reflect.TypeFor[yamlHTTPCheck](),
	"lbconfig.yamlServer": reflect.TypeFor[yamlServer](), "lbconfig.yamlMonitor": reflect.TypeFor[yamlMonitor](),
	"lbconfig.yamlStats": reflect.TypeFor[yamlStats](), "lbconfig.yamlUser": reflect.TypeFor[yamlUser](),
	"lbconfig.yamlSocket": reflect.TypeFor[yamlSocket](),
}

var (
	lineRE    = regexp.MustCompile(`^line ([0-9]+): (.*)$`)
	unknownRE = regexp.MustCompile(`^field (\S+) not found in type (lbconfig\.\w+)$`)
	typeRE    = regexp.MustCompile("^cannot unmarshal !!\\w+ `(.*)` into (\\S+)$")
	// durationRE is duration.UnmarshalYAML's message about a value.
	durationRE = regexp.MustCompile(`^"(.*)" is not a duration `)
)

// kinds say what a Go type accepts, for the decoder's type errors.
var kinds = map[string]string{"int": "an integer", "*int": "an integer", "bool": "true or false", "*bool": "true or false", "string": "a string"}

// decodeError rewrites the YAML decoder's errors as the rest of the
// configuration's: "file:line: what", one per problem, an unknown field
// with the fields accepted there.
//
// root is the document as a node tree (nil when it could not be read):
// a value the decoder rejects is named by its path in it, since the
// decoder's message has only the line and the value, and a flow mapping
// holds a whole server on one line.
func decodeError(name string, err error, root *yaml.Node) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	errs := make([]error, 0, len(msgs))
	for _, msg := range msgs {
		m := lineRE.FindStringSubmatch(msg)
		if m == nil {
			errs = append(errs, fmt.Errorf("%s: %s", name, typeNames().Replace(msg)))
			continue
		}
		what := m[2]
		if u := unknownRE.FindStringSubmatch(what); u != nil {
			if t, ok := yamlTypes[u[2]]; ok {
				what = fmt.Sprintf("field %s is not a field of %s (accepted: %s)", u[1], typeNames().Replace(u[2]), strings.Join(yamlFields(t), ", "))
			}
		} else if k := typeRE.FindStringSubmatch(what); k != nil && kinds[k[2]] != "" {
			what = fmt.Sprintf("%q is not %s", k[1], kinds[k[2]])
			what = namedValue(root, m[1], k[1], what)
		} else if d := durationRE.FindStringSubmatch(what); d != nil {
			what = namedValue(root, m[1], d[1], what)
		}
		errs = append(errs, fmt.Errorf("%s:%s: %s", name, m[1], typeNames().Replace(what)))
	}
	return errors.Join(errs...)
}

// namedValue puts in front of what the path of the value written as
// value on line (a decimal string), when exactly one mapping value there
// is: "backends[0].servers[0].fall: ...".
func namedValue(root *yaml.Node, line, value, what string) string {
	n, err := strconv.Atoi(line)
	if root == nil || err != nil {
		return what
	}
	var paths []string
	var walk func(node *yaml.Node, path string)
	walk = func(node *yaml.Node, path string) {
		switch node.Kind {
		case yaml.DocumentNode:
			for _, c := range node.Content {
				walk(c, path)
			}
		case yaml.SequenceNode:
			for i, c := range node.Content {
				walk(c, path+"["+strconv.Itoa(i)+"]")
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(node.Content); i += 2 {
				k, v := node.Content[i], node.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				if v.Kind == yaml.ScalarNode && v.Line == n && v.Value == value {
					paths = append(paths, p)
				}
				walk(v, p)
			}
		}
	}
	walk(root, "")
	if len(paths) != 1 {
		return what
	}
	return paths[0] + ": " + what
}

// yamlFields lists the YAML names of t's fields.
func yamlFields(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if n, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); n != "" && n != "-" {
			names = append(names, n)
		}
	}
	return names
}

// duration is a time.Duration written as a Go duration string.
type duration time.Duration

func (d *duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a duration must be a string such as 1s or 500ms", n.Line)
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (accepted: a number with a unit, such as 1s, 500ms or 1m30s)", n.Line, n.Value)
	}
	*d = duration(v)
	return nil
}

func (d duration) MarshalYAML() (any, error) { return formatDuration(time.Duration(d)), nil }

// formatDuration writes d without zero minutes and seconds ("24h", not
// "24h0m0s").
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// LoadYAML reads the YAML form of a Config from path.
func LoadYAML(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load lb config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxYAMLSize+1))
	if err != nil {
		return nil, fmt.Errorf("load lb config %s: %w", path, err)
	}
	return ParseYAML(path, data)
}

// ParseYAML parses data, the YAML form of a Config read from name, and
// returns it after Validate. Unknown fields, repeated keys and more than
// one document are errors. Errors are joined; those about a setting are
// *FieldError with "name:line" where the YAML has one.
//
// In the YAML form field names are lowerCamelCase, durations are Go
// durations ("1s", "1m30s"), and addresses are "IP:PORT", "[IPv6]:PORT"
// or, for binds, "localhost:PORT". An example, equivalent to the
// haproxy.cfg of seed 000:
//
//	maxConn: 20000
//	retries: 3
//	timeouts: {connect: 10s, client: 24h, server: 24h, tunnel: 24h, queue: 1m, httpRequest: 30s}
//	frontends:
//	  - name: main
//	    binds: [{addr: "[::]:9445", v4v6: true}]
//	    backend: masters
//	backends:
//	  - name: masters
//	    balance: roundrobin
//	    httpCheck: {method: GET, uri: /readyz, version: HTTP/1.0}
//	    logHealthChecks: true
//	    dontLogNull: true
//	    servers:
//	      - {name: m0, addr: "10.0.3.211:6443", check: true, checkSSL: true, verify: false, inter: 1s, fall: 2, rise: 3}
//	monitors:
//	  - {name: health_check_http_url, binds: [{addr: "[::]:50936", v4v6: true}], uri: /haproxy_ready}
//	stats:
//	  - name: stats
//	    binds: [{addr: "localhost:50000"}]
//	    uri: /haproxy_stats
//	    refresh: 30s
//	    hideVersion: true
//	    users: [{user: Username, pass: Password}]
//
// Omitted settings take Validate's defaults; verify defaults to true.
// weight: 0 and retries: 0 are rejected, as in haproxy.cfg.
func ParseYAML(name string, data []byte) (*Config, error) {
	if len(data) > MaxYAMLSize {
		return nil, fmt.Errorf("%s: file is larger than %d bytes (1 MiB)", name, MaxYAMLSize)
	}
	var raw yamlConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty document (accepted: a mapping with frontends, backends, ...)", name)
		}
		var root *yaml.Node
		if n := new(yaml.Node); yaml.Unmarshal(data, n) == nil {
			root = n
		}
		return nil, decodeError(name, err, root)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: more than one YAML document (accepted: one)", name)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	src := map[string]string{}
	yamlPositions(name, &root, src)

	c, errs := raw.config(src)
	if len(errs) == 0 {
		if err := Validate(c); err != nil {
			errs = fieldErrors(err)
		}
	}
	if len(errs) == 0 {
		if w := TimeoutWarning(c); w != "" && !slices.Contains(c.Warnings, w) {
			c.Warnings = append(c.Warnings, w)
		}
		return c, nil
	}
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		if fe, ok := e.(*FieldError); ok && fe.Pos == "" {
			fe.Pos = name
		}
		out = append(out, e)
	}
	return nil, errors.Join(out...)
}

// fieldErrors splits Validate's joined error.
func fieldErrors(err error) []error {
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		return u.Unwrap()
	}
	return []error{err}
}

// config converts the YAML form to the model, rejecting what only the
// YAML form can get wrong: address syntax and explicit zeros.
func (y *yamlConfig) config(src map[string]string) (*Config, []error) {
	c := &Config{
		MaxConn:       y.MaxConn,
		GlobalMaxConn: y.GlobalMaxConn,
		BufSize:       y.BufSize,
		MaxRewrite:    y.MaxRewrite,
		ProxyIDs:      y.ProxyIDs,
		Timeouts: Timeouts{
			Connect: time.Duration(y.Timeouts.Connect), Client: time.Duration(y.Timeouts.Client),
			Server: time.Duration(y.Timeouts.Server), Tunnel: time.Duration(y.Timeouts.Tunnel),
			Queue: time.Duration(y.Timeouts.Queue), HTTPRequest: time.Duration(y.Timeouts.HTTPRequest),
			HTTPKeepAlive: time.Duration(y.Timeouts.HTTPKeepAlive),
		},
		Source: src,
	}
	var errs []error
	fail := func(key, field, kw, format string, a ...any) {
		if len(errs) < MaxErrors {
			errs = append(errs, &FieldError{Pos: src[key], Field: field, Keyword: kw, Msg: fmt.Sprintf(format, a...)})
		}
	}
	if y.Retries != nil {
		if *y.Retries == 0 {
			fail(ItemKey("defaults", "retries"), "defaults", "retries",
				"retries 0 is not supported by vipstack (accepted: 1 or more, default %d)", DefaultRetries)
		}
		c.Retries = *y.Retries
	}
	binds := func(section string, ys []yamlBind) []Bind {
		var out []Bind
		for i, yb := range ys {
			b, err := parseBindAddr(yb.Addr)
			if err != nil {
				fail(BindKey(section, i), section+", binds["+strconv.Itoa(i)+"]", "bind", "%v", err)
			}
			b.V4V6 = yb.V4V6
			out = append(out, b)
		}
		return out
	}
	c.LogTag = y.LogTag
	logTargets := func(key string, ls []string) []LogTarget {
		var out []LogTarget
		for i, l := range ls {
			t, err := ParseLogTarget(strings.Fields(l))
			if err != nil {
				fail(ItemKey(key, "log"), key+", logTargets["+strconv.Itoa(i)+"]", "log", "%v", err)
				continue
			}
			out = append(out, t)
		}
		return out
	}
	for _, yf := range y.Frontends {
		key := FrontendKey(yf.Name)
		f := Frontend{Name: yf.Name, Binds: binds(key, yf.Binds), Backend: yf.Backend}
		if yf.Log != nil {
			f.Log = &ConnLog{Format: yf.Log.Format, DontLogNull: yf.Log.DontLogNull}
			if len(yf.LogTargets) == 0 {
				f.LogTargets = []LogTarget{{Network: "stderr", Raw: true, Facility: 16, Level: LevelDebug}}
			}
		}
		f.LogTargets = append(f.LogTargets, logTargets(key, yf.LogTargets)...)
		c.Frontends = append(c.Frontends, f)
	}
	for _, yb := range y.Backends {
		key := BackendKey(yb.Name)
		b := Backend{Name: yb.Name, Balance: Balance(yb.Balance), LogHealthChecks: yb.LogHealthChecks,
			DontLogNull: yb.DontLogNull, RedispatchOnRetry: yb.Redispatch, LogTargets: logTargets(key, yb.LogTargets)}
		if h := yb.HTTPCheck; h != nil {
			b.Check = HTTPCheck{Method: h.Method, URI: h.URI, Version: h.Version}
			if h.Method == "" {
				fail(ItemKey(key, "option httpchk"), key, "option httpchk",
					"httpCheck has no method (accepted: a method such as GET; leave httpCheck out for TCP connect checks)")
			}
		}
		for _, ys := range yb.Servers {
			s := Server{Name: ys.Name, Check: ys.Check, CheckSSL: ys.CheckSSL, Verify: true,
				Inter: time.Duration(ys.Inter), Fall: ys.Fall, Rise: ys.Rise}
			field := key + ", server " + ys.Name
			if ys.Addr != "" {
				ap, err := netip.ParseAddrPort(ys.Addr)
				if err != nil {
					fail(ServerKey(yb.Name, ys.Name), field, "server", "addr %q is not IP:PORT or [IPv6]:PORT", ys.Addr)
				}
				s.Addr = ap
			}
			if ys.Weight != nil {
				if *ys.Weight == 0 {
					fail(ServerKey(yb.Name, ys.Name), field, "weight",
						"weight 0 is not supported by vipstack (accepted: 1..%d, default %d)", MaxWeight, DefaultWeight)
				}
				s.Weight = *ys.Weight
			}
			if ys.Verify != nil {
				s.Verify = *ys.Verify
			}
			b.Servers = append(b.Servers, s)
		}
		c.Backends = append(c.Backends, b)
	}
	for _, ym := range y.Monitors {
		key := ListenKey(ym.Name)
		c.Monitors = append(c.Monitors, Monitor{Name: ym.Name, Binds: binds(key, ym.Binds), URI: ym.URI, LogTargets: logTargets(key, ym.LogTargets)})
	}
	for _, ys := range y.Stats {
		s := Stats{Name: ys.Name, Binds: binds(ListenKey(ys.Name), ys.Binds), URI: ys.URI,
			Refresh: time.Duration(ys.Refresh), HideVersion: ys.HideVersion, LogTargets: logTargets(ListenKey(ys.Name), ys.LogTargets),
			Prometheus: ys.Prometheus}
		for _, u := range ys.Users {
			s.Users = append(s.Users, UserPass(u))
		}
		c.Stats = append(c.Stats, s)
	}
	for i, ys := range y.StatsSockets {
		s := StatsSocket{Network: "unix", Address: ys.Address, Level: ys.Level, User: ys.User, Group: ys.Group}
		if _, err := netip.ParseAddrPort(ys.Address); err == nil {
			s.Network = "tcp"
		}
		if ys.Mode != "" {
			m, err := strconv.ParseUint(ys.Mode, 8, 32)
			if err != nil {
				fail("", "statsSockets["+strconv.Itoa(i)+"]", "mode", "mode %q is not an octal number such as 600", ys.Mode)
			}
			s.Mode = uint32(m)
		}
		c.StatsSockets = append(c.StatsSockets, s)
	}
	return c, errs
}

// parseBindAddr parses "IP:PORT", "[IPv6]:PORT" and "localhost:PORT"
// (Host "localhost", Addr 127.0.0.1:PORT).
func parseBindAddr(s string) (Bind, error) {
	if rest, ok := strings.CutPrefix(s, "localhost:"); ok {
		p, err := strconv.ParseUint(rest, 10, 16)
		if err != nil {
			return Bind{}, fmt.Errorf("addr %q: port %q is not a number in 1..65535", s, rest)
		}
		return Bind{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(p)), Host: "localhost"}, nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return Bind{}, fmt.Errorf("addr %q is not IP:PORT, [IPv6]:PORT or localhost:PORT", s)
	}
	return Bind{Addr: ap}, nil
}

// yamlPositions records in src the line of each section, server, bind and
// setting, under the keys Validate looks up.
func yamlPositions(file string, root *yaml.Node, src map[string]string) {
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return
	}
	at := func(n *yaml.Node) string { return file + ":" + strconv.Itoa(n.Line) }
	set := func(key string, n *yaml.Node) {
		if _, ok := src[key]; !ok {
			src[key] = at(n)
		}
	}
	top := root.Content[0]
	settings := map[string]string{"maxConn": ItemKey("defaults", "maxconn"), "retries": ItemKey("defaults", "retries"),
		"globalMaxConn": ItemKey("global", "maxconn")}
	sections := map[string]func(string) string{"frontends": FrontendKey, "backends": BackendKey,
		"monitors": ListenKey, "stats": ListenKey}
	itemKeys := map[string]string{"backend": "default_backend", "balance": "balance", "httpCheck": "option httpchk",
		"uri": "monitor-uri", "refresh": "stats refresh"}
	for k, v := range pairs(top) {
		switch {
		case settings[k.Value] != "":
			set(settings[k.Value], k)
		case k.Value == "timeouts":
			for tk := range pairs(v) {
				name := map[string]string{"httpRequest": "http-request", "httpKeepAlive": "http-keep-alive"}[tk.Value]
				if name == "" {
					name = tk.Value
				}
				set(ItemKey("defaults", "timeout "+name), tk)
			}
		case sections[k.Value] != nil && v.Kind == yaml.SequenceNode:
			for _, item := range v.Content {
				name := scalar(item, "name")
				key := sections[k.Value](name)
				set(key, item)
				for ik, iv := range pairs(item) {
					switch ik.Value {
					case "binds":
						if iv.Kind == yaml.SequenceNode {
							for i, b := range iv.Content {
								set(BindKey(key, i), b)
							}
						}
					case "servers":
						if iv.Kind == yaml.SequenceNode {
							for _, s := range iv.Content {
								set(ServerKey(name, scalar(s, "name")), s)
							}
						}
					case "users":
						if iv.Kind == yaml.SequenceNode {
							for i, u := range iv.Content {
								set(ItemKey(key, "stats auth "+strconv.Itoa(i)), u)
							}
						}
					case "uri":
						if k.Value == "stats" {
							set(ItemKey(key, "stats uri"), ik)
						} else {
							set(ItemKey(key, "monitor-uri"), ik)
						}
					default:
						if kw := itemKeys[ik.Value]; kw != "" {
							set(ItemKey(key, kw), ik)
						}
					}
				}
			}
		}
	}
}

// pairs yields the keys and values of a mapping node.
func pairs(n *yaml.Node) func(yield func(k, v *yaml.Node) bool) {
	return func(yield func(k, v *yaml.Node) bool) {
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !yield(n.Content[i], n.Content[i+1]) {
				return
			}
		}
	}
}

// scalar returns the scalar value of key in mapping n, or "".
func scalar(n *yaml.Node, key string) string {
	for k, v := range pairs(n) {
		if k.Value == key && v.Kind == yaml.ScalarNode {
			return v.Value
		}
	}
	return ""
}

// FormatYAML writes c in the YAML form ParseYAML reads. Source and
// Warnings are not written.
func FormatYAML(c *Config) ([]byte, error) {
	if err := noHTTPInYAML(c); err != nil {
		return nil, err
	}
	if err := noTLSInYAML(c); err != nil {
		return nil, err
	}
	for _, b := range c.Backends {
		if b.ExternalCheck != nil {
			return nil, fmt.Errorf("backend %s: %w", b.Name, ErrYAMLExternalCheck)
		}
		if b.StickTable != nil || len(b.StickRules) > 0 {
			return nil, fmt.Errorf("backend %s: %w", b.Name, ErrYAMLStick)
		}
	}
	for _, f := range c.Frontends {
		if f.TCPRequest != nil {
			return nil, fmt.Errorf("frontend %s: %w", f.Name, ErrYAMLTCPRequest)
		}
	}
	y := yamlConfig{
		MaxConn:       c.MaxConn,
		GlobalMaxConn: c.GlobalMaxConn,
		BufSize:       c.BufSize,
		MaxRewrite:    c.MaxRewrite,
		ProxyIDs:      c.ProxyIDs,
		Timeouts: yamlTimeouts{
			Connect: duration(c.Timeouts.Connect), Client: duration(c.Timeouts.Client),
			Server: duration(c.Timeouts.Server), Tunnel: duration(c.Timeouts.Tunnel),
			Queue: duration(c.Timeouts.Queue), HTTPRequest: duration(c.Timeouts.HTTPRequest),
			HTTPKeepAlive: duration(c.Timeouts.HTTPKeepAlive),
		},
	}
	if c.Retries != 0 {
		y.Retries = &c.Retries
	}
	y.LogTag = c.LogTag
	binds := func(bs []Bind) []yamlBind {
		var out []yamlBind
		for _, b := range bs {
			addr := b.Addr.String()
			if b.Host == "localhost" {
				addr = "localhost:" + strconv.Itoa(int(b.Addr.Port()))
			}
			out = append(out, yamlBind{Addr: addr, V4V6: b.V4V6})
		}
		return out
	}
	for _, f := range c.Frontends {
		yf := yamlFrontend{Name: f.Name, Binds: binds(f.Binds), Backend: f.Backend}
		if f.Log != nil {
			yf.Log = &yamlConnLog{Format: f.Log.Format, DontLogNull: f.Log.DontLogNull}
		}
		for _, t := range f.LogTargets {
			yf.LogTargets = append(yf.LogTargets, t.String())
		}
		y.Frontends = append(y.Frontends, yf)
	}
	for _, b := range c.Backends {
		yb := yamlBackend{Name: b.Name, Balance: string(b.Balance), LogHealthChecks: b.LogHealthChecks,
			DontLogNull: b.DontLogNull, Redispatch: b.RedispatchOnRetry}
		for _, t := range b.LogTargets {
			yb.LogTargets = append(yb.LogTargets, t.String())
		}
		if b.Check.Method != "" || b.Check.URI != "" || b.Check.Version != "" || b.Check.ExpectStatus != "" {
			yb.HTTPCheck = &yamlHTTPCheck{Method: b.Check.Method, URI: b.Check.URI, Version: b.Check.Version}
		}
		for _, s := range b.Servers {
			ys := yamlServer{Name: s.Name, Check: s.Check, CheckSSL: s.CheckSSL,
				Inter: duration(s.Inter), Fall: s.Fall, Rise: s.Rise}
			if s.Addr.IsValid() {
				ys.Addr = s.Addr.String()
			}
			if s.Weight != 0 {
				ys.Weight = &s.Weight
			}
			ys.Verify = &s.Verify
			yb.Servers = append(yb.Servers, ys)
		}
		y.Backends = append(y.Backends, yb)
	}
	for _, m := range c.Monitors {
		ym := yamlMonitor{Name: m.Name, Binds: binds(m.Binds), URI: m.URI}
		for _, t := range m.LogTargets {
			ym.LogTargets = append(ym.LogTargets, t.String())
		}
		y.Monitors = append(y.Monitors, ym)
	}
	for _, s := range c.Stats {
		ys := yamlStats{Name: s.Name, Binds: binds(s.Binds), URI: s.URI, Refresh: duration(s.Refresh), HideVersion: s.HideVersion, Prometheus: s.Prometheus}
		for _, u := range s.Users {
			ys.Users = append(ys.Users, yamlUser(u))
		}
		for _, t := range s.LogTargets {
			ys.LogTargets = append(ys.LogTargets, t.String())
		}
		y.Stats = append(y.Stats, ys)
	}
	for _, s := range c.StatsSockets {
		ys := yamlSocket{Address: s.Address, Level: s.Level, User: s.User, Group: s.Group}
		if s.Mode != 0 {
			ys.Mode = strconv.FormatUint(uint64(s.Mode), 8)
		}
		y.StatsSockets = append(y.StatsSockets, ys)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&y); err != nil {
		return nil, fmt.Errorf("format lb config as YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("format lb config as YAML: %w", err)
	}
	return buf.Bytes(), nil
}
