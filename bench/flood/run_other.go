//go:build !linux

package main

import (
	"fmt"
	"io"
)

func run(_ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "bench/flood: unsupported platform: it needs Linux network namespaces, keepalived, haproxy, dnsperf and root")
	return 2
}
