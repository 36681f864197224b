package vrrp

import "errors"

// Reason is a short stable label for why a packet was dropped, used as a
// Prometheus label value. The values never change once released.
type Reason string

// Reasons returned by Unmarshal in a *ParseError.
const (
	ReasonShort    Reason = "too_short"    // shorter than the fixed header
	ReasonVersion  Reason = "bad_version"  // version not 2 or 3
	ReasonType     Reason = "bad_type"     // type not 1 (advertisement)
	ReasonChecksum Reason = "bad_checksum" // checksum field differs from the computed one
	ReasonLength   Reason = "bad_length"   // address count does not match the length
	ReasonAuthType Reason = "bad_auth_type"
	ReasonInterval Reason = "bad_interval" // advertisement interval zero
	ReasonFamily   Reason = "bad_family"   // v2 over IPv6, or src and dst of different families
	ReasonSource   Reason = "bad_source"   // e.g. IPv6 non-link-local source

	// ReasonMalformed is what ReasonOf returns for an error that is not a
	// *ParseError.
	ReasonMalformed Reason = "malformed"
)

// ParseError is the error Unmarshal returns for a packet it rejects.
type ParseError struct {
	Reason Reason
	// Detail says what was wrong, the bad value, what is accepted and
	// where the packet came from, e.g.
	// "bad checksum 0x1234 (want 0xabcd) from 198.18.0.11".
	Detail string
}

func (e *ParseError) Error() string { return "vrrp: " + e.Detail }

// ReasonOf returns the Reason of the first *ParseError in err's chain,
// ReasonMalformed if there is none, and "" if err is nil.
func ReasonOf(err error) Reason {
	if err == nil {
		return ""
	}
	if pe, ok := errors.AsType[*ParseError](err); ok {
		return pe.Reason
	}
	return ReasonMalformed
}
