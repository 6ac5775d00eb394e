package process

import (
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nomarr/nomarr/core/supervisor"
	"github.com/nomarr/nomarr/internal/eventually"
)

// helperMode makes the test binary act as a worker child.
const helperMode = "NOMARR_PROCESS_TEST_CHILD"

// testParent marks the environment of the test process itself: a child
// that inherits it without a helper mode (a spawner that dropped Env) must
// not run the tests again, each spawning the next.
const testParent = "NOMARR_PROCESS_TEST_PARENT"

func TestMain(m *testing.M) {
	switch os.Getenv(helperMode) {
	case "":
		if os.Getenv(testParent) != "" {
			os.Exit(5) // a child started without its helper mode
		}
		os.Setenv(testParent, "1")
		os.Exit(m.Run())
	case "frame-exit": // one frame byte, then exit 0
		fr, _, err := ChildPipes()
		if err != nil {
			os.Exit(3)
		}
		fr.Write([]byte("x"))
		os.Exit(0)
	case "named": // name itself, one frame byte, then wait to be signalled
		fr, _, err := ChildPipes()
		if err != nil || NameSelf("nomarr") != nil {
			os.Exit(3)
		}
		fr.Write([]byte("x"))
		time.Sleep(time.Minute) // the child's life until the signal; a minute ends an orphan
		os.Exit(4)
	case "sleep": // wait to be signalled
		time.Sleep(time.Minute) // the child's life until the signal; a minute ends an orphan
		os.Exit(4)
	case "stream": // streamLen frame bytes, then exit 0
		fr, _, err := ChildPipes()
		if err != nil {
			os.Exit(3)
		}
		b := make([]byte, streamLen)
		for i := range b {
			b[i] = streamByte(i)
		}
		for len(b) > 0 {
			n := min(len(b), 1000)
			if _, err := fr.Write(b[:n]); err != nil {
				os.Exit(3)
			}
			b = b[n:]
		}
		os.Exit(0)
	case "cloexec": // whether both pipes are close-on-exec, on the frame pipe
		fr, _, err := ChildPipes()
		if err != nil {
			os.Exit(3)
		}
		say := "cloexec"
		for _, fd := range []int{FrameFD, ControlFD} {
			if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
				say = "inherited"
			}
		}
		fr.Write([]byte(say))
		os.Exit(0)
	case "no-pipes": // started without fds 3 and 4: ChildPipes must say so
		if _, _, err := ChildPipes(); err == nil {
			os.Exit(6)
		}
		os.Exit(0)
	}
}

func spawner(t *testing.T, mode string, events chan Event) *Spawner {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Spawner{Command: func(string, uint64) (string, []string) { return self, nil },
		Env: append(os.Environ(), helperMode+"="+mode), Output: io.Discard, Events: events}
}

// A reaped child is forgotten at once, even while the main loop has not yet
// taken its last events: its pid is free for the kernel to reuse, and a
// kill for the dead worker (stop grace, hang) must not reach whichever
// process gets it next. Signals also go through the process handle, never
// the bare pid.
func TestReapedChildForgottenBeforeItsEvents(t *testing.T) {
	const comp = "worker:discovery:0"
	s, _ := spawnUnread(t, "frame-exit", comp)
	// Its events wait untaken: the spawner's table is polled.
	eventually.True(t, 10*time.Second, "an exited child forgotten while its events wait", func() bool {
		_, ok := s.PID(comp)
		return !ok
	})
	s.Signal(comp, 1, supervisor.Kill) // nothing to signal: must not panic or reach anything
}

// Signal reaches a live child through its handle, and the reap reports the
// signal.
func TestSignalKillsLiveChild(t *testing.T) {
	ev := make(chan Event, 16)
	s := spawner(t, "sleep", ev)
	const comp = "worker:discovery:1"
	if _, err := s.Spawn(comp, 7); err != nil {
		t.Fatal(err)
	}
	s.Signal(comp, 6, supervisor.Kill) // an older generation: ignored
	s.Signal(comp, 7, supervisor.Kill)
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.Kind != Exited {
				continue
			}
			if e.Gen != 7 || e.Code != -1 || e.Signal != "SIGKILL" {
				t.Fatalf("exit = %+v, want gen 7 killed", e)
			}
			s.Wait()
			return
		case <-timeout:
			t.Fatal("child not killed")
		}
	}
}

// spawnUnread spawns comp (generation 1) in mode while the main loop reads
// nothing: its events wait on an unbuffered channel until the test takes
// them. At the end of the test the rest are drained and the child reaped.
func spawnUnread(t *testing.T, mode, comp string) (*Spawner, chan Event) {
	t.Helper()
	ev := make(chan Event)
	s := spawner(t, mode, ev)
	if _, err := s.Spawn(comp, 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		go func() {
			for range ev {
			}
		}()
		s.Wait()
	})
	return s, ev
}
