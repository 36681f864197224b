//go:build linux && !amd64 && !arm64

package pages

// sysUserfaultfd is not known here: NoFaultAround reports errArch.
const sysUserfaultfd = 0
