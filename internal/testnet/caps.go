package testnet

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Capability numbers (linux/capability.h) of the ones vipstack's daemons
// need (docs/security.md).
const (
	CapNetBindService = 10
	CapNetAdmin       = 12
	CapNetRaw         = 13
)

// CapMask is caps as /proc/PID/status prints a capability set.
func CapMask(caps ...int) string {
	var m uint64
	for _, c := range caps {
		m |= 1 << c
	}
	return fmt.Sprintf("%016x", m)
}

// CapshPrefix returns a command prefix that drops every capability the
// kernel knows except keep (bounding, permitted, effective, inheritable
// and ambient sets), then execs its arguments through bash's exec, so the
// command keeps capsh's PID. Put it after the namespace entry: setns needs
// CAP_SYS_ADMIN. It needs capsh (Debian package libcap2-bin).
func CapshPrefix(keep ...int) ([]string, error) {
	capsh, err := exec.LookPath("capsh")
	if err != nil {
		return nil, fmt.Errorf("capsh is not installed (Debian package libcap2-bin): %w", err)
	}
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return nil, err
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("/proc/sys/kernel/cap_last_cap: %q is not a number", b)
	}
	kept := map[int]bool{}
	var names []string
	for _, c := range keep {
		kept[c] = true
		names = append(names, strconv.Itoa(c))
	}
	var drop []string
	for c := 0; c <= last; c++ {
		if !kept[c] {
			drop = append(drop, strconv.Itoa(c))
		}
	}
	k := strings.Join(names, ",")
	return []string{capsh,
		"--drop=" + strings.Join(drop, ","), // the bounding set (needs CAP_SETPCAP, so first)
		"--caps=" + k + "+eip",              // permitted, effective, inheritable: only these
		"--addamb=" + k,                     // ambient: kept across exec (a supervisor re-execs itself)
		"--", "-c", `exec "$0" "$@"`,
	}, nil
}

// Caps reads the capability sets of process pid from /proc: inheritable,
// permitted, effective, bounding and ambient, as hex masks.
func Caps(pid int) (inh, prm, eff, bnd, amb string, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", "", "", "", "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "CapInh":
			inh = v
		case "CapPrm":
			prm = v
		case "CapEff":
			eff = v
		case "CapBnd":
			bnd = v
		case "CapAmb":
			amb = v
		}
	}
	return inh, prm, eff, bnd, amb, nil
}
