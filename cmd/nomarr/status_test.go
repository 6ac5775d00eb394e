package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/core/store"
)

// TestStatusShowsStoreError guards that `nomarr status` does not present a
// daemon's unreachable store as an empty library: the daemon then sends
// zero counts and store_error, and status must print the error in place of
// the counts and exit 1, in text and JSON alike.
func TestStatusShowsStoreError(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(httpapi.Info{Instance: "h:1:2", Store: "sqlite:/x.db", WorkerEnabled: true,
			Library: store.Counts{}, StoreError: "sqlite: database is locked"})
	}))
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	dir := t.TempDir()

	var out, errb bytes.Buffer
	rc := run([]string{"status", "--http-addr", addr, "--data-dir", dir}, &out, &errb)
	if rc != 1 {
		t.Errorf("status with the store down: exit %d, want 1", rc)
	}
	if !strings.Contains(out.String(), "store unavailable: sqlite: database is locked") {
		t.Errorf("status with the store down says %q: the store error is not shown", out.String())
	}
	if strings.Contains(out.String(), "0 files") {
		t.Errorf("status with the store down still prints counts: %q", out.String())
	}

	out.Reset()
	rc = run([]string{"status", "--json", "--http-addr", addr, "--data-dir", dir}, &out, &errb)
	if rc != 1 || !strings.Contains(out.String(), `"store_error": "sqlite: database is locked"`) {
		t.Errorf("status --json with the store down: exit %d, %s", rc, out.String())
	}
}

// TestStatusPrintsCountsWhenStoreIsUp guards the ordinary text status line
// and exit 0 when the daemon's store answers.
func TestStatusPrintsCountsWhenStoreIsUp(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(httpapi.Info{Instance: "h:1:2", Store: "sqlite:/x.db", WorkerEnabled: true,
			Library: store.Counts{Total: 5, Tagged: 2, Pending: 3},
			Workers: []httpapi.WorkerInfo{{Component: "worker:discovery:0", Status: "healthy", Phase: "idle",
				Kills: map[string]int64{"hang": 0}}},
			ClaimsReleased: map[string]int64{"worker_died": 0}})
	}))
	defer ts.Close()
	var out, errb bytes.Buffer
	rc := run([]string{"status", "--http-addr", strings.TrimPrefix(ts.URL, "http://"), "--data-dir", t.TempDir()}, &out, &errb)
	if rc != 0 || !strings.Contains(out.String(), "store sqlite:/x.db: 5 files, 2 tagged, 0 failed, 3 pending") {
		t.Errorf("exit %d, %q", rc, out.String())
	}
	if strings.Contains(out.String(), "since the daemon started") {
		t.Errorf("status of a daemon that killed, lost and quarantined nothing has an events line:\n%s", out.String())
	}
}

// TestStatusSaysWhatMissingLists: the files not valid are the empty ones
// and those gone at the last scan, and `nomarr missing` lists only the
// gone ones (an empty file is on disk): the status line must not send the
// user to it for all of them. Here one empty file, which missing leaves
// out.
func TestStatusSaysWhatMissingLists(t *testing.T) {
	lib, data := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(lib, "empty.flac"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"--data-dir", data, "--http-addr", "127.0.0.1:1"}
	var out, errb bytes.Buffer
	if rc := run(append([]string{"scan", lib}, base...), &out, &errb); rc != 0 {
		t.Fatalf("scan: exit %d, %s", rc, errb.String())
	}
	out.Reset()
	if rc := run(append([]string{"missing"}, base...), &out, &errb); rc != 0 || out.Len() != 0 {
		t.Fatalf("missing lists an empty file: exit %d, %q", rc, out.String())
	}
	out.Reset()
	if rc := run(append([]string{"status"}, base...), &out, &errb); rc != 0 {
		t.Fatalf("status: exit %d, %s", rc, errb.String())
	}
	if got := out.String(); !strings.Contains(got, "1 not valid (empty files, or files gone at the last scan: `nomarr missing --data-dir "+data+"` lists the gone ones)") {
		t.Errorf("status line %q", got)
	}
}

