package billingsim

import "syscall"

// childProcAttr has a soak child killed when the soak's process dies, so
// that no child outlives an interrupted soak.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
