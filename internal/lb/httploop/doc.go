// Package httploop is the HTTP proxy's own HTTP/1 engine (`vipstack lb
// --http-engine loop`): mode http frontends served on epoll event loops
// on locked threads, as the TCP relay's, with no goroutine per
// connection. It speaks HTTP/1.0 and 1.1 (RFC 9112) on both sides; what
// it does not do is refused at load (Refuse) and left to lb/httpproxy.
// docs/design/httpproxy.md describes it.
package httploop
