//go:build !linux

package netif

// InMemory reports true where the file system cannot be told.
func InMemory(dir string) (bool, string, error) { return true, "", nil }
