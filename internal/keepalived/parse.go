package keepalived

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Load reads path (and its includes) from the file system, with the host
// name as config ID (see LoadID).
func Load(path string) (*Config, error) { return LoadID(path, "") }

// LoadID reads path (and its includes) from the file system. configID is
// keepalived's -i/--config-id: a line "@ID ..." is read only when ID is
// configID, a line "@^ID ..." only when it is not. "" means the host name,
// keepalived's default.
func LoadID(path, configID string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("load keepalived config %s: %w", path, err)
	}
	abs = filepath.ToSlash(abs)
	fsys := os.DirFS("/")
	data, err := readLimited(fsys, strings.TrimPrefix(abs, "/"))
	if err != nil {
		return nil, fmt.Errorf("load keepalived config %s: %w", abs, err)
	}
	return ParseID(abs, data, fsys, configID)
}

// Parse parses data as if read from name. Includes are read through fsys:
// an absolute include path /a/b is opened as a/b, a relative one is first
// joined to the directory of the including file. On any error it returns a
// nil Config and all errors (up to 20) joined, each an *Error.
func Parse(name string, data []byte, fsys fs.FS) (*Config, error) {
	return ParseID(name, data, fsys, "")
}

// ParseID is Parse with a config ID for "@ID" lines (see LoadID).
func ParseID(name string, data []byte, fsys fs.FS, configID string) (*Config, error) {
	if configID == "" {
		configID, _ = os.Hostname()
	}
	errs := &errList{}
	r := &reader{fsys: fsys, errs: errs, configID: configID}
	if len(data) > MaxFileSize {
		errs.add(Pos{File: name}, "", "%v", errTooLarge)
		return nil, errs.err()
	}
	r.readFile(name, data)
	tree := buildTree(r.lines, errs)

	p := &parser{errs: errs, cfg: NewConfig(), insts: map[*Instance]*instMeta{},
		globalSeen: map[string]Pos{}, syncNames: map[string]Pos{}, instByName: map[string]*Instance{},
		unknownTracks: map[Pos]bool{}, processPos: map[string]Pos{}}
	p.cfg.Warnings = r.warnings
	p.top(tree)
	p.validate()
	if err := errs.err(); err != nil {
		return nil, err
	}
	// The model-level rules hold for what the reader accepts; a failure
	// here is a reader bug, reported rather than run.
	if err := p.cfg.Validate(); err != nil {
		return nil, err
	}
	p.cfg.Files = r.files
	return p.cfg, nil
}

// NewConfig returns an empty configuration with keepalived's global
// defaults, the one the reader starts from; a program building a
// configuration starts from it too, adds scripts and instances (see
// NewScript and NewInstance), and checks the result with Validate.
func NewConfig() *Config {
	return &Config{
		Global: GlobalDefs{
			VRRPVersion:             2,
			GARPMasterDelay:         5 * time.Second,
			GARPMasterRepeat:        5,
			GARPMasterRefreshRepeat: 1,
			MaxAutoPriority:         -1,
		},
		Scripts: map[string]*Script{},
	}
}

// NewScript returns a vrrp_script running command, with keepalived's
// defaults (interval 1 s, timeout the interval, rise and fall 1) and Args
// split from command as the reader splits it.
func NewScript(name, command string) *Script {
	args, _ := SplitCommand(command)
	return &Script{Name: name, Command: command, Args: args, Interval: time.Second, Timeout: time.Second, Rise: 1, Fall: 1}
}

