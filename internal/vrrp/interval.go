package vrrp

import (
	"fmt"
	"strconv"
	"time"
)

// IntervalError is the error CheckAdvertInterval returns for an
// advertisement interval the version cannot carry.
type IntervalError struct {
	Version  int
	Interval time.Duration
}

// Accepted says which intervals the version carries, in seconds as
// keepalived.conf writes them.
func (e *IntervalError) Accepted() string {
	switch e.Version {
	case 2:
		return "whole seconds 1..255"
	case 3:
		return "0.01..40.95 seconds in steps of 0.01"
	}
	return "VRRP version 2 or 3"
}

func (e *IntervalError) Error() string {
	if e.Version != 2 && e.Version != 3 {
		return "VRRP version " + strconv.Itoa(e.Version) + " is not valid (accepted: 2 or 3)"
	}
	return fmt.Sprintf("advertisement interval %v is not valid for VRRP version %d (accepted: %s)", e.Interval, e.Version, e.Accepted())
}

// CheckAdvertInterval reports whether an advertisement interval of d fits
// the Max Adver Int field of VRRP version 2 (8 bits of whole seconds,
// RFC 3768 section 5.3.7) or 3 (12 bits of centiseconds, RFC 5798 section
// 5.2.7), zero excluded. It returns nil or an *IntervalError saying what
// is accepted.
func CheckAdvertInterval(version int, d time.Duration) error {
	unit, maxUnits := v2IntervalUnit, time.Duration(v2IntervalMax)
	switch version {
	case 2:
	case 3:
		unit, maxUnits = v3IntervalUnit, v3IntervalMax
	default:
		return &IntervalError{Version: version, Interval: d}
	}
	if d%unit != 0 || d < unit || d > maxUnits*unit {
		return &IntervalError{Version: version, Interval: d}
	}
	return nil
}
