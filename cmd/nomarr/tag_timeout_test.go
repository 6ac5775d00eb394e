package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

// TestTagUnderTimeoutStopsGracefully: GNU `timeout` sends its signal to
// the command and then to the command's process group, so the main
// process receives SIGTERM twice within microseconds. That is one stop
// request: the workers finish their jobs (3 s, within stop_grace), none
// is killed, and tag exits 143. The run is started in a group of its own,
// as timeout starts it, and signalled as timeout signals it, the copy 50
// ms after (well within stop.Window).
func TestTagUnderTimeoutStopsGracefully(t *testing.T) {
	bin := nomarrBinary(t)
	lib, data := t.TempDir(), t.TempDir()
	audioFiles(t, lib, "1.mp3", "2.mp3", "3.mp3", "4.mp3")
	script := write(t, "name: s\nduration: 1m\nlibrary:\n  files: 1\n  job_time: 3s\n")
	stderr := &syncbuf.Buffer{}
	cmd := exec.Command(bin, "tag", lib, "--data-dir", data, "--workers", "2", "--analyzer", "script:"+script,
		"--stop-grace", "20s", "--frame-interval", "200ms", "--check-interval", "100ms")
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	r := &slowTag{cmd: cmd, stderr: stderr, done: done}
	r.waitUntil(t, "two jobs in progress", 20*time.Second, func() bool {
		st, err := sqlite.Open(filepath.Join(data, "nomarr.db"))
		if err != nil {
			return false
		}
		defer st.Close()
		c, err := st.Counts(context.Background())
		return err == nil && c.Claimed == 2
	})
	pid := cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGTERM) // timeout's signal to its child
	// Go's runtime merges a signal that arrives before the previous one
	// was read; on a busy host the group's copy comes after, as here.
	time.Sleep(50 * time.Millisecond)
	_ = syscall.Kill(-pid, syscall.SIGTERM) // and to the child's group
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		t.Fatalf("tag still running 30 s after SIGTERM:\n%s", stderr.String())
	}
	logs := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code != 143 {
		t.Errorf("exit %d, want 143 (SIGTERM)", code)
	}
	for _, forced := range []string{"stopping now", "forced stop", "msg=kill"} {
		if strings.Contains(logs, forced) {
			t.Errorf("one SIGTERM to the process and its group forced the stop (%q):\n%s", forced, logs)
		}
	}
	if !strings.Contains(logs, "msg=stop") {
		t.Errorf("no graceful stop logged:\n%s", logs)
	}
}