// NewInstance returns a vrrp_instance with keepalived's defaults (BACKUP,
// priority 100, advert_int 1 s, preempt, accept) and c's global settings
// resolved (version, garp_master_*), as the reader gives an instance that
// sets none of them. It is not added to c. A version 3 or IPv6 instance
// needs its Version set when c's vrrp_version is 2.
func (c *Config) NewInstance(name string) *Instance {
	g := &c.Global
	return &Instance{
		Name: name, InitialState: "BACKUP", Priority: 100, AdvertInterval: time.Second,
		Version: g.VRRPVersion, Preempt: true, Accept: true,
		GARPMasterDelay: g.GARPMasterDelay, GARPMasterRepeat: g.GARPMasterRepeat,
		GARPMasterRefresh: g.GARPMasterRefresh, GARPMasterRefreshRepeat: g.GARPMasterRefreshRepeat,
	}
}

// parser turns the statement tree into a Config.
type parser struct {
	errs       *errList
	cfg        *Config
	insts      map[*Instance]*instMeta
	globalSeen map[string]Pos // global_defs keyword -> first position
	syncNames  map[string]Pos
	instByName map[string]*Instance
	defined    string // scriptNames, computed once for error messages
	// unknownTracks are the track_script entries naming a vrrp_script not
	// defined yet where they were read.
	unknownTracks map[Pos]bool
	// processPos is where each vrrp_track_process was defined, also for
	// the ones refused, so that a track_process naming one is not
	// reported twice.
	processPos map[string]Pos
	// smtpAlert and smtpAlertVRRP are global smtp_alert and
	// smtp_alert_vrrp, nil when not set.
	smtpAlert, smtpAlertVRRP *bool
}

// instMeta is what validation needs to know about an instance beyond the
// model: which settings were explicit, and where.
type instMeta struct {
	seen                   map[string]Pos // keyword -> first position
	advertRaw              string
	garpDelay, garpRefresh *time.Duration
	garpRepeat, garpRefRep *int
	smtpAlert              *bool  // smtp_alert, nil when not set
	srcKw                  string // unicast_src_ip or mcast_src_ip, whichever set UnicastSrcIP
	vipEntries             int    // virtual_ipaddress entries, valid or not
	peerPos                []Pos  // position of each UnicastPeers entry
}

func (p *parser) warn(pos Pos, format string, a ...any) {
	p.cfg.Warnings = append(p.cfg.Warnings, pos.String()+": "+fmt.Sprintf(format, a...))
}

// reject reports a keyword the block does not accept.
func (p *parser) reject(s *stmt, where, accepted, unsupported string) {
	kw := s.kw()
	if inList(lvsKeywords, kw) {
		p.errs.add(s.pos, kw, "keyword %q is not supported by vipstack: it configures IPVS (LVS), which vipstack does not "+
			"implement and this kernel does not have; run keepalived for it, or balance with vipstack lb", kw)
		return
	}
	if inList(unsupported, kw) {
		p.errs.add(s.pos, kw, "keyword %q is not supported by vipstack", kw)
		return
	}
	p.errs.add(s.pos, kw, "unknown keyword %q in %s (accepted: %s)", kw, where, accepted)
}

// once records the first use of a keyword in a block and rejects repeats.
func (p *parser) once(seen map[string]Pos, s *stmt) bool {
	if first, ok := seen[s.kw()]; ok {
		if inList(repeatableFlags, s.kw()) && len(s.words) == 1 && s.open == nil {
			p.warn(s.pos, "%s is repeated (first at %s); keepalived 2.2.7 takes the repeat without a word, it changes nothing", s.kw(), first)
			return false
		}
		p.errs.add(s.pos, s.kw(), "%s is already set at %s", s.kw(), first)
		return false
	}
	seen[s.kw()] = s.pos
	return true
}

// leaf rejects a block after a keyword that takes none.
func (p *parser) leaf(s *stmt) bool {
	if s.open != nil {
		p.errs.add(s.pos, s.kw(), "%s does not take a { } block", s.kw())
		return false
	}
	return true
}

// blockOf rejects a block keyword without its block.
func (p *parser) blockOf(s *stmt) bool {
	if s.open == nil {
		p.errs.add(s.pos, s.kw(), "%s needs a { } block", s.kw())
		return false
	}
	return true
}

