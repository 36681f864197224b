package ipfailover

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
)

// Claim makes this process the only one running pool name in the calling
// thread's network namespace, for as long as the returned Closer is open
// (the kernel releases it when the process dies). Two pools with one name
// on a node would share the firewall rule (and, with a shared
// --state-dir, the ledger): the second would replace the first's rule and
// remove it on exit, and sweep the first's VIPs as leftovers of a crash.
// The claim is an abstract unix socket, which belongs to the network
// namespace, so pods with separate state directories still see each other.
func Claim(name string) (io.Closer, error) {
	key := scrub(name)
	if len(key) > 64 {
		sum := sha256.Sum256([]byte(key))
		key = hex.EncodeToString(sum[:16])
	}
	ln, err := net.Listen("unix", "@vipstack-ipfailover-"+key)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s=%q: another vipstack ipfailover runs a pool of that name in this network namespace; two pools on one node need different names (the name tells their firewall rules and VIP ledgers apart): give this one another %s (or NAME)", EnvConfigName, name, EnvConfigName)
	}
	if err != nil {
		return nil, fmt.Errorf("claim the pool name %q in this network namespace: %w", name, err)
	}
	return ln, nil
}
