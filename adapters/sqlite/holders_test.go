package sqlite

import (
	"bufio"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperLock is the child process that holds the database's write lock: it
// begins a write transaction, prints "ready", and waits for stdin to close.
func helperLock(path string, in io.Reader, out io.Writer) {
	db, err := sql.Open("sqlite", "file:"+path)
	if err == nil {
		_, err = db.Exec(`BEGIN IMMEDIATE; INSERT INTO meta (key, value) VALUES ('held', '1')`)
	}
	if err != nil {
		fmt.Fprintf(out, "error %v\n", err)
		os.Exit(3)
	}
	fmt.Fprintln(out, "ready")
	_, _ = io.Copy(io.Discard, in)
	os.Exit(0)
}

// A write that times out on the lock says which processes have the file
// open, a stopped one first with what to do: SQLite cannot say who holds the
// lock, and a worker stopped inside a write transaction after its main
// process died is killed by no one.
func TestLockedErrorNamesAStoppedHolder(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs Linux's /proc to see who has the file open")
	}
	path := tempDB(t)
	s := openT(t, path, WithBusyTimeout(300*time.Millisecond))
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envHelper+"=lock", envDB+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != "ready" {
		t.Fatalf("lock holder: %q", line)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	err = s.SetMeta(bg, "k", "v")
	if err == nil {
		t.Fatal("a write beside a held lock succeeded")
	}
	msg := err.Error()
	want := "pid " + strconv.Itoa(pid) + " ("
	if !strings.Contains(msg, "database is locked") || !strings.Contains(msg, want) ||
		!strings.Contains(msg, "is stopped: resume it (kill -CONT "+strconv.Itoa(pid)+") or kill it") {
		t.Fatalf("error %q: want it to name the stopped holder (%s…) and what to do", msg, want)
	}
	if strings.Contains(msg, "pid "+strconv.Itoa(os.Getpid())+" ") {
		t.Fatalf("error %q names this process", msg)
	}
	t.Logf("%s", msg)
	// Counting this process too (it has the file open, running): the
	// stopped holder comes first.
	all := scanHolders(path, -1)
	stopped, running := strings.Index(all, want), strings.Index(all, "pid "+strconv.Itoa(os.Getpid())+" (")
	if stopped < 0 || running < 0 || stopped > running {
		t.Fatalf("holders %q: want the stopped %d before the running %d", all, pid, os.Getpid())
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
	stdin.Close()
}
