package process

// What the main loop gets from a worker's pipes and process: every frame
// byte, whole and in order, then EOF, then the exit; signals that reach
// only the generation they name; the worker's own process group and
// argv[0].

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/supervisor"
	"github.com/nomarr/nomarr/internal/eventually"
)

// streamLen is what a "stream" child writes, in writes of 1000 bytes:
// more than one read of the spawner's buffer (32 KiB), less than its
// first read and the pipe (64 KiB) hold together, so that the child exits
// while its frames still wait for the main loop.
const streamLen = 40 << 10

// streamByte is the i-th byte a "stream" child writes.
func streamByte(i int) byte { return byte(i % 251) }

// TestFramesArriveWholeInOrderBeforeTheExit: a worker that writes more than
// one read's worth of frame bytes and exits while the main loop takes
// nothing (busy in a store call) gets each byte through exactly once and in
// order, each Data event its own copy, then EOF, then its exit, last: the
// supervisor judges an exit only after the frames that came before it.
func TestFramesArriveWholeInOrderBeforeTheExit(t *testing.T) {
	const comp = "worker:discovery:0"
	s, ev := spawnUnread(t, "stream", comp)
	// The reap is announced only by an event the main loop has not taken
	// (none are, here): the spawner's table is polled.
	eventually.True(t, 10*time.Second, "the child to write everything, exit and be reaped", func() bool {
		_, ok := s.PID(comp)
		return !ok
	})
	var got []Event
	for timeout := time.After(10 * time.Second); len(got) == 0 || got[len(got)-1].Kind != Exited; {
		select {
		case e := <-ev:
			got = append(got, e)
		case <-timeout:
			t.Fatalf("no exit event in 10 s after %d events", len(got))
		}
	}
	var data []byte
	var kinds []string
	for _, e := range got {
		if e.Component != comp || e.Gen != 1 {
			t.Fatalf("event %+v, want %s generation 1", e, comp)
		}
		switch e.Kind {
		case Data:
			data = append(data, e.Data...)
			if len(kinds) == 0 || kinds[len(kinds)-1] != "data" {
				kinds = append(kinds, "data")
			}
		case EOF:
			kinds = append(kinds, "eof")
		case Exited:
			kinds = append(kinds, "exit "+strconv.Itoa(e.Code))
		}
	}
	if k := strings.Join(kinds, ", "); k != "data, eof, exit 0" {
		t.Fatalf("events in the order %s; want data, eof, exit 0", k)
	}
	if len(data) != streamLen {
		t.Fatalf("%d frame bytes, want %d", len(data), streamLen)
	}
	for i, b := range data {
		if b != streamByte(i) {
			t.Fatalf("frame byte %d is %d, want %d: the bytes were overwritten or reordered", i, b, streamByte(i))
		}
	}
}

// Signal reaches only the generation it names: a signal for an earlier
// generation (a kill decided for a worker since replaced) or a later one
// leaves the running process alone. Term is SIGTERM, Kill SIGKILL.
func TestSignalReachesOnlyItsGeneration(t *testing.T) {
	ev := make(chan Event, 16)
	s := spawner(t, "sleep", ev)
	const comp = "worker:discovery:0"
	pid, err := s.Spawn(comp, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Wait()
	s.Signal(comp, 6, supervisor.Kill)
	s.Signal(comp, 8, supervisor.Term)
	select {
	case e := <-ev:
		t.Fatalf("event %+v after signals for other generations; want the child left running", e)
	case <-time.After(300 * time.Millisecond):
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("child gone after signals for other generations: %v", err)
	}
	s.Signal(comp, 7, supervisor.Term)
	select {
	case e := <-ev:
		for e.Kind != Exited {
			e = <-ev
		}
		if e.Gen != 7 || e.Code != -1 || e.Signal != "SIGTERM" {
			t.Fatalf("exit %+v, want generation 7 ended by SIGTERM", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Term did not end the child")
	}
}

// The reap of an earlier generation that outlived its replacement's spawn
// (killed late) forgets only itself: the current generation stays known,
// and a kill for it still reaches it.
func TestEarlierGenerationsReapKeepsTheCurrent(t *testing.T) {
	ev := make(chan Event, 16)
	s := spawner(t, "sleep", ev)
	const comp = "worker:discovery:0"
	old, err := s.Spawn(comp, 1)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := s.Spawn(comp, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		s.Signal(comp, 2, supervisor.Kill) // reaped already unless the test failed
		s.Wait()
	}()
	exited := func(gen uint64) {
		t.Helper()
		for timeout := time.After(10 * time.Second); ; {
			select {
			case e := <-ev:
				if e.Kind == Exited && e.Gen == gen {
					return
				}
			case <-timeout:
				t.Fatalf("generation %d did not exit", gen)
			}
		}
	}
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	exited(1)
	if pid, ok := s.PID(comp); !ok || pid != cur {
		t.Fatalf("PID after the earlier generation's reap = %d, %v; want the current one's, %d", pid, ok, cur)
	}
	s.Signal(comp, 2, supervisor.Kill)
	exited(2)
}

// A worker runs in a process group of its own (a Ctrl-C on the terminal
// reaches only the main process, which stops it gracefully) under the
// spawner's Name as argv[0].
func TestSpawnOwnGroupAndName(t *testing.T) {
	ev := make(chan Event, 16)
	s := spawner(t, "sleep", ev)
	s.Name = "nomarr-test-worker"
	pid, err := s.Spawn("w", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		s.Signal("w", 1, supervisor.Kill)
		s.Wait()
	}()
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	if pgid != pid || pgid == syscall.Getpgrp() {
		t.Errorf("child %d in process group %d (this process's: %d), want its own", pid, pgid, syscall.Getpgrp())
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if argv0, _, _ := bytes.Cut(cmdline, []byte{0}); string(argv0) != s.Name {
		t.Errorf("child's argv[0] = %q, want %q", argv0, s.Name)
	}
}

// Inside a worker, both pipes are close-on-exec: a subprocess it starts
// (ffmpeg) holds neither, so only the worker's own death closes them.
func TestChildPipesCloseOnExec(t *testing.T) {
	ev := make(chan Event, 16)
	s := spawner(t, "cloexec", ev)
	if _, err := s.Spawn("w", 1); err != nil {
		t.Fatal(err)
	}
	defer s.Wait()
	var got []byte
	for timeout := time.After(10 * time.Second); ; {
		select {
		case e := <-ev:
			switch e.Kind {
			case Data:
				got = append(got, e.Data...)
				continue
			case EOF:
				continue
			}
			if string(got) != "cloexec" || e.Code != 0 {
				t.Fatalf("child said %q and exited %d; want both pipes close-on-exec", got, e.Code)
			}
			return
		case <-timeout:
			t.Fatal("the child did not exit")
		}
	}
}

// A process not started by a main process is told so by ChildPipes,
// whatever it holds on fds 3 and 4: nothing, regular files, or the Go
// runtime's own files (it opens the cgroup CPU limits on the lowest free
// descriptors, 3 and 4 in a process started without the pipes).
func TestChildPipesWithoutPipes(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	files := func() []*os.File {
		var fs []*os.File
		for range 2 {
			f, err := os.CreateTemp(t.TempDir(), "fd")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			fs = append(fs, f)
		}
		return fs
	}
	for name, extra := range map[string][]*os.File{"none": nil, "regular files": files()} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), helperMode+"=no-pipes")
			cmd.ExtraFiles = extra
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("ChildPipes in a process started without the pipes: %v (exit 6: no error); %s", err, out)
			}
		})
	}
}
