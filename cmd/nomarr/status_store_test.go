package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/core/store"
)

// statusOf runs the text `nomarr status` against a daemon answering info.
func statusOf(t *testing.T, info httpapi.Info) (int, string) {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(info)
	}))
	defer ts.Close()
	var out, errb bytes.Buffer
	rc := run([]string{"status", "--http-addr", strings.TrimPrefix(ts.URL, "http://"), "--data-dir", t.TempDir()}, &out, &errb)
	return rc, out.String()
}

// With the daemon's store unreachable the pause flag is unknown: status
// says so rather than "false" (the daemon's false is a zero meaning nothing).
func TestStatusPauseFlagUnknownWithoutTheStore(t *testing.T) {
	_, out := statusOf(t, httpapi.Info{Instance: "h:1:2", Store: "sqlite:/x.db", StoreError: "sqlite: unable to open database file"})
	if !strings.Contains(out, "workers enabled: unknown") {
		t.Errorf("status with the store down: %q, want workers enabled: unknown", out)
	}
}

// A store that answers reads but takes no write (another process holding
// the SQLite write lock, a full disk) is not healthy: status prints the
// counts, then since when and why the daemon's writes fail, and exits 1.
func TestStatusShowsFailingStoreWrites(t *testing.T) {
	since := time.Now().Add(-90 * time.Second)
	rc, out := statusOf(t, httpapi.Info{Instance: "h:1:2", Store: "sqlite:/x.db", WorkerEnabled: true,
		Library:            store.Counts{Total: 5, Tagged: 2, Pending: 3},
		StoreWritesFailing: &httpapi.StoreWriteFailure{Since: since, Op: "renew_leases", Error: "database or disk is full (13)"}})
	want := "store writes failing since " + since.Local().Format(time.DateTime) + " (1m30s ago): renew leases: database or disk is full (13)\n"
	if rc != 1 || !strings.Contains(out, "5 files, 2 tagged") || !strings.Contains(out, "workers enabled: true\n"+want) {
		t.Errorf("exit %d, %q; want exit 1, the counts and %q", rc, out, want)
	}
}

// A database the daemon found damaged is no passing outage: status says
// it is damaged, since when, which call found it and how to repair it,
// and exits 1, even while the counts still read.
func TestStatusShowsADamagedStore(t *testing.T) {
	since := time.Now().Add(-2 * time.Minute)
	damage := "database file is corrupt (database disk image is malformed (11)): stop nomarr, then restore the file from a backup"
	rc, out := statusOf(t, httpapi.Info{Instance: "h:1:2", Store: "sqlite:/x.db", WorkerEnabled: true,
		Library:      store.Counts{Total: 5, Tagged: 2, Pending: 3},
		StoreCorrupt: &httpapi.StoreCorruption{Since: since, Op: "renew_leases", Error: damage}})
	want := "store damaged since " + since.Local().Format(time.DateTime) + " (2m0s ago), found by renew leases: " + damage + "\n"
	if rc != 1 || !strings.Contains(out, want) {
		t.Errorf("exit %d, %q; want exit 1 and %q", rc, out, want)
	}
}
