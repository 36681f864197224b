//go:build !linux

package main

import (
	"fmt"
	"io"
)

func run(_ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "bench/dns: unsupported platform: it needs Linux network namespaces, dnsperf and root")
	return 2
}