// TestOfflineStatusIsCalm: without a daemon (the usual case for a
// one-shot user) status says so in one plain line on stderr, not with the
// dial's error, and its --json has this binary's version and no empty
// instance (there is no main process to name).
func TestOfflineStatusIsCalm(t *testing.T) {
	data := t.TempDir()
	base := []string{"--data-dir", data, "--http-addr", "127.0.0.1:1"}
	var out, errb bytes.Buffer
	if rc := run(append([]string{"status"}, base...), &out, &errb); rc != 1 ||
		errb.String() != "nomarr status: no daemon at 127.0.0.1:1, and no store at "+filepath.Join(data, "nomarr.db")+" (nothing scanned with this --db or --data-dir yet)\n" {
		t.Errorf("status without a daemon or a store: exit %d, %q", rc, errb.String())
	}
	if rc := run(append([]string{"scan", t.TempDir()}, base...), &out, &errb); rc != 0 {
		t.Fatalf("scan: exit %d, %s", rc, errb.String())
	}
	out.Reset()
	errb.Reset()
	if rc := run(append([]string{"status"}, base...), &out, &errb); rc != 0 || errb.String() != "no daemon at 127.0.0.1:1: showing the store only\n" {
		t.Errorf("status without a daemon: exit %d, stderr %q", rc, errb.String())
	}
	out.Reset()
	errb.Reset()
	if rc := run(append([]string{"status", "--json"}, base...), &out, &errb); rc != 0 {
		t.Fatalf("status --json: exit %d, %s", rc, errb.String())
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out.String())
	}
	if _, ok := got["instance"]; ok || got["version"] != buildVersion() || got["store"] != "sqlite:"+filepath.Join(data, "nomarr.db") {
		t.Errorf("status --json without a daemon:\n%s", out.String())
	}
}

// The daemon's view of the hosts' model-set records is shown as it sends
// it: from the daemon's host (its node, not this command's), with the
// host holding its re-tagging back and the time that lapses.
func TestStatusShowsTheDaemonsModelSets(t *testing.T) {
	until := time.Date(2020, 11, 22, 14, 0, 0, 0, time.UTC) // past: no "(in …)" to compute
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(httpapi.Info{Instance: "h:1:2", Store: "sqlite:/x.db", WorkerEnabled: true,
			ModelSets: &httpapi.ModelSetsInfo{Node: "d1", Version: "0123456789ab", HeldBack: true, HeldBy: []string{"n2"}, HeldUntil: until,
				Hosts: []httpapi.ModelSetHost{
					{Node: "d1", Version: "0123456789ab", AgeMs: (3 * time.Minute).Milliseconds(), Counts: true},
					{Node: "n2", Version: "fedcba987654", AgeMs: (40 * time.Second).Milliseconds(), Counts: true},
				}}})
	}))
	defer ts.Close()
	data := t.TempDir()
	var out, errb bytes.Buffer
	rc := run([]string{"status", "--http-addr", strings.TrimPrefix(ts.URL, "http://"), "--data-dir", data, "--node", "cli"}, &out, &errb)
	want := "model sets: d1 0123456789ab 3m ago, n2 fedcba987654 40s ago\n" +
		"re-tagging held back by n2 (fedcba987654), on another model set than this host (d1, 0123456789ab): until " +
		until.Local().Format("2006-01-02 15:04 MST") + " if it stops recording, or at once: `nomarr models forget n2 --data-dir " + data + " --node cli`\n"
	if rc != 0 || !strings.HasSuffix(out.String(), "; workers enabled: true\n"+want) {
		t.Errorf("exit %d:\n%s\nwant it to end with:\n%s", rc, out.String(), want)
	}
}

