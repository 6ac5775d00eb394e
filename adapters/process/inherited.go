package process

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// fdDirs list a process's open file descriptors: Linux's, then the BSDs'
// and macOS's.
var fdDirs = []string{"/proc/self/fd", "/dev/fd"}

// KeepInheritedFromChildren marks close-on-exec every file descriptor
// above stderr that this process holds, so that none passes into the
// processes it starts (workers, and their ffmpeg). A main process calls it
// at start, before it spawns anything: what it inherited from whatever
// started it (a wrapper's `exec 9>/run/nomarr.lock; flock 9`, a
// supervisor's socket) would otherwise reach every worker, and a worker
// orphaned by the main process's death would go on holding the wrapper's
// lock. The descriptors stay open in this process. Go's own descriptors
// are close-on-exec already; stdin, stdout and stderr are left alone
// (workers share stderr on purpose). Workers get only their fds 3 and 4
// (Spawner.Spawn's ExtraFiles), which exec.Cmd duplicates without the
// flag.
func KeepInheritedFromChildren() error {
	var lastErr error
	for _, dir := range fdDirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			lastErr = err
			continue
		}
		for _, e := range ents {
			fd, err := strconv.Atoi(e.Name())
			if err != nil || fd <= 2 {
				continue
			}
			syscall.CloseOnExec(fd) // the directory's own fd, closed meanwhile, fails silently
		}
		return nil
	}
	return fmt.Errorf("process: listing the open file descriptors to keep them from the workers: %w", lastErr)
}
