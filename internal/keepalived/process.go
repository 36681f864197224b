package keepalived

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// TrackProcess is a vrrp_track_process block: the instances tracking it
// are up while the number of running processes that match is in [Quorum,
// QuorumMax].
type TrackProcess struct {
	Name string
	Pos  Pos
	// Process is the process name (matched against /proc/PID/comm, the
	// kernel's 15-character name) or, with FullCommand, the command
	// (argv[0] of /proc/PID/cmdline); Params are the parameters after it.
	Process string
	Params  []string `json:",omitempty"`
	// ParamMatch is "" (parameters not compared), "exact", "partial"
	// (the first len(Params) parameters match, more may follow) or
	// "initial" (as partial, and the last one may be longer). Params or
	// param_match imply FullCommand, as in keepalived.
	ParamMatch  string `json:",omitempty"`
	FullCommand bool   `json:",omitempty"`
	// Weight (default 0: the instance goes to FAULT without quorum) and
	// reverse, as a vrrp_script's.
	Weight        int
	WeightReverse bool `json:",omitempty"`
	// Quorum is at least 1 unless QuorumMax is 0; QuorumMax is -1 for no
	// maximum (keepalived's default).
	Quorum, QuorumMax int
	// ForkDelay is how long the quorum must hold before the process counts
	// as up, TerminateDelay how long it must be lost before it counts as
	// down (delay sets both).
	ForkDelay, TerminateDelay time.Duration `json:",omitempty"`
	// Comment, when set, is written by Format above the block.
	Comment string `json:",omitempty"`
}

// NewTrackProcess returns a vrrp_track_process for process with
// keepalived's defaults (quorum 1, no maximum, weight 0).
func NewTrackProcess(name, process string) *TrackProcess {
	return &TrackProcess{Name: name, Process: process, Quorum: 1, QuorumMax: -1}
}

const maxProcessDelay = 3600 * time.Second

func (p *parser) trackProcess(s *stmt) {
	name, ok := p.name(s)
	if !ok {
		return
	}
	tp := NewTrackProcess(name, "")
	tp.Pos = s.pos
	seen := map[string]Pos{}
	for _, e := range s.block {
		if !p.entry(e, seen, "vrrp_track_process", processAccepted, "") {
			continue
		}
		switch e.kw() {
		case "process":
			if a, ok := p.nargs(e, 1, 1<<20, "a process name and optional parameters"); ok {
				tp.Process, tp.Params = a[0], a[1:]
				if len(tp.Params) == 0 {
					tp.Params = nil
				}
			}
		case "param_match":
			if a, ok := p.nargs(e, 0, 1, "nothing, initial or partial"); ok {
				tp.ParamMatch = "exact"
				if len(a) == 1 {
					if a[0] != "initial" && a[0] != "partial" {
						p.errs.add(e.pos, e.kw(), "Invalid param_match type %s (accepted: nothing, initial, partial)", a[0])
					}
					tp.ParamMatch = a[0]
				}
			}
		case "weight":
			if a, ok := p.nargs(e, 1, 2, "one value (-254..254) and an optional reverse"); ok {
				tp.Weight, _ = p.intVal(e.pos, "weight", a[0], -254, 254)
				if len(a) == 2 {
					tp.WeightReverse = a[1] == "reverse"
					if !tp.WeightReverse {
						p.errs.add(e.pos, "weight", "vrrp_track_process %s unknown weight option %s (accepted: reverse)", name, a[1])
					}
				}
			}
		case "quorum":
			tp.Quorum, _ = p.intArg(e, 1, 65535)
		case "quorum_max":
			tp.QuorumMax, _ = p.intArg(e, 0, 65535)
		case "fork_delay":
			tp.ForkDelay, _ = p.secondsArg(e, time.Microsecond, maxProcessDelay)
		case "terminate_delay":
			tp.TerminateDelay, _ = p.secondsArg(e, time.Microsecond, maxProcessDelay)
		case "delay":
			if d, ok := p.secondsArg(e, time.Microsecond, maxProcessDelay); ok {
				tp.ForkDelay, tp.TerminateDelay = d, d
			}
		case "full_command":
			tp.FullCommand = p.flag(e)
		default:
			p.unhandled(e)
		}
	}
	if len(tp.Params) > 0 && tp.ParamMatch == "" {
		tp.ParamMatch = "exact"
	}
	if tp.ParamMatch != "" {
		tp.FullCommand = true
	}
	if at, both := seen["delay"]; both {
		for _, kw := range []string{"fork_delay", "terminate_delay"} {
			if other, ok := seen[kw]; ok {
				p.errs.add(at, "delay", "delay and %s at %s both set the %s; keep one", kw, other, kw)
			}
		}
	}
	_, hasQuorum := seen["quorum"]
	if at, ok := seen["quorum_max"]; ok {
		switch {
		case tp.QuorumMax == 0 && !hasQuorum:
			tp.Quorum = 0 // keepalived: quorum_max 0 means "no such process"
		case tp.QuorumMax < tp.Quorum:
			p.errs.add(at, "quorum_max", "quorum_max %d is less than quorum %d (accepted: quorum_max >= quorum)", tp.QuorumMax, tp.Quorum)
		}
	}
	if _, ok := seen["process"]; !ok {
		p.errs.add(s.pos, "process", "track process '%s' process name not specified", name)
	} else if !tp.FullCommand && len(tp.Process) > 15 {
		p.warn(seen["process"], "vrrp_track_process %s: process name %q is longer than the kernel's 15-character process name; "+
			"it is compared with the first 15 characters (use full_command to match the whole command)", name, tp.Process)
	}
	p.processPos[name] = cmp.Or(p.processPos[name], s.pos)
	if prev, ok := p.cfg.Processes[name]; ok {
		p.errs.add(s.pos, s.kw(), "vrrp_track_process %q is already defined at %s", name, prev.Pos)
		return
	}
	if p.cfg.Processes == nil {
		p.cfg.Processes = map[string]*TrackProcess{}
	}
	p.cfg.Processes[name] = tp
}