// nargs checks a leaf statement has between lo and hi arguments.
func (p *parser) nargs(s *stmt, lo, hi int, want string) ([]string, bool) {
	if !p.leaf(s) {
		return nil, false
	}
	a := s.args()
	if len(a) < lo || len(a) > hi {
		p.errs.add(s.pos, s.kw(), "%s takes %s, got %d values", s.kw(), want, len(a))
		return nil, false
	}
	return a, true
}

// flag checks a keyword that takes no value.
func (p *parser) flag(s *stmt) bool {
	_, ok := p.nargs(s, 0, 0, "no value")
	return ok
}

// one returns the single argument of a leaf statement.
func (p *parser) one(s *stmt, want string) (string, bool) {
	a, ok := p.nargs(s, 1, 1, "one value ("+want+")")
	if !ok {
		return "", false
	}
	return a[0], true
}

// intVal parses v as an integer in [lo, hi] for keyword kw.
func (p *parser) intVal(pos Pos, kw, v string, lo, hi int) (int, bool) {
	n, err := strconv.Atoi(v)
	if err != nil {
		p.errs.add(pos, kw, "%s %q is not an integer (accepted: %d..%d)", kw, v, lo, hi)
		return 0, false
	}
	if n < lo || n > hi {
		p.errs.add(pos, kw, "%s %d is out of range (accepted: %d..%d)", kw, n, lo, hi)
		return 0, false
	}
	return n, true
}

func (p *parser) intArg(s *stmt, lo, hi int) (int, bool) {
	v, ok := p.one(s, fmt.Sprintf("%d..%d", lo, hi))
	if !ok {
		return 0, false
	}
	return p.intVal(s.pos, s.kw(), v, lo, hi)
}

// secondsArg parses a duration in seconds in [lo, hi].
func (p *parser) secondsArg(s *stmt, lo, hi time.Duration) (time.Duration, bool) {
	want := fmtSeconds(lo) + ".." + fmtSeconds(hi) + " seconds"
	v, ok := p.one(s, want)
	if !ok {
		return 0, false
	}
	d, ok := parseSeconds(v)
	if !ok {
		p.errs.add(s.pos, s.kw(), "%s %q is not a number of seconds (accepted: %s, e.g. 1 or 0.5)", s.kw(), v, want)
		return 0, false
	}
	if d < lo || d > hi {
		p.errs.add(s.pos, s.kw(), "%s %s is out of range (accepted: %s)", s.kw(), v, want)
		return 0, false
	}
	return d, true
}

// wholeSecondsArg parses a whole number of seconds in [0, hi], as
// keepalived's integer-second settings require.
func (p *parser) wholeSecondsArg(s *stmt, hi int) (time.Duration, bool) {
	n, ok := p.intArg(s, 0, hi)
	return time.Duration(n) * time.Second, ok
}

// command parses a script or notify line the way keepalived does: the line
// is split honouring quotes and escapes, the first argument is the command
// line, which is split again into the program and its arguments.
func (p *parser) command(s *stmt) (string, []string, bool) {
	cmd, args, as, ok := p.commandAs(s)
	if ok && as != (RunAs{}) {
		p.errs.add(s.pos, s.kw(), "%s: words after the command (%q) are a user and group in keepalived, "+
			"which vipstack does not support here; quote the whole command line, e.g. %s \"/path/script arg\"",
			s.kw(), strings.TrimSpace(as.User+" "+as.Group), s.kw())
		return "", nil, false
	}
	return cmd, args, ok
}

