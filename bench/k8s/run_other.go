//go:build !linux

package main

import (
	"fmt"
	"io"
)

func run(_ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "bench/k8s: unsupported platform: it needs Linux network namespaces, packet sockets, /proc and root")
	return 2
}
