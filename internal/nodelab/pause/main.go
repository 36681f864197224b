// Command pause is the sandbox ("pause") image of internal/nodelab's nodes:
// the process that holds a pod's namespaces. It waits for SIGTERM or SIGINT
// and exits 0, as Kubernetes' own pause does, and reaps the zombies it
// inherits when it is a pod's process 1. Built static (CGO_ENABLED=0) into a
// one-file image; no registry is needed.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
