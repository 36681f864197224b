//go:build !linux

package transport

import "errors"

// Listen is only implemented on Linux.
func Listen(family int) (Conn, error) {
	return nil, errors.New("vrrp transport: raw VRRP sockets are only supported on Linux")
}
