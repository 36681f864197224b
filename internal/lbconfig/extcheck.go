package lbconfig

import (
	"errors"
	"strings"
	"time"
)

// ExternalCheck is a backend's `option external-check`: haproxy 2.6
// runs Command for each check of each server, with the section's first
// bind address and port and the server's address and port as arguments
// (NOT_USED for a section without a bind) and a fixed environment of
// HAPROXY_* variables and PATH (Path); an exit status of 0 passes.
// Command is looked up in Path when it has no '/' (execvp).
//
// haproxy requires global's `external-check`; the command needs a
// leading '/' unless Path is set.
type ExternalCheck struct {
	Command string // `external-check command`
	Path    string // `external-check path`: the PATH the command gets ("" when unset)
}

// ExternalCheckTimeout is how long haproxy 2.6 lets an external check
// run before it kills it (SIGTERM) and counts a timeout: inter, or the
// smaller of inter and `timeout connect` when `timeout check` is set.
func ExternalCheckTimeout(inter time.Duration, t Timeouts) time.Duration {
	if inter <= 0 {
		inter = DefaultInter
	}
	if t.Check > 0 && t.Connect > 0 && t.Connect < inter {
		return t.Connect
	}
	return inter
}

// ErrYAMLExternalCheck: the YAML form has no external checks.
var ErrYAMLExternalCheck = errors.New("option external-check cannot be written in the YAML form (accepted: haproxy.cfg)")

// externalChecks checks each backend's external check as haproxy 2.6's
// configuration check does, in its words.
func (v *validator) externalChecks() {
	for _, b := range v.c.Backends {
		x := b.ExternalCheck
		if x == nil {
			continue
		}
		key := BackendKey(b.Name)
		pos := v.pos(ItemKey(key, "option external-check"), ItemKey(ListenKey(b.Name), "option external-check"), key, ListenKey(b.Name))
		const field = "" // haproxy's words name the section
		switch {
		case !v.c.ExternalCheck:
			v.fail(pos, field, "option external-check", "Proxy '%s' : 'option external-check' unable to find required 'global.external-check'. (accepted: external-check in global)", b.Name)
		case x.Command == "":
			v.fail(pos, field, "option external-check", "Proxy '%s' : 'option external-check' unable to find required 'external-check command'. (accepted: external-check command PROGRAM)", b.Name)
		case !strings.HasPrefix(x.Command, "/") && x.Path == "":
			v.fail(pos, field, "external-check command", "Proxy '%s': 'external-check command' does not have a leading '/' and 'external-check path' is not set. (accepted: an absolute command, or external-check path DIRS)", b.Name)
		}
	}
}
