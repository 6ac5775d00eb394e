package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/nomarr/nomarr/internal/eventually"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/stop"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// nomarrBinary builds this command once per test run: tag and serve start
// their workers from their own binary, which a test binary is not.
func nomarrBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nomarr-cmd-test")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "nomarr")
		if out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func TestMain(m *testing.M) {
	refuseWorkerRole()
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// audioFiles creates empty-enough "audio" files (scanned by their names)
// under dir and returns their paths.
func audioFiles(t *testing.T, dir string, names ...string) []string {
	t.Helper()
	var paths []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("not really audio"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// TestTagLogsFailedFiles: through real worker processes, at the default
// log level, `nomarr tag` shows which file failed and why, and its closing
// message points there.
func TestTagLogsFailedFiles(t *testing.T) {
	bin := nomarrBinary(t)
	lib, data := t.TempDir(), t.TempDir()
	paths := audioFiles(t, lib, "bad.mp3", "flaky.mp3", "ok.mp3")
	script := write(t, fmt.Sprintf("name: s\nduration: 1m\nlibrary:\n  files: 1\n  job_time: 50ms\n  overrides:\n"+
		"    %s: {error: permanent}\n    %s: {error: transient}\n", library.Key(paths[0]), library.Key(paths[1])))
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, "tag", lib, "--data-dir", data, "--workers", "1", "--analyzer", "script:"+script)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("tag: %v, want exit 1\n%s", err, errb.String())
	}
	logs := errb.String()
	for _, w := range []string{
		"level=WARN msg=file_failed", "path=" + paths[0], `reason="permanent: injected permanent error"`,
		"level=INFO msg=file_retry", "path=" + paths[1],
		"nomarr tag: 1 file failed; the log's file_failed lines say why",
		"nomarr tag: 1 file waits for a retry after a transient error, due at ", // when it is due
		" (see the log's file_retry lines); run `nomarr tag " + lib + " --data-dir " + data + " --workers 1` again then",
	} {
		if !strings.Contains(logs, w) {
			t.Errorf("tag's stderr lacks %q:\n%s", w, logs)
		}
	}
}

// TestTagSaysItTagsTheStore: `nomarr tag DIR` tags every pending file of
// the store; when there are files beyond DIR's it says how many and where
// they come from before it starts, so that "tagged 4 … of 5 files" after
// "found 2 audio files" is no surprise.
func TestTagSaysItTagsTheStore(t *testing.T) {
	bin := nomarrBinary(t)
	a, b, data := t.TempDir(), t.TempDir(), t.TempDir()
	audioFiles(t, a, "a1.mp3", "a2.mp3")
	tag := func(dir string) string {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, "tag", dir, "--data-dir", data, "--workers", "1", "--analyzer", "noop")
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("tag %s: %v\n%s", dir, err, errb.String())
		}
		return errb.String() + out.String()
	}
	if got := tag(a); strings.Contains(got, "in the store") {
		t.Errorf("a run with nothing but DIR's files speaks of others:\n%s", got)
	}
	audioFiles(t, b, "b1.mp3", "b2.mp3", "b3.mp3")
	var out, errb bytes.Buffer
	if code := run([]string{"scan", b, "--data-dir", data}, &out, &errb); code != 0 {
		t.Fatalf("scan: %d %s", code, errb.String())
	}
	audioFiles(t, a, "a3.mp3")
	got := tag(a)
	if !strings.Contains(got, "found 3 audio files in "+a+" (1 new, 2 unchanged)\n4 files to tag in the store: 1 from "+a+", 3 from earlier scans\n") {
		t.Errorf("tag of a folder with earlier scans' files pending:\n%s", got)
	}
	if !strings.Contains(got, "tagged 4, failed 0, pending 0 of 6 files") {
		t.Errorf("summary:\n%s", got)
	}
}

// slowTag is a `nomarr tag` run over four files whose jobs take 30 s,
// with two workers, started and waited for until both work on a file.
type slowTag struct {
	cmd    *exec.Cmd
	stderr *syncbuf.Buffer
	done   chan error
	data   string
	lib    string
}

func startSlowTag(t *testing.T) *slowTag {
	t.Helper()
	bin := nomarrBinary(t)
	lib, data := t.TempDir(), t.TempDir()
	audioFiles(t, lib, "1.mp3", "2.mp3", "3.mp3", "4.mp3")
	script := write(t, "name: s\nduration: 1m\nlibrary:\n  files: 1\n  job_time: 30s\n")
	r := &slowTag{stderr: &syncbuf.Buffer{}, done: make(chan error, 1), data: data, lib: lib}
	r.cmd = exec.Command(bin, "tag", lib, "--data-dir", data, "--workers", "2", "--analyzer", "script:"+script,
		"--stop-grace", "1s", "--frame-interval", "200ms", "--check-interval", "100ms")
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	db := filepath.Join(data, "nomarr.db")
	r.waitUntil(t, "two jobs in progress", 20*time.Second, func() bool {
		st, err := sqlite.Open(db)
		if err != nil {
			return false
		}
		defer st.Close()
		c, err := st.Counts(context.Background())
		return err == nil && c.Claimed == 2
	})
	return r
}

