package ipfailover

import (
	"context"
	"fmt"
	"net"
	"net/netip"
)

// PortCheck is the monitor port check: it passes when a TCP connection to
// Target opens, as the image's `bash -c '</dev/tcp/ADDR/PORT'` does, but
// without a fork. It implements track.Check.
type PortCheck struct {
	Target netip.AddrPort
}

// Probe connects once and closes the connection at once.
func (c PortCheck) Probe(ctx context.Context) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.Target.String())
	if err != nil {
		return fmt.Errorf("monitor port %d: connect to %s: %w", c.Target.Port(), c.Target, err)
	}
	return conn.Close()
}