// commandAs is command for a line that may name, after the command, the
// user and optional group it runs as (keepalived's notify scripts:
// notify_master "/path/script arg" USER [GROUP]).
func (p *parser) commandAs(s *stmt) (string, []string, RunAs, bool) {
	if !p.leaf(s) {
		return "", nil, RunAs{}, false
	}
	words, err := SplitCommand(s.raw)
	if err != nil {
		p.errs.add(s.pos, s.kw(), "%s: %v", s.kw(), err)
		return "", nil, RunAs{}, false
	}
	var as RunAs
	switch {
	case len(words) > 4:
		p.errs.add(s.pos, s.kw(), "%s: %q after the command: too many words (accepted: the command line in quotes, "+
			"then an optional user and group, e.g. %s \"/path/script arg\" root root)",
			s.kw(), strings.Join(words[2:], " "), s.kw())
		return "", nil, RunAs{}, false
	case len(words) == 4:
		as = RunAs{User: words[2], Group: words[3]}
	case len(words) == 3:
		as = RunAs{User: words[2]}
	}
	if len(words) > 2 {
		words = words[:2]
	}
	var args []string
	if len(words) == 2 {
		args, err = SplitCommand(words[1])
		if err != nil {
			p.errs.add(s.pos, s.kw(), "%s %q: %v", s.kw(), words[1], err)
			return "", nil, RunAs{}, false
		}
	}
	if len(args) == 0 {
		p.errs.add(s.pos, s.kw(), "%s needs a command", s.kw())
		return "", nil, RunAs{}, false
	}
	return words[1], args, as, true
}

// name returns the single name after a block keyword such as vrrp_instance.
func (p *parser) name(s *stmt) (string, bool) {
	if len(s.words) != 2 {
		p.errs.add(s.pos, s.kw(), "%s takes exactly one name, got %d", s.kw(), len(s.words)-1)
		return "", false
	}
	return s.words[1].text, p.blockOf(s)
}

func (p *parser) top(stmts []*stmt) {
	for _, s := range stmts {
		switch s.kw() {
		case "global_defs":
			if len(s.words) != 1 {
				p.errs.add(s.pos, s.kw(), "global_defs takes no value, got %d", len(s.words)-1)
			} else if p.blockOf(s) {
				p.global(s.block) // repeated global_defs blocks merge, as in keepalived
			}
		case "vrrp_script":
			p.script(s)
		case "vrrp_track_process":
			p.trackProcess(s)
		case "vrrp_instance":
			p.instance(s)
		case "vrrp_sync_group":
			p.syncGroup(s)
		default:
			p.reject(s, "the top level", topAccepted, topUnsupported)
		}
	}
}

// boolArg parses keepalived's optional boolean argument (check_true_false:
// true, on, yes / false, off, no); no argument means true.
func (p *parser) boolArg(s *stmt) (bool, bool) {
	a, ok := p.nargs(s, 0, 1, "nothing or one of true, on, yes, false, off, no")
	if !ok {
		return false, false
	}
	if len(a) == 0 {
		return true, true
	}
	switch strings.ToLower(a[0]) {
	case "true", "on", "yes":
		return true, true
	case "false", "off", "no":
		return false, true
	}
	p.errs.add(s.pos, s.kw(), "Invalid value '%s' for %s specified (accepted: nothing, true, on, yes, false, off, no)", a[0], s.kw())
	return false, false
}

// rtPriority parses vrrp_rt_priority. Out of 1..99, keepalived 2.2.7 uses
// the nearer bound with a warning ("vrrp process real-time priority 0 less
// than minimum 1 - setting to minimum"), and so does vipstack.
func (p *parser) rtPriority(s *stmt) int {
	v, ok := p.one(s, "1..99")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		p.errs.add(s.pos, s.kw(), "%s %q is not an integer (accepted: 1..99)", s.kw(), v)
		return 0
	}
	switch {
	case n < 1:
		p.warn(s.pos, "%s %d is below the minimum; 1 is used, as keepalived does (accepted: 1..99)", s.kw(), n)
		return 1
	case n > 99:
		p.warn(s.pos, "%s %d is above the maximum; 99 is used, as keepalived does (accepted: 1..99)", s.kw(), n)
		return 99
	}
	return n
}
