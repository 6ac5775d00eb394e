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
//
// Both must be pipes. A process started otherwise (`nomarr worker` run by
// hand) may hold anything there: the Go runtime itself keeps files open
// on the lowest free descriptors (the cgroup CPU limits it reads), which
// an open-only check would take for the pipes.
func ChildPipes() (frames *os.File, control *os.File, err error) {
	for _, fd := range []int{FrameFD, ControlFD} {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return nil, nil, fmt.Errorf("process: fd %d is not open (a worker is started by its main process): %w", fd, err)
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
			return nil, nil, fmt.Errorf("process: fd %d is not a pipe (a worker is started by its main process)", fd)
		}
		syscall.CloseOnExec(fd)
	}
	return os.NewFile(FrameFD, "frames"), os.NewFile(ControlFD, "control"), nil
}