// waitUntil polls ok for up to d; the run is killed and the test fails
// when it never holds.
func (r *slowTag) waitUntil(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			_ = r.cmd.Process.Kill()
			t.Logf("stderr of the run:\n%s", r.stderr.String())
		}
	})
	eventually.True(t, d, what, ok)
}

// TestTagInterrupted: SIGINT stops `nomarr tag` gracefully; it says it was
// interrupted and how to go on (not that files wait after "a transient
// error"), forces the stop on a second SIGINT, and exits 130.
func TestTagInterrupted(t *testing.T) {
	r := startSlowTag(t)
	cmd, stderr, done := r.cmd, r.stderr, r.done
	_ = cmd.Process.Signal(syscall.SIGINT)
	r.waitUntil(t, "stop", 5*time.Second, func() bool { return strings.Contains(stderr.String(), "msg=stop") })
	// A signal within stop.Window of the first is the same request.
	time.Sleep(stop.Window)
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("tag still running 20 s after SIGINT:\n%s", stderr.String())
	}
	logs := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130 (SIGINT)", code)
	}
	if !strings.Contains(logs, "nomarr tag: interrupted: 4 files not yet tagged; run `nomarr tag "+r.lib+" --data-dir "+r.data+" --workers 2` again to go on") {
		t.Errorf("no word of the interruption:\n%s", logs)
	}
	if strings.Contains(logs, "transient error") {
		t.Errorf("an interrupted run blames a transient error:\n%s", logs)
	}
	if !strings.Contains(logs, `msg="stopping now: the workers are killed`) {
		t.Errorf("the second SIGINT did not force the stop:\n%s", logs)
	}
}

func TestSignalExit(t *testing.T) {
	if got := signalExit(syscall.SIGINT); got != 130 {
		t.Errorf("SIGINT: %d", got)
	}
	if got := signalExit(syscall.SIGTERM); got != 143 {
		t.Errorf("SIGTERM: %d", got)
	}
}

// TestTagPausedDuringTheRun: a pause set while `nomarr tag` runs (here by
// `nomarr workers pause` without a daemon, as a serve sharing the store
// would) ends the run as a pause at start does: it says so once, with
// what to run to go on, stops gracefully and exits 1. It used to wait
// forever, silent, its workers paused and the files still claimable.
func TestTagPausedDuringTheRun(t *testing.T) {
	r := startSlowTag(t)
	cmd, stderr, done, data := r.cmd, r.stderr, r.done, r.data
	var out, errb bytes.Buffer
	if rc := run([]string{"workers", "pause", "--data-dir", data, "--http-addr", "127.0.0.1:1"}, &out, &errb); rc != 0 {
		t.Fatalf("workers pause: exit %d, %s", rc, errb.String())
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("tag still running 20 s after the pause:\n%s", stderr.String())
	}
	logs := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if n := strings.Count(logs, pauseAdvice); n != 1 {
		t.Errorf("the advice is given %d times, want once:\n%s", n, logs)
	}
	if n := strings.Count(logs, "nomarr tag: paused during the run: stopping;"); n != 1 {
		t.Errorf("the pause is told %d times, want once:\n%s", n, logs)
	}
	// What to run names the store and the folder of this run.
	if !strings.Contains(logs, " files not yet tagged (paused)") ||
		!strings.Contains(logs, "run `nomarr workers resume --data-dir "+data+" --workers 2`, then `nomarr tag "+r.lib+" --data-dir "+data+" --workers 2` again") {
		t.Errorf("no word of what to run to go on:\n%s", logs)
	}
}

// TestNothingToTagSaidOnce: a `tag` with nothing pending prints one line,
// "nothing to tag" with the library's counts, as its summary; it used to
// add "tagged 0, failed 0, pending 0 of N files in 0s" after it.
func TestNothingToTagSaidOnce(t *testing.T) {
	lib, data := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(lib, "empty.flac"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if rc := run([]string{"tag", lib, "--data-dir", data, "--analyzer", "noop"}, &out, &errb); rc != 0 {
		t.Fatalf("tag: exit %d, %s", rc, errb.String())
	}
	if got := out.String() + errb.String(); got != "nothing to tag: 1 file, 0 tagged, 0 failed, 1 missing or empty\nfound 1 audio file in "+lib+" (1 new)\n" {
		t.Errorf("tag with nothing pending:\n%s", got)
	}
}

// logOnFailure logs what logs holds once t has failed: the output of a
// process whose state a test polled.
func logOnFailure(t *testing.T, logs fmt.Stringer) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
}

// refuseWorkerRole ends a test binary started as a worker. A run composed
// in-process spawns its workers from /proc/self/exe, the test binary here:
// run as "worker", it would run every test again, each spawning workers of
// its own. Tests that run workers use the built binary (nomarrBinary).
func refuseWorkerRole() {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		fmt.Fprintln(os.Stderr, "nomarr.test: started as a worker; a test ran tag or serve in-process without a worker binary")
		os.Exit(2)
	}
}
