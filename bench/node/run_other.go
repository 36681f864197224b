//go:build !linux

package main

import (
	"fmt"
	"io"
)

func run(_ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "bench/node: unsupported platform: it needs Linux network namespaces, /proc, keepalived, haproxy and root")
	return 2
}
