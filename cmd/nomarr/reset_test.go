package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/supervisor"
)

// TestOfflineResetRefusesUnknownID guards `nomarr workers reset ID` without
// a daemon: an ID that is neither a configured worker nor a component with
// stored restart state exits 1 naming it, instead of writing a restart
// state nobody reads and reporting success. Configured workers and
// components with stored state are still reset.
func TestOfflineResetRefusesUnknownID(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--http-addr", "127.0.0.1:1", "--data-dir", dir, "--node", "n1", "--workers", "2"}
	if rc := run(append([]string{"scan", t.TempDir()}, base...), io.Discard, io.Discard); rc != 0 {
		t.Fatalf("scan to create the store: exit %d", rc)
	}
	reset := func(id string) (int, string) {
		var out, errb bytes.Buffer
		rc := run(append([]string{"workers", "reset", id}, base...), &out, &errb)
		return rc, out.String() + errb.String()
	}
	for _, id := range []string{"0", "worker:discovery:2", "worker:discovery:01", "worker:discover:0"} {
		if rc, msg := reset(id); rc != 1 || !strings.Contains(msg, `no worker "`+id+`"`) {
			t.Errorf("workers reset %s (no such worker): exit %d, %q; want 1 naming the id", id, rc, strings.TrimSpace(msg))
		}
	}
	for _, id := range []string{"worker:discovery:0", "worker:discovery:1"} {
		if rc, msg := reset(id); rc != 0 {
			t.Errorf("workers reset %s: exit %d, %q", id, rc, msg)
		}
	}
	var out, errb bytes.Buffer
	if rc := run(append([]string{"workers", "reset"}, base...), &out, &errb); rc != 0 {
		t.Errorf("workers reset (all): exit %d, %s", rc, errb.String())
	}

	// A worker of an earlier, larger configuration still has its state.
	s, err := loadWithFile(t, "", base[2:]...)
	if err != nil {
		t.Fatal(err)
	}
	st, err := app.OpenForSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	key := supervisor.RestartKey("n1", "worker:discovery:5")
	if err := st.SaveRestart(context.Background(), key, restart.State{Component: key, FailedAtWallMs: 1, FailureReason: "lifetime limit"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if rc, msg := reset("worker:discovery:5"); rc != 0 {
		t.Errorf("workers reset worker:discovery:5 (stored state): exit %d, %q", rc, msg)
	}
}

// TestOfflineCommandsNeedAStore: without a daemon, the commands that read
// or change the store do not create one where none is (a mistyped --db, a
// --data-dir other than the one scanned): they exit 1 naming the path
// they looked at, and the path is still not there.
func TestOfflineCommandsNeedAStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for _, args := range [][]string{{"failed"}, {"retry"}, {"missing"}, {"forget"},
		{"workers", "pause"}, {"workers", "resume"}, {"workers", "reset"}, {"status"}} {
		var out, errb bytes.Buffer
		rc := run(append(args, "--http-addr", "127.0.0.1:1", "--data-dir", dir), &out, &errb)
		want := "no store at " + filepath.Join(dir, "nomarr.db")
		if rc != 1 || !strings.Contains(errb.String(), want) {
			t.Errorf("%v: exit %d, %q; want 1 saying %q", args, rc, errb.String(), want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("%v created %s (%v)", args, dir, err)
		}
	}
}

// TestMistakesCreateNothing: a library path that is not there or not a
// folder, an unsupported store, a mistyped key in config.yaml or a bad
// worker count are each one clear message, and no data dir is created.
func TestMistakesCreateNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	readme, cfg := filepath.Join(t.TempDir(), "README.md"), filepath.Join(t.TempDir(), "config.yaml")
	for _, f := range []struct{ path, body string }{{readme, "# notes"}, {cfg, "wrokers: 2\n"}} {
		if err := os.WriteFile(f.path, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lib := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"tag", filepath.Join(lib, "nope")}, 1, "no such file or directory"},
		{[]string{"scan", filepath.Join(lib, "nope")}, 1, "no such file or directory"},
		{[]string{"tag", readme}, 1, "not a folder (nor an audio file)"},
		{[]string{"scan", readme}, 1, "not a folder (nor an audio file)"},
		{[]string{"tag", lib, "--db", "mysql://u@h/db"}, 2, `unsupported store "mysql://…"`},
		{[]string{"tag", lib, "--config", cfg}, 2, `unknown key "wrokers" (did you mean workers?)`},
		{[]string{"tag", lib, "--workers", "0"}, 2, "workers must be in [1, 1024]"},
	} {
		var out, errb bytes.Buffer
		rc := run(append(c.args, "--data-dir", dir, "--analyzer", "noop"), &out, &errb)
		if rc != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %d saying %q", c.args, rc, errb.String(), c.code, c.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("%v created %s (%v)", c.args, dir, err)
		}
	}
}

// --db sqlite://PATH (sqlite: and an absolute path) is a SQLite store, not
// an unsupported scheme.
func TestSQLiteURLForm(t *testing.T) {
	data := t.TempDir()
	db := filepath.Join(data, "x.db")
	var out, errb bytes.Buffer
	if rc := run([]string{"scan", t.TempDir(), "--db", "sqlite://" + db}, &out, &errb); rc != 0 {
		t.Fatalf("scan --db sqlite://%s: exit %d, %s", db, rc, errb.String())
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("no store at %s: %v", db, err)
	}
}

