package realproc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/internal/eventually"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

// TestSecondSignalForcesAStopWaitingOnTheStore: `nomarr tag` is stopped
// (SIGINT) while another process holds the store's write lock and both
// workers are mid-job. The workers are killed after stop_grace, but their
// claims cannot be released: the stop waits for the store, says so, and
// is still waiting seconds later. A second SIGINT forces the stop: the
// process exits within seconds, 130, saying that the claims return to the
// work queue when their lease expires. Once the lock is gone, nothing is
// lost: the next `tag` tags every file, the left claims' leases (lease_ttl
// 3 s) having expired.
func TestSecondSignalForcesAStopWaitingOnTheStore(t *testing.T) {
	lib, data := audioDir(t, 4), t.TempDir()
	db := filepath.Join(data, "nomarr.db")
	flags := []string{"--workers", "2", "--data-dir", data, "--frame-interval", "200ms", "--check-interval", "100ms",
		"--idle-poll-min", "100ms", "--idle-poll-max", "500ms", "--stop-grace", "1s", "--lease-ttl", "3s"}
	tag := exec.Command(binary, append([]string{"tag", lib, "--analyzer", "script:" + jobsOf(t, "10m")}, flags...)...)
	var out, errb syncbuf.Buffer
	tag.Stdout, tag.Stderr = &out, &errb
	if err := tag.Start(); err != nil {
		t.Fatal(err)
	}
	exited, reaped := make(chan error, 1), make(chan struct{})
	go func() { exited <- tag.Wait(); close(reaped) }()
	t.Cleanup(func() {
		_ = tag.Process.Kill()
		<-reaped
	})
	eventually.True(t, 60*time.Second, "both workers on a job", func() bool { return claimCount(t, db) == 2 })

	unlock := lockStore(t, db)
	defer unlock()
	if err := tag.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	const waiting = "stopping: waiting for the store to take 2 claim releases; press Ctrl-C again to leave them"
	// Each store call of the stopping loop waits out the busy timeout (5 s).
	defer func() {
		if t.Failed() {
			t.Logf("tag's stderr:\n%s", errb.String())
		}
	}()
	eventually.True(t, 90*time.Second, fmt.Sprintf("%q after the SIGINT", waiting), func() bool {
		select {
		case err := <-exited:
			t.Fatalf("tag exited (%v) while the store was locked, before saying it waits for it", err)
		default:
		}
		return strings.Contains(errb.String(), waiting)
	})
	select {
	case err := <-exited:
		t.Fatalf("tag exited (%v) with its claim releases unwritten:\n%s", err, errb.String())
	case <-time.After(3 * time.Second):
	}

	forcedAt := time.Now()
	if err := tag.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("tag still running 10 s after the second SIGINT:\n%s", errb.String())
	}
	t.Logf("exited %s after the second SIGINT", time.Since(forcedAt).Round(time.Millisecond))
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Errorf("tag ended with %v, want exit 130\n%s", err, errb.String())
	}
	for _, want := range []string{
		"forced stop: claims not released; they return to the work queue when their lease expires",
		"interrupted: 4 files not yet tagged",
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("no %q:\n%s", want, errb.String())
		}
	}
	if testing.Verbose() {
		t.Logf("stderr of the forced run:\n%s", errb.String())
	}
	unlock()
	if n := claimCount(t, db); n != 2 {
		t.Errorf("%d claims in the store after the forced stop, want the 2 left", n)
	}

	// Nothing is lost: the next run takes the files back once the left
	// claims' leases expire (cleaned up every second here), and tags them.
	again := exec.Command(binary, append([]string{"tag", lib, "--analyzer", "script:" + jobsOf(t, "100ms"),
		"--cleanup-period", "1s"}, flags...)...)
	var out2, errb2 syncbuf.Buffer
	again.Stdout, again.Stderr = &out2, &errb2
	if err := again.Run(); err != nil {
		t.Fatalf("the next tag: %v\n%s", err, errb2.String())
	}
	if !strings.HasPrefix(out2.String(), "tagged 4, failed 0, pending 0 of 4 files") {
		t.Errorf("the next tag: %q, want every file tagged\n%s", out2.String(), errb2.String())
	}
}

// jobsOf writes a scenario for the script analyzer whose every job takes d.
func jobsOf(t *testing.T, d string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "script.yaml")
	spec := fmt.Sprintf("name: script\nduration: 1h\nlibrary:\n  files: 1\n  job_time: %s\n", d)
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// claimCount reads how many claims the store at path holds (0 before it
// exists); a read, which the write lock does not hold up.
func claimCount(t *testing.T, path string) int {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		return 0
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM worker_claims").Scan(&n); err != nil {
		return 0 // the schema is not there yet
	}
	return n
}

// lockStore holds the write lock of the store at path (BEGIN IMMEDIATE, as
// another process's long write would) until the returned function is
// called; calling it again does nothing.
func lockStore(t *testing.T, path string) (unlock func()) {
	t.Helper()
	// Wait for the lock as long as it takes the main process's own writes to end.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		conn.Close()
		db.Close()
		t.Fatalf("taking the write lock: %v", err)
	}
	done := false
	return func() {
		if done {
			return
		}
		done = true
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Errorf("releasing the write lock: %v", err)
		}
		conn.Close()
		db.Close()
	}
}
