package process

import (
	"fmt"
	"os"
	"syscall"
)

// ChildPipes returns, inside a worker process, the frame pipe (write) and the
// control pipe (read) its parent passed on fds 3 and 4. Both are marked
// close-on-exec so that subprocesses (ffmpeg, …) never inherit them: only
// this process's death closes them.
func ChildPipes() (frames *os.File, control *os.File, err error) {
	for _, fd := range []int{FrameFD, ControlFD} {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return nil, nil, fmt.Errorf("process: fd %d is not open (a worker is started by its main process): %w", fd, err)
		}
		syscall.CloseOnExec(fd)
	}
	return os.NewFile(FrameFD, "frames"), os.NewFile(ControlFD, "control"), nil
}