// TestOfflineResetAllTakesOnlyFailed: `nomarr workers reset` without an ID
// and without a daemon resets the failed workers only, as the daemon does:
// a worker that is crash-looping but has not failed keeps its restart
// counts (its window and lifetime limits still hold). An explicit ID
// still resets that worker.
func TestOfflineResetAllTakesOnlyFailed(t *testing.T) {
	base, failed := offlineStore(t, "127.0.0.1:1") // worker:discovery:0 failed
	s, err := loadWithFile(t, "", base[2:]...)
	if err != nil {
		t.Fatal(err)
	}
	looping := supervisor.RestartKey("n1", "worker:discovery:1")
	counts := func() (n int) {
		withStore(t, s, func(st app.Store) {
			rs, _, err := st.LoadRestart(context.Background(), looping)
			if err != nil {
				t.Fatal(err)
			}
			n = rs.RestartCount + len(rs.Recent)
		})
		return n
	}
	withStore(t, s, func(st app.Store) {
		if err := st.SaveRestart(context.Background(), looping, restart.State{Component: looping, RestartCount: 7, Consecutive: 3,
			Recent: []int64{1, 2, 3}, LastRestartWallMs: 3}); err != nil {
			t.Fatal(err)
		}
	})
	var out, errb bytes.Buffer
	if rc := run(append([]string{"workers", "reset"}, base...), &out, &errb); rc != 0 ||
		!strings.Contains(out.String(), "reset worker:discovery:0: done in the store") {
		t.Fatalf("workers reset: exit %d, %q %q", rc, out.String(), errb.String())
	}
	if failed() {
		t.Error("the failed worker is still failed")
	}
	if n := counts(); n != 10 {
		t.Errorf("the crash-looping worker that had not failed was reset too (counts %d, want 10)", n)
	}
	out.Reset()
	if rc := run(append([]string{"workers", "reset"}, base...), &out, &errb); rc != 0 || !strings.Contains(out.String(), "no failed worker") {
		t.Errorf("workers reset with none failed: exit %d, %q", rc, out.String())
	}
	if rc := run(append([]string{"workers", "reset", "worker:discovery:1"}, base...), &out, &errb); rc != 0 || counts() != 0 {
		t.Errorf("workers reset worker:discovery:1: exit %d, counts left %d", rc, counts())
	}
}

// TestOfflineResetCreatesNoState: an offline `workers reset ID` of a
// configured worker with no restart state has nothing to reset and writes
// nothing; it used to write a state row, after which the same ID was
// accepted under a smaller worker count. An ID outside the configured
// count is accepted only while it has state to clear, so once.
func TestOfflineResetCreatesNoState(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--http-addr", "127.0.0.1:1", "--data-dir", dir, "--node", "n1"}
	if rc := run(append([]string{"scan", t.TempDir()}, base...), io.Discard, io.Discard); rc != 0 {
		t.Fatalf("scan to create the store: exit %d", rc)
	}
	s, err := loadWithFile(t, "", base[2:]...)
	if err != nil {
		t.Fatal(err)
	}
	key := supervisor.RestartKey("n1", "worker:discovery:5")
	stored := func() (rs restart.State, found bool) {
		withStore(t, s, func(st app.Store) {
			if rs, found, err = st.LoadRestart(context.Background(), key); err != nil {
				t.Fatal(err)
			}
		})
		return rs, found
	}
	reset := func(workers string) (int, string) {
		var out, errb bytes.Buffer
		rc := run(append([]string{"workers", "reset", "worker:discovery:5", "--tagger-worker-count", workers}, base...), &out, &errb)
		return rc, out.String() + errb.String()
	}
	if rc, msg := reset("8"); rc != 0 || !strings.Contains(msg, "nothing to reset") {
		t.Errorf("reset of a configured worker without state: exit %d, %q", rc, msg)
	}
	if _, found := stored(); found {
		t.Fatal("a reset with nothing to reset wrote a restart state")
	}
	if rc, msg := reset("2"); rc != 1 || !strings.Contains(msg, `no worker "worker:discovery:5"`) {
		t.Errorf("reset of an unconfigured worker without state: exit %d, %q", rc, msg)
	}
	withStore(t, s, func(st app.Store) {
		if err := st.SaveRestart(context.Background(), key, restart.State{Component: key, RestartCount: 20,
			FailedAtWallMs: 1, FailureReason: "lifetime limit"}); err != nil {
			t.Fatal(err)
		}
	})
	if rc, msg := reset("2"); rc != 0 || !strings.Contains(msg, "reset worker:discovery:5: done in the store") {
		t.Errorf("reset of a worker of a larger configuration, failed: exit %d, %q", rc, msg)
	}
	if rs, _ := stored(); rs.Counted() {
		t.Errorf("not reset: %+v", rs)
	}
	if rc, msg := reset("2"); rc != 1 || !strings.Contains(msg, `no worker "worker:discovery:5"`) {
		t.Errorf("second reset of an unconfigured worker, nothing left to clear: exit %d, %q", rc, msg)
	}
}
