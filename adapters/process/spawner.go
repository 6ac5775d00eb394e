// Package process runs worker processes for real: it re-executes the nomarr
// binary as a hidden `nomarr worker …` with two extra pipes — frames from the
// child on fd 3, control from the parent on fd 4 — reads the frame pipe,
// reaps every child, and delivers signals. It only translates between the OS
// and the supervisor's Processes port; every decision is the core's.
package process

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/nomarr/nomarr/core/supervisor"
	"golang.org/x/sys/unix"
)

// Child file descriptors of the two pipes.
const (
	FrameFD   = 3 // child → parent: health frames
	ControlFD = 4 // parent → child: EOF means the main process is gone
)

// Kind says what an Event reports.
type Kind int

const (
	// Data: bytes read from a worker's frame pipe.
	Data Kind = iota
	// EOF: the frame pipe reached end of file.
	EOF
	// Exited: the process was reaped; Code is its exit code, -1 when a signal ended it.
	Exited
)

// Event is one fact about a worker process, for the main loop.
type Event struct {
	Kind      Kind
	Component string
	Gen       uint64
	Data      []byte
	Code      int
	Signal    string // for Exited by a signal: its name, "SIGKILL"
}

// Spawner implements supervisor.Processes with OS processes.
type Spawner struct {
	// Command returns the binary and arguments of a worker.
	Command func(component string, gen uint64) (path string, args []string)
	// Name is the workers' argv[0] ("": the binary's path), for when the
	// path says little, such as /proc/self/exe.
	Name string
	// Env is the children's environment (nil: the parent's).
	Env []string
	// Output receives the children's stdout and stderr (their logs).
	Output io.Writer
	// Events receives every Data, EOF and Exited event; it should be buffered
	// and always drained.
	Events chan<- Event
	Log    *slog.Logger

	mu       sync.Mutex
	children map[string]*child
	wg       sync.WaitGroup
}

// child is a live process. Signals go through proc (a pidfd on Linux), never
// through the bare pid: once the process is reaped its pid may belong to
// another process, and a kill must not reach that one.
type child struct {
	gen     uint64
	pid     int
	proc    *os.Process
	control *os.File // write end; closing it (or our death) tells the child
}

var _ supervisor.Processes = (*Spawner)(nil)

// Spawn starts generation gen of a worker in its own process group, so a
// Ctrl-C on the terminal reaches only the main process.
func (s *Spawner) Spawn(component string, gen uint64) (int, error) {
	frameR, frameW, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("process: frame pipe for %s: %w", component, err)
	}
	ctrlR, ctrlW, err := os.Pipe()
	if err != nil {
		frameR.Close()
		frameW.Close()
		return 0, fmt.Errorf("process: control pipe for %s: %w", component, err)
	}
	path, args := s.Command(component, gen)
	cmd := exec.Command(path, args...)
	if s.Name != "" {
		cmd.Args[0] = s.Name
	}
	cmd.Env = s.Env
	cmd.Stdout, cmd.Stderr = s.Output, s.Output
	cmd.ExtraFiles = []*os.File{frameW, ctrlR} // fds 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	frameW.Close()
	ctrlR.Close()
	if err != nil {
		frameR.Close()
		ctrlW.Close()
		return 0, fmt.Errorf("process: start %s: %w", component, err)
	}
	pid := cmd.Process.Pid
	s.mu.Lock()
	if s.children == nil {
		s.children = map[string]*child{}
	}
	s.children[component] = &child{gen: gen, pid: pid, proc: cmd.Process, control: ctrlW}
	s.mu.Unlock()

	readDone := make(chan struct{})
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		defer close(readDone)
		s.read(component, gen, frameR)
	}()
	go func() {
		defer s.wg.Done()
		s.reap(component, gen, cmd, readDone, ctrlW)
	}()
	return pid, nil
}

// read forwards the frame pipe's bytes until EOF.
func (s *Spawner) read(component string, gen uint64, r *os.File) {
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.Events <- Event{Kind: Data, Component: component, Gen: gen, Data: append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && s.Log != nil {
				s.Log.Warn("frame pipe read failed", "component", component, "err", err)
			}
			s.Events <- Event{Kind: EOF, Component: component, Gen: gen}
			return
		}
	}
}

// reap waits for the process (no zombies), forgets it at once (its pid is
// free for reuse from now on), then reports its exit after its last frames.
func (s *Spawner) reap(component string, gen uint64, cmd *exec.Cmd, readDone <-chan struct{}, ctrlW *os.File) {
	err := cmd.Wait()
	s.mu.Lock()
	if c := s.children[component]; c != nil && c.gen == gen {
		delete(s.children, component)
	}
	s.mu.Unlock()
	<-readDone // a grandchild cannot hold fd 3: workers mark it close-on-exec
	ctrlW.Close()
	ev := Event{Kind: Exited, Component: component, Gen: gen, Code: cmd.ProcessState.ExitCode()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		ev.Code, ev.Signal = -1, unix.SignalName(ws.Signal()) // "SIGKILL"
		if ev.Signal == "" {
			ev.Signal = ws.Signal().String()
		}
	}
	if err != nil && ev.Code == 0 && s.Log != nil {
		s.Log.Warn("wait failed", "component", component, "err", err)
	}
	s.Events <- ev
}

// Signal implements supervisor.Processes.
func (s *Spawner) Signal(component string, gen uint64, sig supervisor.Signal) {
	s.mu.Lock()
	c := s.children[component]
	s.mu.Unlock()
	if c == nil || c.gen != gen {
		return
	}
	osSig := syscall.SIGTERM
	if sig == supervisor.Kill {
		osSig = syscall.SIGKILL
	}
	err := c.proc.Signal(osSig)
	if err != nil && !errors.Is(err, os.ErrProcessDone) && !errors.Is(err, syscall.ESRCH) && s.Log != nil {
		s.Log.Warn("signal failed", "component", component, "pid", c.pid, "signal", osSig.String(), "err", err)
	}
}

// PID returns the pid of a component's current process.
func (s *Spawner) PID(component string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.children[component]
	if c == nil {
		return 0, false
	}
	return c.pid, true
}

// Wait blocks until every reader and reaper has finished (all children
// reaped). Events must still be drained meanwhile.
func (s *Spawner) Wait() { s.wg.Wait() }