// trackProcesses reads a track_process block: NAME [weight -254..254].
func (p *parser) trackProcesses(s *stmt) []TrackScript {
	if !p.plainBlock(s) {
		return nil
	}
	var out []TrackScript
	for _, e := range s.block {
		w, has, ok := p.trackWeight(e, s.kw())
		if !ok {
			continue
		}
		if w < -254 || w > 254 {
			continue
		}
		ts := TrackScript{Name: e.kw(), Weight: w, HasWeight: has, Pos: e.pos}
		if _, ok := p.processPos[ts.Name]; !ok {
			// As for track_script, keepalived looks the name up while
			// it reads the block.
			p.unknownTracks[e.pos] = true
		}
		out = append(out, ts)
	}
	return out
}

// dropUnknownProcesses removes the track_process entries naming a
// vrrp_track_process not defined above them, with keepalived's warning
// ("track process chk not found, ignoring...").
func (p *parser) dropUnknownProcesses(owner string, ts []TrackScript) []TrackScript {
	return slices.DeleteFunc(ts, func(t TrackScript) bool {
		if !p.unknownTracks[t.Pos] {
			return false
		}
		if at, later := p.processPos[t.Name]; later {
			p.warn(t.Pos, "(%s) track process %s not found, ignoring... WARNING: vrrp_track_process %s is defined at %s, after "+
				"this track_process; keepalived 2.2.7 only knows those defined above their use, so %s runs WITHOUT it "+
				"(vipstack does the same); move vrrp_track_process %s above it", owner, t.Name, t.Name, at, owner, t.Name)
			return true
		}
		names := slices.Sorted(maps.Keys(p.cfg.Processes))
		p.warn(t.Pos, "(%s) track process %s not found, ignoring... (defined: %s); %s runs without it, as in keepalived",
			owner, t.Name, cmp.Or(strings.Join(names, ", "), "none"), owner)
		return true
	})
}

