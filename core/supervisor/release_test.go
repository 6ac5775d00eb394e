package supervisor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
)

// lostReleaseAnswers is a store whose ReleaseWorker makes its write and
// then, lose times, answers with a fault, as a timeout after the commit
// does.
type lostReleaseAnswers struct {
	*memstore.Store
	lose   int
	deaths []store.Death // the death named by each call
}

func (l *lostReleaseAnswers) ReleaseWorker(ctx context.Context, workerID string, death store.Death, crash *store.Crash) ([]store.Released, error) {
	l.deaths = append(l.deaths, death)
	rel, err := l.Store.ReleaseWorker(ctx, workerID, death, crash)
	if err == nil && l.lose > 0 {
		l.lose--
		return nil, errors.New("release worker: context deadline exceeded")
	}
	return rel, err
}

// TestLostReleaseAnswerStillReportsQuarantine: the release of a dead
// worker's claims is made but its answer lost, twice. The retries find no
// claim left; the store's receipt answers them with what the first call
// released and quarantined, so the `release` and `quarantined` events come,
// once, when a retry is answered — and the file's crash is counted once.
func TestLostReleaseAnswerStillReportsQuarantine(t *testing.T) {
	ms := memstore.New(1)
	ls := &lostReleaseAnswers{Store: ms}
	r := newRigThrough(t, ms, ls, 1, nil)
	r.addFiles("f1", "f2")
	r.sup.Start(r.ctx, t0)
	wid := r.sup.WorkerID(w0)

	r.claim("f1", wid, at(time.Second)) // a first crash on f1, answered
	r.exit(w0, -1, at(2*time.Second))
	r.sup.Tick(r.ctx, at(3*time.Second)) // respawned after 1 s
	if r.gen(w0) != 2 {
		t.Fatalf("not respawned: gen %d", r.gen(w0))
	}
	r.ev.events = nil

	r.claim("f1", wid, at(4*time.Second))
	r.claim("f2", wid, at(4*time.Second))
	ls.lose = 2
	r.exit(w0, 1, at(5*time.Second))
	if _, held := ms.ClaimOf("f1"); held {
		t.Fatal("claim not released in the store")
	}
	if f, _ := ms.Peek("f1"); f.CrashCount != 2 || !f.Failed || f.LastError != "crashed a worker (quarantine_after 2 reached)" {
		t.Fatalf("f1 not quarantined in the store: %+v", f)
	}
	if n := len(r.ev.of(event.Release, w0)) + len(r.ev.of(event.Quarantined, "")); n != 0 {
		t.Fatalf("events before any answer: %d", n)
	}
	r.sup.Tick(r.ctx, at(6*time.Second)) // the retry's answer is lost too
	if !r.info(w0).ReleasePending {
		t.Fatal("release not pending after a lost answer")
	}
	r.sup.Tick(r.ctx, at(7*time.Second))
	if r.info(w0).ReleasePending {
		t.Fatal("release still pending after an answer")
	}
	rel := r.ev.of(event.Release, w0)
	if len(rel) != 2 || rel[0].File != "f1" || rel[0].Count != 2 || rel[1].File != "f2" || rel[1].Count != 1 {
		t.Fatalf("release events = %+v", rel)
	}
	q := r.ev.of(event.Quarantined, "")
	if len(q) != 1 || q[0].File != "f1" || q[0].Count != 2 || q[0].Reason != "crashed a worker (quarantine_after 2 reached)" {
		t.Fatalf("quarantined events = %+v", q)
	}
	if f, _ := ms.Peek("f2"); f.CrashCount != 1 {
		t.Fatalf("f2's crash counted again by a retry: %+v", f)
	}
	for i, d := range ls.deaths[1:] {
		if d != ls.deaths[1] || d.ID == "" {
			t.Fatalf("call %d named death %+v, the first of this death %+v", i+2, d, ls.deaths[1])
		}
	}
	if ls.deaths[0] == ls.deaths[1] {
		t.Fatalf("two deaths named alike: %+v", ls.deaths[0])
	}

	// Respawned; a later death holding nothing reports nothing, though the
	// last receipt of the worker id is still in the store.
	r.sup.Tick(r.ctx, at(10*time.Second))
	if r.gen(w0) != 3 {
		t.Fatalf("not respawned after the release: gen %d", r.gen(w0))
	}
	r.ev.events = nil
	r.exit(w0, 1, at(11*time.Second))
	if n := len(r.ev.of(event.Release, w0)) + len(r.ev.of(event.Quarantined, "")); n != 0 {
		t.Fatalf("a death without claims reported the earlier one's: %+v", r.ev.events)
	}
}

// TestReleaseReceiptNotTakenByAnotherMain: a main process started again
// with the same (configured) instance id numbers its generations from 1
// again; its workers' deaths are not taken for the earlier main's, whose
// receipts are in the store.
func TestReleaseReceiptNotTakenByAnotherMain(t *testing.T) {
	ms := memstore.New(1)
	r := newRigOn(t, ms, 1, nil)
	r.addFiles("f1")
	r.sup.Start(r.ctx, t0)
	r.claim("f1", r.sup.WorkerID(w0), at(time.Second))
	r.exit(w0, -1, at(2*time.Second)) // gen 1, receipt of f1

	again := newRigOn(t, ms, 1, nil)
	again.sup.Start(again.ctx, at(time.Minute))
	again.exit(w0, -1, at(time.Minute+time.Second)) // gen 1 again, holding nothing
	if rel := again.ev.of(event.Release, w0); len(rel) != 0 {
		t.Fatalf("the earlier main's release reported again: %+v", rel)
	}
}

// The quarantine reason keeps the design's words first and names the limit
// the file reached.
func TestQuarantineReasonCounts(t *testing.T) {
	for n, want := range map[int]string{1: "crashed a worker (quarantine_after 1 reached)", 2: "crashed a worker (quarantine_after 2 reached)", 3: "crashed a worker (quarantine_after 3 reached)"} {
		if got := supervisor.QuarantineReason(n); got != want {
			t.Errorf("QuarantineReason(%d) = %q, want %q", n, got, want)
		}
	}
}
