package lbproc

import (
	"crypto/x509"
	"fmt"
	"os"
	"syscall"
)

// Chroot makes dir the process's root, as haproxy's `chroot` does once
// its sockets are open. It first opens the current root, returned for
// reading the configuration on reload, and loads the system's CA pool,
// which TLS health checks verifying certificates need and which the new
// root would not have.
func Chroot(dir string) (*os.Root, error) {
	root, err := os.OpenRoot("/")
	if err != nil {
		return nil, fmt.Errorf("chroot %s: %w", dir, err)
	}
	_, _ = x509.SystemCertPool() // loaded once per process, kept
	if err := syscall.Chroot(dir); err != nil {
		root.Close()
		return nil, fmt.Errorf("chroot %s: %w", dir, err)
	}
	if err := os.Chdir("/"); err != nil {
		root.Close()
		return nil, fmt.Errorf("chroot %s: chdir /: %w", dir, err)
	}
	return root, nil
}
