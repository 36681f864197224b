// Package logtest is test support for the load balancer's logging: a
// writer that blocks, and a Unix datagram socket read as a log reader
// reads it.
package logtest

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// GateWriter blocks every Write until Open is closed (a pipe nobody
// reads), then keeps what it is given.
type GateWriter struct {
	Open    chan struct{}
	Entered atomic.Int32 // writes begun
	mu      sync.Mutex
	b       []byte
}

// NewGateWriter is a closed gate.
func NewGateWriter() *GateWriter { return &GateWriter{Open: make(chan struct{})} }

func (w *GateWriter) Write(p []byte) (int, error) {
	w.Entered.Add(1)
	<-w.Open
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	return len(p), nil
}

// Lines is the number of lines written.
func (w *GateWriter) Lines() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Count(w.b, []byte("\n"))
}

// ListenUnixgram opens a Unix datagram socket at path, as a log reader
// (OpenShift's socat sidecar) does.
func ListenUnixgram(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ReadDatagram returns the next datagram on c, failing after wait.
func ReadDatagram(t *testing.T, c *net.UnixConn, wait time.Duration) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 65536)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("reading the log socket: %v", err)
	}
	return string(buf[:n])
}
