package process

// Resource leaks of the spawner over many spawns, kills and failed spawns.

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/supervisor"
	"github.com/nomarr/nomarr/internal/eventually"
)

func openFDCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

func childCount() int {
	n := 0
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		b, _ := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "children"))
		n += len(strings.Fields(string(b)))
	}
	return n
}

// TestSpawnerLeaksNothing: hundreds of children that frame
// and exit, children killed through Signal, and spawns that fail (no such
// binary). Every reader and reaper ends (Wait returns), every pipe end and
// pidfd is closed, no child is left.
func TestSpawnerLeaksNothing(t *testing.T) {
	runtime.GC()
	fds0, g0 := openFDCount(t), runtime.NumGoroutine()
	events := make(chan Event, 64)
	exits := make(chan Event, 1024)
	go func() {
		for e := range events {
			if e.Kind == Exited {
				exits <- e
			}
		}
		close(exits)
	}()
	mode := "frame"
	s := &Spawner{Output: io.Discard, Events: events, Command: func(string, uint64) (string, []string) {
		switch mode {
		case "frame":
			return "/bin/sh", []string{"-c", "printf 'x' >&3"}
		case "sleep":
			return "/bin/sleep", []string{"60"}
		}
		return "/nonexistent/nomarr-worker", nil
	}}
	const comp = "worker:discovery:0"
	var gen uint64
	waitExit := func() {
		select {
		case <-exits:
		case <-time.After(10 * time.Second):
			t.Fatal("no exit event")
		}
	}
	sample := func(label string) {
		t.Logf("%s: fds=%d goroutines=%d children=%d", label, openFDCount(t), runtime.NumGoroutine(), childCount())
	}
	for i := 0; i < 200; i++ {
		gen++
		if _, err := s.Spawn(comp, gen); err != nil {
			t.Fatal(err)
		}
		waitExit()
	}
	sample("after 200 spawn+exit")
	mode = "sleep"
	for i := 0; i < 200; i++ {
		gen++
		if _, err := s.Spawn(comp, gen); err != nil {
			t.Fatal(err)
		}
		s.Signal(comp, gen, supervisor.Kill)
		waitExit()
		s.Signal(comp, gen, supervisor.Kill) // after the reap: nothing to reach
	}
	sample("after 200 spawn+SIGKILL")
	mode = "fail"
	for i := 0; i < 200; i++ {
		gen++
		if _, err := s.Spawn(comp, gen); err == nil {
			t.Fatal("spawn of a missing binary succeeded")
		}
	}
	sample("after 200 failed spawns")
	s.Wait()
	close(events)
	for range exits {
	}
	// A goroutine's end is announced by nothing: the count is polled.
	eventually.True(t, 2*time.Second, "the goroutines back to "+strconv.Itoa(g0), func() bool { return runtime.NumGoroutine() <= g0 })
	fds1, g1, ch := openFDCount(t), runtime.NumGoroutine(), childCount()
	t.Logf("600 spawns: fds %d → %d, goroutines %d → %d, children %d", fds0, fds1, g0, g1, ch)
	if fds1 > fds0 || g1 > g0 || ch != 0 {
		t.Errorf("left behind: %d fds, %d goroutines, %d children", fds1-fds0, g1-g0, ch)
	}
}
