package engine

import "github.com/vipstack/vipstack/internal/keepalived"

// Exit statuses of `vipstack vrrp --check`, keepalived -t's (keepalived
// 2.2.7, measured): 0 for a clean file; 5 for a file with errors, and for
// one with warnings only, since keepalived -t exits 5 after any message
// about the file (a truncated auth_pass, a cleared nopreempt, "No VIP
// specified", a missing interface); 6 when scripts run without
// enable_script_security, whatever else is reported.
const (
	CheckClean    = 0
	CheckProblems = 5
	CheckSecurity = 6
)

// CheckExit is the exit status of `vipstack vrrp --check` for what Check
// returned (cfg, err) and the warnings printed (cfg.Warnings and
// MissingInterfaces).
func CheckExit(cfg *keepalived.Config, err error, warnings []string) int {
	switch {
	case err != nil:
		return CheckProblems
	case cfg != nil:
		if _, ok := cfg.SecurityViolation(); ok {
			return CheckSecurity
		}
	}
	if len(warnings) > 0 {
		return CheckProblems
	}
	return CheckClean
}
