package storehealth

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// A semantic answer to a write is the store taking it (no fault, no
// count); a failed read is counted but says nothing of the writes; a run
// of failed writes keeps the first one's time and the last one's op and
// error.
func TestWatchClassifies(t *testing.T) {
	var w Watch
	full, locked := errors.New("database or disk is full (13)"), errors.New("database is locked")
	w.Note("renew_leases", true, Fault, full, t0)
	w.Note("get_meta", false, Fault, locked, t0.Add(time.Second))
	w.Note("swap_meta", true, Fault, locked, t0.Add(time.Second))
	h := w.Health()
	if f := h.WritesFailing; f == nil || !f.Since.Equal(t0) || f.Op != "swap_meta" || f.Err != locked.Error() {
		t.Fatalf("after two failed writes: %+v, want since the first, the last's op and error", f)
	}
	if h.Errors["renew_leases"] != 1 || h.Errors["get_meta"] != 1 || h.Errors["swap_meta"] != 1 || len(h.Errors) != 3 {
		t.Fatalf("errors %v", h.Errors)
	}
	w.Note("claim", true, Answered, store.ErrConflict, t0.Add(2*time.Second))
	if h := w.Health(); h.WritesFailing != nil || h.Errors["claim"] != 0 || h.Errors["swap_meta"] != 1 {
		t.Fatalf("after a lost race: %+v", h)
	}
	w.Note("set_meta", true, Fault, locked, t0.Add(3*time.Second))
	if f := w.Health().WritesFailing; f == nil || !f.Since.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("a new run of failures: %+v, want since its own first write", f)
	}
}

// Reads neither set nor clear WritesFailing: the SQLite write lock held by
// another process, or a full disk, lets reads through.
func TestReadsLeaveWritesAlone(t *testing.T) {
	var w Watch
	w.Note("counts", false, Fault, errors.New("database is locked"), t0)
	if h := w.Health(); h.WritesFailing != nil || h.Errors["counts"] != 1 {
		t.Fatalf("a failed read: %+v, want counted, no failing writes", h)
	}
	w.Note("release", true, Fault, errors.New("database is locked"), t0)
	w.Note("get_meta", false, Answered, nil, t0.Add(time.Second))
	w.Note("file", false, Answered, store.ErrNotFound, t0.Add(time.Second))
	if f := w.Health().WritesFailing; f == nil || f.Op != "release" {
		t.Fatalf("reads answered cleared failing writes: %+v", f)
	}
}

// A call whose caller gave up is not noted: neither counted, nor setting,
// nor clearing WritesFailing.
func TestGaveUpIsNotNoted(t *testing.T) {
	var w Watch
	w.Note("set_meta", true, GaveUp, errors.New("context canceled"), t0)
	if h := w.Health(); h.WritesFailing != nil || len(h.Errors) != 0 {
		t.Fatalf("a caller that gave up noted: %+v", h)
	}
	w.Note("renew_leases", true, Fault, errors.New("database is locked"), t0)
	w.Note("set_meta", true, GaveUp, errors.New("context canceled"), t0.Add(time.Second))
	if h := w.Health(); h.WritesFailing == nil || h.WritesFailing.Op != "renew_leases" || len(h.Errors) != 1 {
		t.Fatalf("a caller that gave up changed a run of failures: %+v", h)
	}
}

// Health is a copy: later notes do not change one taken before, and a
// watch that saw nothing has an empty, non-nil Errors.
func TestHealthIsACopy(t *testing.T) {
	var w Watch
	if h := w.Health(); h.Errors == nil || len(h.Errors) != 0 || h.WritesFailing != nil {
		t.Fatalf("zero watch: %+v", h)
	}
	w.Note("release", true, Fault, errors.New("disk full"), t0)
	h := w.Health()
	w.Note("release", true, Fault, errors.New("locked"), t0.Add(time.Second))
	if h.Errors["release"] != 1 || h.WritesFailing.Err != "disk full" {
		t.Fatalf("an earlier Health changed by a later note: %+v %+v", h, h.WritesFailing)
	}
}

// A call that finds the database damaged sets Corrupt, read or write, and
// nothing clears it: a write the store takes afterwards (a page the
// damage missed) clears WritesFailing only. A call whose caller gave up
// sets nothing.
func TestCorruptionStays(t *testing.T) {
	var w Watch
	damaged := fmt.Errorf("counts: %w", store.ErrCorrupt)
	w.Note("counts", false, GaveUp, damaged, t0)
	if c := w.Health().Corrupt; c != nil {
		t.Fatalf("a call given up on set corrupt: %+v", c)
	}
	w.Note("renew_leases", true, Fault, errors.New("database is locked"), t0)
	if c := w.Health().Corrupt; c != nil {
		t.Fatalf("a lock set corrupt: %+v", c)
	}
	w.Note("counts", false, Fault, damaged, t0.Add(time.Second))
	w.Note("set_meta", true, Fault, fmt.Errorf("set meta: %w", store.ErrCorrupt), t0.Add(2*time.Second))
	w.Note("renew_leases", true, Answered, nil, t0.Add(3*time.Second))
	h := w.Health()
	if c := h.Corrupt; c == nil || !c.Since.Equal(t0.Add(time.Second)) || c.Op != "counts" || c.Err != damaged.Error() {
		t.Fatalf("corrupt = %+v, want the first damaged call's", c)
	}
	if h.WritesFailing != nil {
		t.Fatalf("writes failing after a write was taken: %+v", h.WritesFailing)
	}
}

// Damaged (the API's reads) sets Corrupt for a damaged database only, and
// counts nothing.
func TestDamagedSetsCorruptOnly(t *testing.T) {
	var w Watch
	w.Damaged("info", errors.New("database is locked"), t0)
	if h := w.Health(); h.Corrupt != nil {
		t.Fatalf("a lock set corrupt: %+v", h.Corrupt)
	}
	w.Damaged("info", fmt.Errorf("read: %w", store.ErrCorrupt), t0)
	if h := w.Health(); h.Corrupt == nil || h.Corrupt.Op != "info" || len(h.Errors) != 0 || h.WritesFailing != nil {
		t.Fatalf("health %+v, want corrupt and nothing else", h)
	}
}
