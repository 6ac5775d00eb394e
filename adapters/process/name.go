package process

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// commLen is the longest command name the kernel keeps (TASK_COMM_LEN
// less its NUL).
const commLen = 15

// NameSelf sets this process's command name (/proc/PID/comm: what ps,
// top, pgrep and `ps -C` show) to name, cut to 15 bytes. A worker is
// started through /proc/self/exe, so that an upgrade replacing the binary
// on disk cannot give a main process workers of another version; the
// kernel then names it after that path's last part, `exe`, and `pgrep -x
// nomarr` or `ps -C nomarr` would miss the workers. The main thread is
// named first (the process's name), then each other thread already there;
// threads started later take the name of the thread that starts them.
// Best effort where there is no /proc: the error says what failed.
func NameSelf(name string) error {
	if len(name) > commLen {
		name = name[:commLen]
	}
	if name == "" || strings.ContainsRune(name, '\n') {
		return errors.New("process: no name to set")
	}
	err := os.WriteFile("/proc/self/comm", []byte(name), 0)
	tasks, _ := filepath.Glob("/proc/self/task/*/comm")
	for _, t := range tasks {
		_ = os.WriteFile(t, []byte(name), 0) // a thread that ended meanwhile is no matter
	}
	return err
}

// ExecutableName is the name of the binary this process runs, for
// NameSelf: the last part of the path os.Executable resolves
// (/proc/self/exe's target on Linux, even once replaced on disk), not the
// path the process was started through.
func ExecutableName() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.Base(p), nil
}
