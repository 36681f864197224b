//go:build !linux

package main

import (
	"fmt"
	"io"
)

func run(_ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "bench/fastvrrp: unsupported platform: it needs Linux network namespaces, keepalived and root")
	return 2
}
