//go:build !linux

package main

import (
	"fmt"
	"io"
)

func run(_ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "bench/lb: unsupported platform: it needs Linux network namespaces, haproxy, wrk, iperf3 and root")
	return 2
}