// TestStatusNamesDaemonJobsAndFailures guards what an operator reads in
// the text status: which daemon answered (node, pid, address) and that it
// is another node's than the one asked for, each job by its file's path
// rather than its key, each failed worker with its reason and the command
// that restarts it, and exit 1 while a worker is failed (it stays down
// until a reset).
func TestStatusNamesDaemonJobsAndFailures(t *testing.T) {
	started := time.Now().Add(-90 * time.Minute)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(httpapi.Info{Instance: fmt.Sprintf("vm:4242:%d", started.UnixMilli()), Node: "vm", Version: "abc",
			Store: "sqlite:/x.db", WorkerEnabled: true, Library: store.Counts{Total: 5, Tagged: 2, Pending: 3},
			Workers: []httpapi.WorkerInfo{
				{Component: "worker:discovery:0", Status: "healthy", Phase: "processing", CurrentJob: "0123456789abcdef0123456789abcdef",
					CurrentPath: "/music/a/b.flac", PID: 77, LastFrameAgeMs: 1200,
					Kills: map[string]int64{"hang": 1, "stall": 0}, Deaths: 1},
				{Component: "worker:discovery:1", Status: "failed", Restarts: 6, LastFrameAgeMs: -1,
					FailureReason: "restart window: 5 restarts within 5m0s",
					Kills:         map[string]int64{"hang": 2, "startup_timeout": 1}, Deaths: 6},
			},
			FilesQuarantined: 1,
			ClaimsReleased:   map[string]int64{"worker_died": 4, "lease_expired": 0, "not_work": 1}})
	}))
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	data := t.TempDir()
	var out, errb bytes.Buffer
	rc := run([]string{"status", "--http-addr", addr, "--data-dir", data, "--node", "b"}, &out, &errb)
	got := out.String()
	if rc != 1 {
		t.Errorf("status with a failed worker: exit %d, want 1\n%s", rc, got)
	}
	for _, want := range []string{
		"daemon vm (pid 4242, up 1h3", // 1h30m0s, or a second more on a slow machine
		" at " + addr + ", version abc\n",
		"this is node vm's daemon, not node b's",
		"/music/a/b.flac\n",
		"worker:discovery:1 failed: restart window: 5 restarts within 5m0s\n",
		"`nomarr workers reset --http-addr " + addr + " --data-dir " + data + " --node b` restarts them",
		"since the daemon started: 7 worker exits, 4 kills (hang 3, startup timeout 1), 1 file quarantined, 5 claims removed (not work 1, worker died 4)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status does not say %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "0123456789abcdef") {
		t.Errorf("status shows the job's key where its path is known:\n%s", got)
	}
}

// TestStatusNodeLineOnlyWhenAsked: the line saying the daemon is another
// node's is printed only when this command was told a node (flag,
// NOMARR_NODE or config file): with none, node defaults to the host name,
// which asks for no daemon in particular (a daemon started with --node
// host1 on a machine named otherwise is this host's all the same).
func TestStatusNodeLineOnlyWhenAsked(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(httpapi.Info{Instance: fmt.Sprintf("not-this-host:4242:%d", time.Now().UnixMilli()),
			Node: "not-this-host", Version: "abc", Store: "sqlite:/x.db", WorkerEnabled: true})
	}))
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	status := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if rc := run(append([]string{"status", "--http-addr", addr, "--data-dir", t.TempDir()}, args...), &out, &errb); rc != 0 {
			t.Fatalf("status %v: exit %d\n%s%s", args, rc, out.String(), errb.String())
		}
		return out.String()
	}
	if got := status(); strings.Contains(got, "this is node") {
		t.Errorf("no node asked for, yet:\n%s", got)
	}
	if got := status("--node", "b"); !strings.Contains(got, "this is node not-this-host's daemon, not node b's") {
		t.Errorf("--node b:\n%s", got)
	}
	t.Setenv("NOMARR_NODE", "c")
	if got := status(); !strings.Contains(got, "this is node not-this-host's daemon, not node c's") {
		t.Errorf("NOMARR_NODE=c:\n%s", got)
	}
	t.Setenv("NOMARR_NODE", "")
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("node: d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := status("--config", cfg); !strings.Contains(got, "this is node not-this-host's daemon, not node d's") {
		t.Errorf("node in the config file:\n%s", got)
	}
}
