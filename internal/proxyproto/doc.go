// Package proxyproto implements the PROXY protocol's header, versions 1
// (text) and 2 (binary), as described in HAProxy's "The PROXY protocol"
// specification (doc/proxy-protocol.txt): what haproxy's `send-proxy`
// and `send-proxy-v2` server options write before a connection's data.
package proxyproto
