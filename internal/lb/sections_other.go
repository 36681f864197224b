//go:build !linux

package lb

func (cn *conn) halfClosed() bool { return false }

func (l *LB) closeServerDown(*server) {}
