package lbconfig

import (
	"net/netip"
	"time"
)

// Resolvers is a `resolvers` section: the DNS servers the servers that
// name it are re-resolved with while the LB runs, and how often.
type Resolvers struct {
	Name        string
	Nameservers []netip.AddrPort
	// Retries is resolve_retries: queries sent before a resolution
	// fails (default 3).
	Retries int
	// Resolve is `timeout resolve`, the time between resolutions
	// (default 1s); Retry is `timeout retry`, the wait for an answer
	// before the next query (default 1s).
	Resolve, Retry time.Duration
	// Hold: how long a result stands. Valid: a good answer is kept that
	// long before the name is asked again (default 10s). NX, Timeout,
	// Refused, Other: after such a failure, the last good address is
	// kept that long (default 30s each), then the server goes into
	// maintenance until a good answer. Obsolete: haproxy's time to keep
	// an address no longer in the answers (default 0), accepted.
	Valid, NX, Timeout, Refused, Other, Obsolete time.Duration
	// PayloadSize is accepted_payload_size (EDNS0), 512 by default.
	PayloadSize int
}

// Resolver defaults, haproxy 2.6's.
const (
	DefaultResolveRetries = 3
	DefaultResolveTimeout = time.Second
	DefaultHoldValid      = 10 * time.Second
	DefaultHoldFailure    = 30 * time.Second
)

// ResolversByName returns the section called name, nil if none.
func (c *Config) ResolversByName(name string) *Resolvers {
	for i := range c.Resolvers {
		if c.Resolvers[i].Name == name {
			return &c.Resolvers[i]
		}
	}
	return nil
}

// MySQLCheck is `option mysql-check [user NAME [post-41|pre-41]]`.
type MySQLCheck struct {
	User  string // empty: only the server's handshake is read
	Pre41 bool   // the pre-4.1 authentication packet
}