// processes checks the model's vrrp_track_process blocks and the
// instances' track_process entries (Validate).
func (v *checker) processes() {
	for _, name := range slices.Sorted(maps.Keys(v.cfg.Processes)) {
		tp := v.cfg.Processes[name]
		what := fmt.Sprintf("vrrp_track_process %q", name)
		if tp == nil {
			v.add(Pos{}, what, "vrrp_track_process", "no block (nil)")
			continue
		}
		if tp.Name != name {
			v.add(tp.Pos, what, "vrrp_track_process", "is named %q in Processes but %q in its Name", name, tp.Name)
		}
		if tp.Process == "" || strings.ContainsAny(tp.Process, "\x00\n") {
			v.add(tp.Pos, what, "process", "process %q is not a process name", tp.Process)
		}
		for _, a := range tp.Params {
			if strings.ContainsAny(a, "\x00\n") {
				v.add(tp.Pos, what, "process", "parameter %q holds a NUL or newline", a)
			}
		}
		if !inList(" exact partial initial", tp.ParamMatch) && tp.ParamMatch != "" {
			v.add(tp.Pos, what, "param_match", "param_match %q is invalid (accepted: exact, partial, initial)", tp.ParamMatch)
		}
		if (tp.ParamMatch != "" || len(tp.Params) > 0) && !tp.FullCommand {
			v.add(tp.Pos, what, "full_command", "parameters or param_match need full_command (keepalived sets it)")
		}
		if len(tp.Params) > 0 && tp.ParamMatch == "" {
			v.add(tp.Pos, what, "param_match", "parameters need a param_match (keepalived's default: exact)")
		}
		v.intRange(tp.Pos, what, "weight", tp.Weight, -254, 254)
		v.intRange(tp.Pos, what, "quorum_max", tp.QuorumMax, -1, 65535)
		switch {
		case tp.QuorumMax == 0:
			v.intRange(tp.Pos, what, "quorum", tp.Quorum, 0, 0)
		case tp.QuorumMax > 0:
			v.intRange(tp.Pos, what, "quorum", tp.Quorum, 1, tp.QuorumMax)
		default:
			v.intRange(tp.Pos, what, "quorum", tp.Quorum, 1, 65535)
		}
		v.seconds(tp.Pos, what, "fork_delay", tp.ForkDelay, 0, maxProcessDelay)
		v.seconds(tp.Pos, what, "terminate_delay", tp.TerminateDelay, 0, maxProcessDelay)
	}
	for _, in := range v.cfg.Instances {
		if in == nil {
			continue
		}
		what := fmt.Sprintf("vrrp_instance %q", in.Name)
		for _, t := range in.TrackProcesses {
			at := cmp.Or(t.Pos, in.Pos)
			if _, ok := v.cfg.Processes[t.Name]; !ok {
				v.add(at, what, "track_process", "track_process %q names no vrrp_track_process", t.Name)
			}
			v.intRange(at, what, "weight", t.Weight, -254, 254)
		}
	}
}

func (w *writer) trackProcess(tp *TrackProcess) {
	w.open(0, tp.Comment, "vrrp_track_process", word(tp.Name))
	words := []string{"process", word(tp.Process)}
	for _, a := range tp.Params {
		words = append(words, word(a))
	}
	w.line(1, words...)
	switch tp.ParamMatch {
	case "exact":
		if len(tp.Params) == 0 {
			w.line(1, "param_match")
		}
	case "partial", "initial":
		w.line(1, "param_match", tp.ParamMatch)
	}
	if tp.FullCommand && tp.ParamMatch == "" {
		w.line(1, "full_command")
	}
	if tp.WeightReverse {
		w.line(1, "weight", itoa(tp.Weight), "reverse")
	} else if tp.Weight != 0 {
		w.line(1, "weight", itoa(tp.Weight))
	}
	if tp.QuorumMax != 0 || tp.Quorum != 0 {
		w.line(1, "quorum", itoa(tp.Quorum))
	}
	if tp.QuorumMax >= 0 {
		w.line(1, "quorum_max", itoa(tp.QuorumMax))
	}
	switch {
	case tp.ForkDelay == tp.TerminateDelay && tp.ForkDelay != 0:
		w.line(1, "delay", secs(tp.ForkDelay))
	default:
		if tp.ForkDelay != 0 {
			w.line(1, "fork_delay", secs(tp.ForkDelay))
		}
		if tp.TerminateDelay != 0 {
			w.line(1, "terminate_delay", secs(tp.TerminateDelay))
		}
	}
	w.close(0)
}
