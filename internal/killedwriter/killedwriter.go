// Package killedwriter runs a test binary again as a child process that
// makes a temporary copy the way a tag writer does and is killed with its
// copy in place, so that a test can check what a killed write leaves.
//
// The child says "TMP <path>" on its standard output once it holds its
// copy, then waits to be killed; a child whose write returns says
// "ERR <error>" and exits with status 3.
package killedwriter

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Child is called first in TestMain. When env is set, the process is a
// child: it calls write with env's value and never returns. write makes its
// copy and calls Hold with the copy's path.
func Child(env string, write func(arg string) error) {
	arg := os.Getenv(env)
	if arg == "" {
		return
	}
	err := write(arg)
	fmt.Println("ERR", err)
	os.Exit(3)
}

// Hold tells the parent the path of the child's copy and waits to be
// killed.
func Hold(tmp string) {
	fmt.Println("TMP", tmp)
	time.Sleep(time.Hour) // killed here
}

// Start runs the test binary as a child with env set to arg and returns it
// once it holds its copy, with the copy's path. The child is killed when
// the test ends, if it is still running.
func Start(t testing.TB, env, arg string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+arg)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		tmp, ok := strings.CutPrefix(strings.TrimSpace(s), "TMP ")
		if !ok {
			t.Fatalf("child writer said %q", s)
		}
		return cmd, tmp
	case <-time.After(60 * time.Second):
		t.Fatal("child writer did not make its copy within 60 s")
	}
	return nil, ""
}

// Kill kills the child with SIGKILL, as a crash or the OOM killer would,
// and fails t unless that is what ended it.
func Kill(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child writer: %v, want killed by SIGKILL", err)
	}
}
