package lbconfig

// sendProxy checks a server's SendProxy: a version vipstack writes, on
// the TCP relay.
func (v *validator) sendProxy(b *Backend, s *Server, pos, field string) {
	switch {
	case s.SendProxy == 0:
	case s.SendProxy != 1 && s.SendProxy != 2:
		v.fail(pos, field, "send-proxy", "PROXY protocol version %d (accepted: 1 for send-proxy, 2 for send-proxy-v2)", s.SendProxy)
	case b.HTTP != nil:
		v.fail(pos, field, "send-proxy", "send-proxy in a mode http backend is not supported by vipstack (accepted: send-proxy, send-proxy-v2 on servers of mode tcp backends)")
	}
}
