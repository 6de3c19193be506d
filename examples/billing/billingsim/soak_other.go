//go:build !linux

package billingsim

import "syscall"

// childProcAttr returns nil: only Linux can have a child killed when its
// parent dies.
func childProcAttr() *syscall.SysProcAttr { return nil }
