package app

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/event"
)

// During a store outage the main process retries its store writes every
// tick; the log shows each operation's error at most once per 30 s (of
// event time), at WARN, with the count of those held back.
func TestStoreErrorsLoggedQuietly(t *testing.T) {
	var buf bytes.Buffer
	sink := LogSink(slog.New(slog.NewTextHandler(&buf, nil)))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for s := 0; s < 65; s++ {
		sink.Emit(event.Event{T: t0.Add(time.Duration(s) * time.Second), Event: event.StoreError, Reason: "renew leases: database is locked"})
	}
	sink.Emit(event.Event{T: t0.Add(time.Second), Event: event.StoreError, Reason: "claim cleanup: database is locked"})
	// One operation on many files: the file is apart from the operation,
	// so the repeats are held back like any other (and remembered once).
	for i := range 50 {
		sink.Emit(event.Event{T: t0.Add(time.Second), Event: event.StoreError, Component: "worker:discovery:0",
			File: fmt.Sprintf("f%04d", i), Reason: "confirm claim: database is locked"})
	}
	// A worker's own store errors, as the adapter words them: one line per
	// operation, whatever the file.
	for i := range 50 {
		for _, op := range []string{"complete", "release"} {
			sink.Emit(event.Event{T: t0.Add(time.Second), Event: event.StoreError, Component: "worker:discovery:1",
				Reason: fmt.Sprintf("sqlite: %s f%04d: database is locked", op, i)})
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d lines, want 3 for renewals (0 s, 30 s, 60 s), 1 for the cleanup, 1 for the claim checks and 2 for the worker's completes and releases:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[2], "suppressed=29") {
		t.Errorf("lines:\n%s", buf.String())
	}
}

// TestFileEventsLogLevels: a file's failure is a warning and its retry an
// info line, in the main process's log and in a worker's (where they are
// emitted, with the file's path); they used to be DEBUG lines, invisible at
// the default level.
func TestFileEventsLogLevels(t *testing.T) {
	var buf bytes.Buffer
	sink := LogSink(slog.New(slog.NewTextHandler(&buf, nil)))
	sink.Emit(event.Event{Event: event.FileFailed, File: "k1", Reason: "permanent: bad header"})
	sink.Emit(event.Event{Event: event.FileRetry, File: "k2", Reason: "transient: timeout"})
	sink.Emit(event.Event{Event: event.Claim, File: "k3"})
	if s := buf.String(); !strings.Contains(s, "level=WARN msg=file_failed file=k1") ||
		!strings.Contains(s, "level=INFO msg=file_retry file=k2") || strings.Contains(s, "claim") {
		t.Errorf("main process log:\n%s", s)
	}

	buf.Reset()
	wsink := workerLogSink(slog.New(slog.NewTextHandler(&buf, nil)))
	wsink.Emit(event.Event{Event: event.FileFailed, File: "k1", Path: "/music/a b.flac", Reason: "permanent: bad header"})
	wsink.Emit(event.Event{Event: event.FileRetry, File: "k2", Reason: "transient: timeout"})
	wsink.Emit(event.Event{Event: event.Tagged, File: "k1"})
	want := []string{
		`level=WARN msg=file_failed path="/music/a b.flac" reason="permanent: bad header" file=k1`,
		`level=INFO msg=file_retry reason="transient: timeout" file=k2`,
	}
	for _, w := range want {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("worker log lacks %s:\n%s", w, buf.String())
		}
	}
	if strings.Contains(buf.String(), "tagged") {
		t.Errorf("a DEBUG event at the default level:\n%s", buf.String())
	}
}

// TestWorkerStoreErrorsLogged: a worker's own store errors (its store may
// fail while the main process's works: permissions, a full disk on its
// side) are WARN lines, each operation's at most once per 30 s.
func TestWorkerStoreErrorsLogged(t *testing.T) {
	var buf bytes.Buffer
	sink := workerLogSink(slog.New(slog.NewTextHandler(&buf, nil)))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		sink.Emit(event.Event{T: t0.Add(time.Duration(i) * 10 * time.Second), Event: event.StoreError, Component: "worker:discovery:0",
			Reason: "claim: attempt to write a readonly database"})
	}
	sink.Emit(event.Event{T: t0.Add(31 * time.Second), Event: event.StoreError, Component: "worker:discovery:0",
		Reason: "claim: attempt to write a readonly database"})
	got := buf.String()
	if n := strings.Count(got, "level=WARN msg=store_error"); n != 2 {
		t.Fatalf("want 2 WARN store_error lines (the first, then one 30 s later), got %d:\n%s", n, got)
	}
	if !strings.Contains(got, "suppressed=2") || !strings.Contains(got, "readonly database") {
		t.Errorf("log:\n%s", got)
	}
}
