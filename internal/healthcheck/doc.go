// Package healthcheck runs haproxy-style active health checks against load
// balancer servers: a TCP connect check, an optional TLS handshake
// (`check-ssl`, with certificate verification off for `verify none`), and
// an HTTP check (`option httpchk METHOD URI VERSION`) whose 2xx and 3xx
// answers count as success, as in haproxy 2.6 (configuration.txt, sections
// "option httpchk", "5.2. Server and default-server options": check, inter,
// rise, fall). HTTP is RFC 9112; TLS is RFC 8446.
//
// Semantics, verified against haproxy's source (server.c sets
// `check.health = check.rise /* up, but will fall down at first failure */`,
// and check.c moves health in 0..rise+fall-1 with UP meaning health >= rise):
//
//   - A checked server starts UP, with nothing observed yet. Its first
//     result decides: a first failure takes it DOWN at once, whatever fall
//     is; a first success makes it fully UP.
//   - From then on, fall consecutive failures take an UP server DOWN and
//     rise consecutive successes bring a DOWN server back UP; a result that
//     agrees with the current state resets the count. This is exactly
//     track.Hysteresis (keepalived's rule is the same), which Checker reuses.
//   - haproxy's defaults are inter 2s, rise 2, fall 3.
//   - Without `timeout check` (which vipstack's model does not carry),
//     haproxy uses inter as the timeout of the whole check, connect plus
//     response ("timeout check" in configuration.txt); so does Checker.
//   - Probes start every inter, measured from the start of the previous
//     one; they never overlap.
//   - An HTTP answer's head is read up to 16 KiB (maxHead, or
//     HTTP.BufSize: haproxy's tune.bufsize); one that does not end within
//     it is an invalid response (L7RSP), as haproxy answers one that does
//     not fit its buffer (measured). A tcp-check expect reads as far.
//
// A Result's Info is the reason as Go gave it (vipstack's own log and
// status show it); HaproxyInfo is what haproxy 2.6.12 shows in its log
// lines and stats' last_chk instead: "SSL handshake failure" for every
// failed check-ssl handshake, nothing for one that timed out nor for an
// invalid HTTP answer, and at most 127 bytes of any other (measured).
//
// Checker runs on an injected clock (clock.Clock), so tests drive it with
// clock.NewFake; the probes themselves do real network I/O and are aborted
// when the clock's timeout fires.
package healthcheck
