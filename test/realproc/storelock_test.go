package realproc

import (
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/internal/eventually"
)

// TestHangKilledWhileTheStoreIsLocked: a worker stops (SIGSTOP) while the
// store's write lock is held — by a worker stopped inside a transaction,
// or, here, by another process. Every store call of the main loop then
// waits out SQLite's busy timeout (5 s) and is retried tick after tick; the
// hang must still be killed at hang_after, not after those waits (before:
// 5–15 s late, and when the hung worker held the lock itself, everything
// waited on the kill that the waits delayed).
func TestHangKilledWhileTheStoreIsLocked(t *testing.T) {
	lib := audioDir(t, 40)
	script := writeScenario(t, "name: s\nduration: 1h\nlibrary:\n  files: 1\n  job_time: 300ms\n")
	pid, addr, data := leakServe(t, lib, "--workers", "2", "--analyzer", "script:"+script, "--lease-ttl", "3s")
	waitChildren(t, pid, 2, 15*time.Second)
	waitHealthy(t, addr, 2, 15*time.Second) // framing: a hang is judged from the last frame

	unlock := lockStore(t, filepath.Join(data, "nomarr.db"))
	defer unlock()
	// The lease renewals, due every second of the real clock, now wait
	// and fail.
	time.Sleep(1500 * time.Millisecond)
	victim := procChildren(pid)[0]
	if err := syscall.Kill(victim, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	eventually.True(t, 30*time.Second, "the hung worker killed", func() bool {
		return !slices.Contains(procChildren(pid), victim)
	})
	took := time.Since(stopped)
	t.Logf("hung worker killed %s after its SIGSTOP, with the store locked (hang_after 1 s)", took.Round(time.Millisecond))
	// hang_after (1 s) after its last frame, up to a frame interval (200 ms)
	// before the SIGSTOP, plus a check interval (100 ms); the rest is slack
	// for a busy machine, far below one busy timeout.
	if took > 3*time.Second {
		t.Errorf("the hang was killed %s after the SIGSTOP; want within about hang_after (1 s): the main loop's store calls held the kill up", took)
	}
	unlock()
	waitChildren(t, pid, 2, 30*time.Second)
}
