package bfd

import "errors"

// Reason is a short stable label for why a packet was refused, fit for a
// metric label. The values never change once released.
type Reason string

// Reasons carried by a *ParseError (the codec) or a *RejectError (the
// state machine and the runtime).
const (
	ReasonShort         Reason = "too_short"         // fewer bytes than the Length field or the minimum
	ReasonVersion       Reason = "bad_version"       // version not 1
	ReasonLength        Reason = "bad_length"        // Length field below the minimum, above the payload, or not matching the auth section
	ReasonDetectMult    Reason = "bad_detect_mult"   // Detect Mult zero
	ReasonMultipoint    Reason = "multipoint"        // M bit set
	ReasonDiscriminator Reason = "bad_discriminator" // My Discriminator zero, Your Discriminator zero out of Down/AdminDown, or not ours
	ReasonPollFinal     Reason = "poll_and_final"    // P and F both set
	ReasonAuthType      Reason = "bad_auth_type"     // auth type other than simple password, or not the configured one
	ReasonAuth          Reason = "auth_failed"       // key ID or password wrong, or A bit not matching the configuration
	ReasonDemand        Reason = "demand_mode"       // D bit set: demand mode is not implemented
	ReasonTTL           Reason = "bad_ttl"           // TTL/hop limit below what RFC 5881/5883 require
	ReasonSourcePort    Reason = "bad_source_port"   // no longer returned (any source port is accepted, see Session.receive); kept so the label stays stable
	ReasonPeer          Reason = "unknown_peer"      // from an address that is not the session's peer
	ReasonMalformed     Reason = "malformed"         // what ReasonOf returns for other errors
)

// ParseError is the error UnmarshalBinary returns for a packet it refuses
// by the reception rules of RFC 5880 section 6.8.6.
type ParseError struct {
	Reason Reason
	// Detail names the field, the bad value and what would be accepted.
	Detail string
}

func (e *ParseError) Error() string { return "bfd: " + e.Detail }

// RejectError is what Machine.Receive and the runtime return for a packet
// that decodes but that the session must discard.
type RejectError struct {
	Reason Reason
	Detail string
}

func (e *RejectError) Error() string { return "bfd: " + e.Detail }

// ReasonOf returns the Reason of the first *ParseError or *RejectError in
// err's chain, ReasonMalformed if there is none, and "" if err is nil.
func ReasonOf(err error) Reason {
	if err == nil {
		return ""
	}
	if pe, ok := errors.AsType[*ParseError](err); ok {
		return pe.Reason
	}
	if re, ok := errors.AsType[*RejectError](err); ok {
		return re.Reason
	}
	return ReasonMalformed
}
