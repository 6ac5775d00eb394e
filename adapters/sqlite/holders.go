package sqlite

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// holders names, for a "database is locked" error, the other processes
// that have the database file (or its WAL or shared-memory file) open.
// SQLite cannot say which connection holds its write lock, but Linux's
// /proc says who has the file open and whether that process is stopped: a
// worker stopped (SIGSTOP) inside a write transaction keeps the lock until
// it is resumed or killed, and once its main process is gone no one else
// will kill it. Elsewhere, or without the right to read /proc, the list is
// empty. The scan reads every process's descriptors, so it runs at most
// every holdersEvery and its answer is reused meanwhile.
type holders struct {
	mu     sync.Mutex
	at     time.Time
	answer string
}

const (
	holdersEvery = 10 * time.Second
	holdersShown = 6
)

// describe returns "" or "; open in …" for the file at path.
func (h *holders) describe(path string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if now := time.Now(); h.at.IsZero() || now.Sub(h.at) >= holdersEvery {
		h.at, h.answer = now, scanHolders(path, os.Getpid())
	}
	return h.answer
}

// scanHolders lists the processes other than self with path, path-wal or
// path-shm open, stopped ones first.
func scanHolders(path string, self int) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	if p, err := filepath.EvalSymlinks(abs); err == nil {
		abs = p
	}
	names := map[string]bool{abs: true, abs + "-wal": true, abs + "-shm": true}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return ""
	}
	var stopped, others []string
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self || !hasOpen(pid, names) {
			continue
		}
		state, cmd := procInfo(pid)
		switch state {
		case 'T', 't':
			stopped = append(stopped, fmt.Sprintf("pid %d (%s) is stopped: resume it (kill -CONT %d) or kill it", pid, cmd, pid))
		case 'D':
			stopped = append(stopped, fmt.Sprintf("pid %d (%s) is blocked in I/O", pid, cmd))
		default:
			others = append(others, fmt.Sprintf("pid %d (%s)", pid, cmd))
		}
	}
	all := append(stopped, others...)
	if len(all) == 0 {
		return ""
	}
	more := ""
	if len(all) > holdersShown {
		more = fmt.Sprintf(" and %d more", len(all)-holdersShown)
		all = all[:holdersShown]
	}
	return "; open in " + strings.Join(all, ", ") + more
}

// hasOpen reports whether process pid has one of names open.
func hasOpen(pid int, names map[string]bool) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false // gone, or another user's
	}
	for _, fd := range fds {
		if target, err := os.Readlink(dir + "/" + fd.Name()); err == nil && names[target] {
			return true
		}
	}
	return false
}

// procInfo returns a process's state letter and the start of its command line.
func procInfo(pid int) (state byte, cmd string) {
	base := "/proc/" + strconv.Itoa(pid)
	if stat, err := os.ReadFile(base + "/stat"); err == nil {
		// pid (comm) state …: comm may hold spaces and parentheses.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
			state = stat[i+2]
		}
	}
	line, _ := os.ReadFile(base + "/cmdline")
	args := strings.Fields(strings.ReplaceAll(string(line), "\x00", " "))
	if len(args) > 0 {
		args[0] = filepath.Base(args[0])
	}
	cmd = strings.Join(args[:min(len(args), 4)], " ")
	if len(cmd) > 80 {
		cmd = cmd[:77] + "..."
	}
	if cmd == "" {
		cmd = "?"
	}
	return state, cmd
}
