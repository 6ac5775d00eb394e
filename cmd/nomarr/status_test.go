package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
			Library: store.Counts{Total: 5, Tagged: 2, Pending: 3}})
	}))
	defer ts.Close()
	var out, errb bytes.Buffer
	rc := run([]string{"status", "--http-addr", strings.TrimPrefix(ts.URL, "http://"), "--data-dir", t.TempDir()}, &out, &errb)
	if rc != 0 || !strings.Contains(out.String(), "store sqlite:/x.db: 5 files, 2 tagged, 0 failed, 3 pending") {
		t.Errorf("exit %d, %q", rc, out.String())
	}
}
