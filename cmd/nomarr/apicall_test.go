package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/process"
	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/supervisor"
)

// offlineStore scans an empty folder into a new store under a data dir and
// stores a failed restart state for worker:discovery:0 of node n1; it
// returns the common flags and a function that reads that state back.
func offlineStore(t *testing.T, addr string) (base []string, failed func() bool) {
	t.Helper()
	base = []string{"--http-addr", addr, "--data-dir", t.TempDir(), "--node", "n1", "--workers", "2"}
	if rc := run(append([]string{"scan", t.TempDir()}, base...), &bytes.Buffer{}, &bytes.Buffer{}); rc != 0 {
		t.Fatalf("scan to create the store: exit %d", rc)
	}
	s, err := loadWithFile(t, "", base[2:]...)
	if err != nil {
		t.Fatal(err)
	}
	key := supervisor.RestartKey("n1", "worker:discovery:0")
	withStore(t, s, func(st app.Store) {
		if err := st.SaveRestart(context.Background(), key, restart.State{Component: key, FailedAtWallMs: 1, FailureReason: "window limit"}); err != nil {
			t.Fatal(err)
		}
	})
	return base, func() bool {
		var f bool
		withStore(t, s, func(st app.Store) {
			rs, _, err := st.LoadRestart(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			f = rs.Failed()
		})
		return f
	}
}

func withStore(t *testing.T, s *app.Settings, f func(app.Store)) {
	t.Helper()
	st, err := app.OpenForSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f(st)
}

// TestSlowDaemonIsNotWrittenBehind: a daemon that listens but does not
// answer in time (its loop stuck in a slow store call) is not taken for no
// daemon: `workers reset` exits 1 naming the address and the timeout, and
// writes nothing in the store (the daemon would keep its in-memory state);
// `status` exits 1 instead of showing the store's counts without the
// workers.
func TestSlowDaemonIsNotWrittenBehind(t *testing.T) {
	defer func(d time.Duration) { apiTimeout = d }(apiTimeout)
	apiTimeout = 200 * time.Millisecond
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	defer close(release)
	addr := strings.TrimPrefix(ts.URL, "http://")
	base, failed := offlineStore(t, addr)

	for _, args := range [][]string{{"workers", "reset"}, {"workers", "reset", "worker:discovery:0"}, {"status"}} {
		var out, errb bytes.Buffer
		rc := run(append(args, base...), &out, &errb)
		want := "the nomarr daemon at " + addr + " did not answer within 200ms"
		if rc != 1 || !strings.Contains(errb.String(), want) {
			t.Errorf("%v with a daemon that does not answer: exit %d, %q; want 1 saying %q", args, rc, errb.String(), want)
		}
		if strings.Contains(out.String()+errb.String(), "no daemon running") || strings.Contains(errb.String(), "store only") {
			t.Errorf("%v took a slow daemon for none: %q %q", args, out.String(), errb.String())
		}
	}
	if !failed() {
		t.Error("workers reset wrote the reset in the store behind a daemon that did not answer")
	}
}

// TestNoDaemonOnlyWhenRefused guards the one case that acts on the store:
// nothing listens at http_addr (connection refused). Then a reset is
// written, and the worker is no longer failed.
func TestNoDaemonOnlyWhenRefused(t *testing.T) {
	base, failed := offlineStore(t, "127.0.0.1:1")
	var out, errb bytes.Buffer
	if rc := run(append([]string{"workers", "reset", "worker:discovery:0"}, base...), &out, &errb); rc != 0 ||
		!strings.Contains(out.String(), "done in the store (no daemon running)") {
		t.Fatalf("reset with no daemon: exit %d, %q %q", rc, out.String(), errb.String())
	}
	if failed() {
		t.Error("the offline reset left the worker failed")
	}
}

// TestOfflineResetRefusedUnderALiveHold: with nothing listening at
// http_addr, a main process may still run under this node name (another
// http_addr, or `nomarr tag`, which serves none). It keeps its restart
// state in memory, so a reset written in the store would be lost: the
// offline reset is refused while the node name's hold names a live
// process here, or a process elsewhere whose hold has not ended; it goes
// on once the hold is handed back, lapsed, or its process is gone.
func TestOfflineResetRefusedUnderALiveHold(t *testing.T) {
	base, failed := offlineStore(t, "127.0.0.1:1")
	s, err := loadWithFile(t, "", base[2:]...)
	if err != nil {
		t.Fatal(err)
	}
	hold := func(h node.NameHolder) {
		t.Helper()
		b, _ := json.Marshal(h)
		withStore(t, s, func(st app.Store) {
			if err := st.SetMeta(context.Background(), node.NameKeyPrefix+"n1", string(b)); err != nil {
				t.Fatal(err)
			}
		})
	}
	reset := func() (int, string) {
		var out, errb bytes.Buffer
		rc := run(append([]string{"workers", "reset"}, base...), &out, &errb)
		return rc, out.String() + errb.String()
	}
	self := process.Self()
	if self.Space == "" {
		t.Skip("no /proc: this process's liveness cannot be told")
	}
	self.Instance = "n1:" + "1:2"
	soon := time.Now().Add(time.Minute).UnixMilli()
	here, lapsedHere := self, self
	here.UntilMs = soon
	lapsedHere.UntilMs = time.Now().Add(-time.Hour).UnixMilli() // lapsed, but the process runs
	elsewhere := node.NameHolder{Instance: "n1:7:8", Host: "other", PID: 7, UntilMs: soon}
	// A hold elsewhere that ended by this host's clock, but less than a
	// lease_ttl ago: a renewal late, or a clock behind; still in use.
	justLapsed := elsewhere
	justLapsed.UntilMs = time.Now().Add(-5 * time.Second).UnixMilli()
	for _, h := range []node.NameHolder{here, lapsedHere, elsewhere, justLapsed} {
		hold(h)
		if rc, msg := reset(); rc != 1 || !strings.Contains(msg, `node "n1"`) || !strings.Contains(msg, "reset through its API") {
			t.Errorf("reset under the hold %+v: exit %d, %q; want 1 naming the holder", h, rc, msg)
		}
		if !failed() {
			t.Fatalf("reset under the hold %+v was written in the store", h)
		}
	}
	released := elsewhere
	released.UntilMs = 0
	gone := self
	gone.Started, gone.UntilMs = "1", soon // another process under this pid
	longLapsed := elsewhere
	longLapsed.UntilMs = time.Now().Add(-time.Hour).UnixMilli()
	for _, h := range []node.NameHolder{released, gone, longLapsed} {
		hold(h)
		key := supervisor.RestartKey("n1", "worker:discovery:0")
		withStore(t, s, func(st app.Store) {
			_ = st.SaveRestart(context.Background(), key, restart.State{Component: key, FailedAtWallMs: 1, FailureReason: "window limit"})
		})
		if rc, msg := reset(); rc != 0 || failed() {
			t.Errorf("reset under the hold %+v (not running): exit %d, %q, still failed %v", h, rc, msg, failed())
		}
	}
}
