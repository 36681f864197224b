//go:build !linux

package transport

import "errors"

// ListenSend is only implemented on Linux.
func ListenSend(family int) (Conn, error) {
	return nil, errors.New("vrrp transport: raw VRRP sockets are only supported on Linux")
}
