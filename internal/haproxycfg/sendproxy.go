package haproxycfg

import "github.com/vipstack/vipstack/internal/lbconfig"

// proxyServerParam reads the server parameters `send-proxy` and
// `send-proxy-v2`: the PROXY protocol header, version 1 or 2, on each
// connection to the server (lbconfig.Server.SendProxy). Its other
// variants (send-proxy-v2-ssl, proxy-v2-options, check-send-proxy) stay
// unsupported.
func proxyServerParam(param string, s *lbconfig.Server) bool {
	switch param {
	case "send-proxy":
		s.SendProxy = 1
	case "send-proxy-v2":
		s.SendProxy = 2
	default:
		return false
	}
	return true
}
