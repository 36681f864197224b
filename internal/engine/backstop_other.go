//go:build !linux

package engine

// realBackstopSeams run no threads off Linux (no CPUs named).
func realBackstopSeams() backstopSeams {
	return backstopSeams{cpus: func() []int { return nil }}
}
