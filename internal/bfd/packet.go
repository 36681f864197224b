package bfd

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
)

// Version is the only protocol version (RFC 5880 section 4.1).
const Version = 1

// Lengths of the mandatory section and of the simple password section.
const (
	HeaderLen         = 24
	minSimpleAuthLen  = 4  // type, len, key ID and a 1-byte password
	maxSimpleAuthLen  = 19 // ... and a 16-byte password
	MaxPasswordLength = 16
)

// State is a session state (RFC 5880 section 4.1, the Sta field).
type State uint8

const (
	AdminDown State = 0
	Down      State = 1
	Init      State = 2
	Up        State = 3
)

func (s State) String() string {
	switch s {
	case AdminDown:
		return "AdminDown"
	case Down:
		return "Down"
	case Init:
		return "Init"
	case Up:
		return "Up"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Diag is a diagnostic code (RFC 5880 section 4.1): why the sender's
// session last changed state.
type Diag uint8

const (
	DiagNone                 Diag = 0
	DiagControlDetectExpired Diag = 1
	DiagEchoFailed           Diag = 2
	DiagNeighborDown         Diag = 3
	DiagForwardingReset      Diag = 4
	DiagPathDown             Diag = 5
	DiagConcatPathDown       Diag = 6
	DiagAdminDown            Diag = 7
	DiagReverseConcatDown    Diag = 8
)

func (d Diag) String() string {
	switch d {
	case DiagNone:
		return "No Diagnostic"
	case DiagControlDetectExpired:
		return "Control Detection Time Expired"
	case DiagEchoFailed:
		return "Echo Function Failed"
	case DiagNeighborDown:
		return "Neighbor Signaled Session Down"
	case DiagForwardingReset:
		return "Forwarding Plane Reset"
	case DiagPathDown:
		return "Path Down"
	case DiagConcatPathDown:
		return "Concatenated Path Down"
	case DiagAdminDown:
		return "Administratively Down"
	case DiagReverseConcatDown:
		return "Reverse Concatenated Path Down"
	}
	return fmt.Sprintf("Diag(%d)", uint8(d))
}

// AuthType is the Auth Type of the authentication section (RFC 5880
// section 4.1). Only AuthSimplePassword is implemented.
type AuthType uint8

const (
	AuthSimplePassword AuthType = 1
	AuthKeyedMD5       AuthType = 2
	AuthMeticulousMD5  AuthType = 3
	AuthKeyedSHA1      AuthType = 4
	AuthMeticulousSHA1 AuthType = 5
)

// Auth is a simple password authentication section (RFC 5880 section 4.2).
type Auth struct {
	KeyID    uint8
	Password []byte // 1 to 16 bytes
}

// Packet is a BFD control packet. A is implied by Auth != nil; M (multipoint)
// is always refused and so has no field.
type Packet struct {
	Diag  Diag
	State State
	Poll  bool // P
	Final bool // F
	// ControlPlaneIndependent is the C bit.
	ControlPlaneIndependent bool
	Demand                  bool // D
	DetectMult              uint8
	MyDiscriminator         uint32
	YourDiscriminator       uint32
	// The three intervals travel in microseconds: Marshal refuses values
	// that are not whole microseconds or do not fit 32 bits.
	DesiredMinTx      time.Duration
	RequiredMinRx     time.Duration
	RequiredMinEchoRx time.Duration
	Auth              *Auth
}

func (p *Packet) String() string {
	flags := ""
	for _, f := range []struct {
		on bool
		c  string
	}{{p.Poll, "P"}, {p.Final, "F"}, {p.ControlPlaneIndependent, "C"}, {p.Auth != nil, "A"}, {p.Demand, "D"}} {
		if f.on {
			flags += f.c
		}
	}
	return fmt.Sprintf("%s diag=%d [%s] mult=%d my=%#x your=%#x tx=%v rx=%v echo=%v",
		p.State, p.Diag, flags, p.DetectMult, p.MyDiscriminator, p.YourDiscriminator,
		p.DesiredMinTx, p.RequiredMinRx, p.RequiredMinEchoRx)
}

const maxInterval = time.Duration(1<<32-1) * time.Microsecond

func usec(name string, d time.Duration) (uint32, error) {
	if d < 0 || d > maxInterval || d%time.Microsecond != 0 {
		return 0, fmt.Errorf("bfd: %s %v: want whole microseconds from 0 to %v", name, d, maxInterval)
	}
	return uint32(d / time.Microsecond), nil
}

// MarshalBinary encodes p. It refuses what UnmarshalBinary would refuse.
func (p *Packet) MarshalBinary() ([]byte, error) {
	if p.State > Up {
		return nil, fmt.Errorf("bfd: state %d: want 0 (AdminDown) to 3 (Up)", p.State)
	}
	if p.Diag > 31 {
		return nil, fmt.Errorf("bfd: diag %d: want 0 to 31", p.Diag)
	}
	if p.DetectMult == 0 {
		return nil, fmt.Errorf("bfd: detect mult 0: want 1 to 255")
	}
	if p.MyDiscriminator == 0 {
		return nil, fmt.Errorf("bfd: my discriminator 0: want a nonzero value")
	}
	if p.YourDiscriminator == 0 && p.State != Down && p.State != AdminDown {
		return nil, fmt.Errorf("bfd: your discriminator 0 in state %v: only Down and AdminDown may send 0", p.State)
	}
	if p.Poll && p.Final {
		return nil, fmt.Errorf("bfd: both poll and final set: want at most one")
	}
	tx, err := usec("desired min TX interval", p.DesiredMinTx)
	if err != nil {
		return nil, err
	}
	rx, err := usec("required min RX interval", p.RequiredMinRx)
	if err != nil {
		return nil, err
	}
	echo, err := usec("required min echo RX interval", p.RequiredMinEchoRx)
	if err != nil {
		return nil, err
	}
	n := HeaderLen
	if p.Auth != nil {
		if l := len(p.Auth.Password); l < 1 || l > MaxPasswordLength {
			return nil, fmt.Errorf("bfd: simple password of %d bytes: want 1 to %d", l, MaxPasswordLength)
		}
		n += 3 + len(p.Auth.Password)
	}
	b := make([]byte, n)
	b[0] = Version<<5 | uint8(p.Diag)
	b[1] = uint8(p.State) << 6
	for i, on := range []bool{p.Poll, p.Final, p.ControlPlaneIndependent, p.Auth != nil, p.Demand} {
		if on {
			b[1] |= 0x20 >> i
		}
	}
	b[2] = p.DetectMult
	b[3] = uint8(n)
	binary.BigEndian.PutUint32(b[4:], p.MyDiscriminator)
	binary.BigEndian.PutUint32(b[8:], p.YourDiscriminator)
	binary.BigEndian.PutUint32(b[12:], tx)
	binary.BigEndian.PutUint32(b[16:], rx)
	binary.BigEndian.PutUint32(b[20:], echo)
	if p.Auth != nil {
		b[24] = uint8(AuthSimplePassword)
		b[25] = uint8(n - HeaderLen)
		b[26] = p.Auth.KeyID
		copy(b[27:], p.Auth.Password)
	}
	return b, nil
}

func parseErr(r Reason, format string, args ...any) error {
	return &ParseError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// UnmarshalBinary decodes a control packet (the UDP payload) and applies
// the checks of RFC 5880 section 6.8.6 that need no session: version 1,
// Length at least 24 (26 with the A bit) and no more than the payload,
// Detect Mult nonzero, M clear, My Discriminator nonzero, Your
// Discriminator nonzero unless the state is Down or AdminDown. It is
// stricter in three places, each a MUST NOT of the sender: P and F are not
// both set; without the A bit the Length is exactly 24, and with it the
// Length is 24 plus the Auth Len. Bytes after Length are ignored, as the
// RFC allows. An authentication section other than simple password is
// refused as not implemented. b is not retained.
func (p *Packet) UnmarshalBinary(b []byte) error {
	if len(b) < HeaderLen {
		return parseErr(ReasonShort, "packet of %d bytes: want at least %d", len(b), HeaderLen)
	}
	if v := b[0] >> 5; v != Version {
		return parseErr(ReasonVersion, "version %d: want %d", v, Version)
	}
	length := int(b[3])
	auth := b[1]&0x04 != 0
	switch {
	case auth && length < HeaderLen+2:
		return parseErr(ReasonLength, "length %d with the A bit set: want at least %d", length, HeaderLen+2)
	case !auth && length != HeaderLen:
		return parseErr(ReasonLength, "length %d without the A bit: want %d", length, HeaderLen)
	case length > len(b):
		return parseErr(ReasonShort, "length %d exceeds the %d-byte payload", length, len(b))
	}
	if b[1]&0x01 != 0 {
		return parseErr(ReasonMultipoint, "multipoint (M) bit set: want clear, multipoint BFD is not defined")
	}
	q := Packet{
		Diag:                    Diag(b[0] & 0x1f),
		State:                   State(b[1] >> 6),
		Poll:                    b[1]&0x20 != 0,
		Final:                   b[1]&0x10 != 0,
		ControlPlaneIndependent: b[1]&0x08 != 0,
		Demand:                  b[1]&0x02 != 0,
		DetectMult:              b[2],
		MyDiscriminator:         binary.BigEndian.Uint32(b[4:]),
		YourDiscriminator:       binary.BigEndian.Uint32(b[8:]),
		DesiredMinTx:            time.Duration(binary.BigEndian.Uint32(b[12:])) * time.Microsecond,
		RequiredMinRx:           time.Duration(binary.BigEndian.Uint32(b[16:])) * time.Microsecond,
		RequiredMinEchoRx:       time.Duration(binary.BigEndian.Uint32(b[20:])) * time.Microsecond,
	}
	if q.DetectMult == 0 {
		return parseErr(ReasonDetectMult, "detect mult 0: want 1 to 255")
	}
	if q.MyDiscriminator == 0 {
		return parseErr(ReasonDiscriminator, "my discriminator 0: want nonzero")
	}
	if q.YourDiscriminator == 0 && q.State != Down && q.State != AdminDown {
		return parseErr(ReasonDiscriminator, "your discriminator 0 in state %v: want nonzero unless the state is Down or AdminDown", q.State)
	}
	if q.Poll && q.Final {
		return parseErr(ReasonPollFinal, "both poll (P) and final (F) set: want at most one")
	}
	if auth {
		a := b[HeaderLen:length]
		if t := AuthType(a[0]); t != AuthSimplePassword {
			return parseErr(ReasonAuthType, "auth type %d: want 1 (simple password), the only type implemented", t)
		}
		if l := int(a[1]); l < minSimpleAuthLen || l > maxSimpleAuthLen || l != len(a) {
			return parseErr(ReasonLength, "simple password auth len %d with length %d: want %d to %d and equal to length - %d",
				l, length, minSimpleAuthLen, maxSimpleAuthLen, HeaderLen)
		}
		q.Auth = &Auth{KeyID: a[2], Password: bytes.Clone(a[3:])}
	}
	*p = q
	return nil
}

// Parse is UnmarshalBinary into a new Packet.
func Parse(b []byte) (*Packet, error) {
	p := new(Packet)
	if err := p.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return p, nil
}
