package audio

import "syscall"

// sysProcAttr puts ffmpeg in its own process group (so a kill reaches
// everything it started) and has the kernel kill it if this process dies
// first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
