//go:build !linux

package audio

import "syscall"

// sysProcAttr puts ffmpeg in its own process group, so a kill reaches
// everything it started. (Should this process die first, ffmpeg exits on
// its next write to the closed pipe.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
