package process

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/supervisor"
)

// A worker started as the main process starts it, through /proc/self/exe,
// is named `exe` by the kernel; once it names itself, ps and pgrep show it
// by that name: its main thread and the threads it had.
func TestNamedChildShowsItsName(t *testing.T) {
	events := make(chan Event, 16)
	s := spawner(t, "named", events)
	s.Command = func(string, uint64) (string, []string) { return "/proc/self/exe", nil }
	pid, err := s.Spawn("w", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		s.Signal("w", 1, supervisor.Kill)
		s.Wait()
	}()
	select {
	case e := <-events:
		if e.Kind != Data {
			t.Fatalf("first event %+v, want the child's frame byte (it names itself first)", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no frame from the child in 10 s")
	}
	dir := "/proc/" + strconv.Itoa(pid)
	comm, err := os.ReadFile(dir + "/comm")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(comm)); got != "nomarr" {
		t.Errorf("child's comm = %q, want nomarr", got)
	}
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile(dir + "/task/" + task.Name() + "/comm")
		if err == nil && strings.TrimSpace(string(b)) != "nomarr" {
			t.Errorf("thread %s's comm = %q, want nomarr", task.Name(), strings.TrimSpace(string(b)))
		}
	}
}

// NameSelf refuses a name the kernel would show wrong (empty, or with a
// newline), before it renames anything.
func TestNameSelfRefusesAnEmptyName(t *testing.T) {
	for _, name := range []string{"", "a\nb"} {
		if err := NameSelf(name); err == nil {
			t.Errorf("NameSelf(%q) = nil, want an error", name)
		}
	}
}

// ExecutableName is the binary's file name, without its directory.
func TestExecutableNameIsTheFileName(t *testing.T) {
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ExecutableName()
	if err != nil || got != filepath.Base(p) || strings.Contains(got, "/") {
		t.Fatalf("ExecutableName() = %q, %v; want %q", got, err, filepath.Base(p))
	}
}
