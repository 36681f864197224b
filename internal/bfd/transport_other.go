//go:build !linux

package bfd

import (
	"fmt"
	"runtime"
)

// Dial opens the sockets for cfg and starts the session. Only Linux is
// supported: the TTL checks need its control messages.
func Dial(cfg SessionConfig) (*Session, error) {
	return nil, fmt.Errorf("bfd: sessions on UDP sockets are not supported on %s, only on linux", runtime.GOOS)
}
