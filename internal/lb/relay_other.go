//go:build !linux

package lb

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// pipePool is unused off Linux, where there is no splice(2).
type pipePool struct{ _ sync.Mutex }

// copyBuf is a pooled copy buffer.
type copyBuf [32 << 10]byte

// copyConn relays src to dst through a buffer until src reaches end of
// file (nil) or an error, adding every byte to the counters.
func (l *LB) copyConn(dst, src *net.TCPConn, c1, c2, c3 *atomic.Uint64) error {
	buf := l.bufs.Get().(*copyBuf)
	defer l.bufs.Put(buf)
	for {
		n, rerr := src.Read(buf[:])
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return err
			}
			for _, c := range [...]*atomic.Uint64{c1, c2, c3} {
				c.Add(uint64(n))
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
