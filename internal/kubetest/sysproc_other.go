//go:build !linux

package kubetest

import "syscall"

// sysProcAttr has nothing to add off Linux, which has no parent-death signal:
// etcd and kube-apiserver outlive a test binary that dies without running its
// cleanups.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}
