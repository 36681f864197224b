//go:build !linux

package relay

import "sync"

// PipePool keeps splice pipes; splice(2) needs Linux.
type PipePool struct{ _ sync.Mutex }
