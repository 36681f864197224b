//go:build !linux

package main

import (
	"fmt"
	"io"
)

func run(_ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "bgp: network namespaces are Linux only")
	return 1
}

func helperMain() int { return -1 }
