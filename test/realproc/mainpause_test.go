package realproc

import (
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestMainProcessStoppedKillsNoWorker: the main process stopped for three
// times hang_after (Ctrl-Z on `nomarr tag`, which stops only the main
// process: its workers run in their own process group; or a main process
// starved of CPU) and then continued. Its workers framed all along, so none
// is killed as hung: the same processes run on, and no restart is counted
// against their limits, which persist across app restarts.
func TestMainProcessStoppedKillsNoWorker(t *testing.T) {
	lib := audioDir(t, 60)
	script := writeScenario(t, "name: s\nduration: 1h\nlibrary:\n  files: 1\n  job_time: 400ms\n")
	pid, addr, _ := leakServe(t, lib, "--workers", "2", "--analyzer", "script:"+script)
	waitChildren(t, pid, 2, 15*time.Second)
	waitHealthy(t, addr, 2, 15*time.Second)
	before := procChildren(pid)
	restarts := apiRestarts(addr)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The main process is stopped for three times hang_after (1 s) of the
	// real clock, which its workers' frames are judged by.
	time.Sleep(3 * time.Second)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// A wrong kill would follow the resume within a check or two; 3 s of
	// the real clock give it room to show.
	time.Sleep(3 * time.Second)
	after := procChildren(pid)
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Errorf("workers %v before the main process was stopped, %v after: killed as hung for the main's own stop", before, after)
	}
	if n := apiRestarts(addr); n != restarts {
		t.Errorf("restarts %d before the main process was stopped, %d after", restarts, n)
	}
}
