// Package bfd implements Bidirectional Forwarding Detection in asynchronous
// mode, as described in RFC 5880, over UDP for single hop (RFC 5881) and
// multihop (RFC 5883) sessions, with optional simple password
// authentication. Demand mode, the echo function and the cryptographic
// authentication types are not implemented and are refused with an error.
//
// The package has three layers: a codec for control packets (Packet), a
// pure, clock-injected session state machine (Machine) and a small runtime
// that runs one Machine on UDP sockets and reports state changes on a
// channel (Session). See docs/design/bfd.md.
package bfd
