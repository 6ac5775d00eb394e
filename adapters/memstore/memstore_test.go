package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
)

var (
	t0  = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx = context.Background()
)

func at(d time.Duration) time.Time { return t0.Add(d) }

func file(key string) store.File {
	return store.File{Key: key, Path: "/m/" + key, Size: 100, MtimeMs: 1, NeedsTagging: true, IsValid: true}
}

func newStore(t *testing.T, keys ...string) *memstore.Store {
	t.Helper()
	st := memstore.New(1)
	var files []store.File
	for _, k := range keys {
		files = append(files, file(k))
	}
	if _, err := st.UpsertFiles(ctx, files); err != nil {
		t.Fatal(err)
	}
	return st
}

func claimOf(key, worker string, now time.Time, ttl time.Duration) store.Claim {
	return store.Claim{FileKey: key, WorkerID: worker, ClaimedAt: now, LeaseUntil: now.Add(ttl)}
}

func mustClaim(t *testing.T, st *memstore.Store, key, worker string, now time.Time, ttl time.Duration) {
	t.Helper()
	if _, err := st.Claim(ctx, claimOf(key, worker, now, ttl)); err != nil {
		t.Fatalf("Claim(%s, %s): %v", key, worker, err)
	}
}

func keys(files []store.File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Key)
	}
	return out
}

func discover(t *testing.T, st *memstore.Store, now time.Time, after string, limit int) []string {
	t.Helper()
	fs, err := st.Discover(ctx, now, after, limit)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return keys(fs)
}

func TestClaimUnique(t *testing.T) {
	st := newStore(t, "a")
	mustClaim(t, st, "a", "i/w0", t0, 30*time.Second)
	_, err := st.Claim(ctx, claimOf("a", "i/w1", t0, 30*time.Second))
	if !errors.Is(err, store.ErrConflict) || store.IsFault(err) {
		t.Fatalf("second claim = %v, want ErrConflict", err)
	}
	// Even the same worker cannot claim twice.
	if _, err := st.Claim(ctx, claimOf("a", "i/w0", t0, 30*time.Second)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("repeat claim = %v", err)
	}
	if c, _ := st.ClaimOf("a"); c.WorkerID != "i/w0" {
		t.Fatalf("claim overwritten: %+v", c)
	}
	if c := st.Claims(); len(c) != 1 || c[0].Key() != "claim_a" {
		t.Fatalf("claims = %+v", c)
	}
}

func TestClaimChecksEligibility(t *testing.T) {
	st := memstore.New(1)
	files := []store.File{
		file("ok"),
		{Key: "tagged", Size: 1, NeedsTagging: false, IsValid: true, Tagged: true},
		{Key: "invalid", Size: 1, NeedsTagging: true, IsValid: false},
		{Key: "failed", Size: 1, NeedsTagging: true, IsValid: true, Failed: true},
		{Key: "retry", Size: 1, NeedsTagging: true, IsValid: true, NextRetryAt: at(time.Minute)},
		{Key: "skip", Size: 1, NeedsTagging: true, IsValid: true, SkipUntil: at(time.Minute)},
	}
	if _, err := st.UpsertFiles(ctx, files); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tagged", "invalid", "failed", "retry", "skip", "missing"} {
		_, err := st.Claim(ctx, claimOf(k, "i/w0", t0, 30*time.Second))
		if !errors.Is(err, store.ErrNotEligible) || store.IsFault(err) {
			t.Errorf("Claim(%s) = %v, want ErrNotEligible", k, err)
		}
	}
	mustClaim(t, st, "ok", "i/w0", t0, 30*time.Second)
	// Retry time reached: eligible (next_retry_at <= now).
	mustClaim(t, st, "retry", "i/w0", at(time.Minute), 30*time.Second)
	if n := len(st.Claims()); n != 2 {
		t.Fatalf("claims = %d, want 2", n)
	}
}

func TestCompleteOnlyByHolder(t *testing.T) {
	st := newStore(t, "a", "b")
	mustClaim(t, st, "a", "i/w0", t0, 30*time.Second)
	comp := store.Completion{Tags: map[string]string{"k": "v"}, Version: "v9", At: at(5 * time.Second)}
	for _, ref := range []store.Ref{{FileKey: "a", WorkerID: "i/w1"}, {FileKey: "b", WorkerID: "i/w0"}, {FileKey: "zz", WorkerID: "i/w0"}} {
		if err := st.Complete(ctx, ref, comp); !errors.Is(err, store.ErrClaimLost) {
			t.Fatalf("Complete(%+v) = %v, want ErrClaimLost", ref, err)
		}
	}
	if f, _ := st.Peek("a"); f.Tagged || st.TagWrites["a"] != 0 {
		t.Fatalf("non-holder changed the file: %+v", f)
	}
	if _, ok := st.ClaimOf("a"); !ok {
		t.Fatal("non-holder removed the claim")
	}
	tags := map[string]string{"k": "v"}
	comp.Tags = tags
	if err := st.Complete(ctx, store.Ref{FileKey: "a", WorkerID: "i/w0"}, comp); err != nil {
		t.Fatal(err)
	}
	tags["k"] = "mutated"
	f, _ := st.Peek("a")
	if !f.Tagged || f.NeedsTagging || f.TaggedVersion != "v9" || !f.LastTaggedAt.Equal(at(5*time.Second)) {
		t.Fatalf("completed file = %+v", f)
	}
	if st.Tags("a")["k"] != "v" || st.TagWrites["a"] != 1 {
		t.Fatalf("tags %v writes %d", st.Tags("a"), st.TagWrites["a"])
	}
	if _, ok := st.ClaimOf("a"); ok {
		t.Fatal("claim kept after completion")
	}
	if err := st.Complete(ctx, store.Ref{FileKey: "a", WorkerID: "i/w0"}, comp); !errors.Is(err, store.ErrClaimLost) {
		t.Fatalf("second Complete = %v", err)
	}
	if st.TagWrites["a"] != 1 {
		t.Fatal("tagged twice")
	}
	if got := discover(t, st, at(time.Minute), "", 10); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("discover after completion = %v", got)
	}
}

func TestReleaseOnlyByHolder(t *testing.T) {
	st := newStore(t, "a")
	mustClaim(t, st, "a", "i/w0", t0, 30*time.Second)
	upd := &store.FileUpdate{Attempts: 2, NextRetryAt: at(time.Hour), LastError: "transient: x", Checkpoint: "decode"}
	if err := st.Release(ctx, store.Ref{FileKey: "a", WorkerID: "i/w1"}, upd); !errors.Is(err, store.ErrClaimLost) {
		t.Fatalf("Release by non-holder = %v", err)
	}
	if f, _ := st.Peek("a"); f.Attempts != 0 {
		t.Fatalf("non-holder's update applied: %+v", f)
	}
	if _, ok := st.ClaimOf("a"); !ok {
		t.Fatal("non-holder released the claim")
	}
	if err := st.Release(ctx, store.Ref{FileKey: "a", WorkerID: "i/w0"}, upd); err != nil {
		t.Fatal(err)
	}
	f, _ := st.Peek("a")
	if f.Attempts != 2 || !f.NextRetryAt.Equal(at(time.Hour)) || f.LastError != "transient: x" || f.Checkpoint != "decode" || f.Failed {
		t.Fatalf("released file = %+v", f)
	}
	if _, ok := st.ClaimOf("a"); ok {
		t.Fatal("claim kept")
	}
	if got := discover(t, st, at(time.Hour-time.Second), "", 10); len(got) != 0 {
		t.Fatalf("retry-pending file discovered: %v", got)
	}
	if got := discover(t, st, at(time.Hour), "", 10); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("file not rediscovered at next_retry_at: %v", got)
	}
	// Release without update leaves the file as it was.
	mustClaim(t, st, "a", "i/w0", at(time.Hour), 30*time.Second)
	if err := st.Release(ctx, store.Ref{FileKey: "a", WorkerID: "i/w0"}, nil); err != nil {
		t.Fatal(err)
	}
	if g, _ := st.Peek("a"); g != f {
		t.Fatalf("nil release changed the file: %+v -> %+v", f, g)
	}
	// Release with Failed removes the file from the work queue.
	mustClaim(t, st, "a", "i/w0", at(time.Hour), 30*time.Second)
	if err := st.Release(ctx, store.Ref{FileKey: "a", WorkerID: "i/w0"}, &store.FileUpdate{Failed: true, LastError: "permanent"}); err != nil {
		t.Fatal(err)
	}
	if got := discover(t, st, at(2*time.Hour), "", 10); len(got) != 0 {
		t.Fatalf("failed file discovered: %v", got)
	}
}

func TestReleaseWorkerCountsCrashes(t *testing.T) {
	st := newStore(t, "a", "b", "c")
	crash := &store.Crash{QuarantineAt: 3, Reason: "crashed a worker"}
	mustClaim(t, st, "b", "i/w0", t0, 30*time.Second)
	mustClaim(t, st, "a", "i/w0", t0, 30*time.Second)
	mustClaim(t, st, "c", "i/w1", t0, 30*time.Second)
	rel, err := st.ReleaseWorker(ctx, "i/w0", store.Death{}, crash)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Released{{FileKey: "a", CrashCount: 1}, {FileKey: "b", CrashCount: 1}}
	if !slices.Equal(rel, want) {
		t.Fatalf("released = %+v, want %+v", rel, want)
	}
	if _, ok := st.ClaimOf("c"); !ok {
		t.Fatal("another worker's claim released")
	}
	mustClaim(t, st, "a", "i/w0", t0, 30*time.Second)
	rel, _ = st.ReleaseWorker(ctx, "i/w0", store.Death{}, crash)
	if len(rel) != 1 || rel[0].CrashCount != 2 {
		t.Fatalf("second crash = %+v", rel)
	}
	// Without a crash: released, count unchanged.
	mustClaim(t, st, "a", "i/w0", t0, 30*time.Second)
	rel, _ = st.ReleaseWorker(ctx, "i/w0", store.Death{}, nil)
	if len(rel) != 1 || rel[0].CrashCount != 2 {
		t.Fatalf("release without counting = %+v", rel)
	}
	if f, _ := st.Peek("a"); f.CrashCount != 2 || f.Failed {
		t.Fatalf("file = %+v", f)
	}
	// Nothing held: empty, no error.
	if rel, err := st.ReleaseWorker(ctx, "i/none", store.Death{}, crash); err != nil || len(rel) != 0 {
		t.Fatalf("ReleaseWorker of an idle worker = %+v %v", rel, err)
	}
	if err := st.Quarantine(ctx, "a", "crashed a worker"); err != nil {
		t.Fatal(err)
	}
	if f, _ := st.Peek("a"); !f.Failed || f.LastError != "crashed a worker" {
		t.Fatalf("quarantined = %+v", f)
	}
	if err := st.Quarantine(ctx, "zz", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Quarantine of a missing file = %v", err)
	}
}

func TestCleanupClaims(t *testing.T) {
	st := newStore(t, "expired", "live", "renewed", "quarantined", "invalid", "edge")
	mustClaim(t, st, "expired", "i/w0", t0, 10*time.Second)
	mustClaim(t, st, "live", "i/w1", t0, time.Minute)
	mustClaim(t, st, "renewed", "i/w2", t0, 10*time.Second)
	mustClaim(t, st, "quarantined", "i/w1", t0, time.Minute)
	mustClaim(t, st, "invalid", "i/w1", t0, time.Minute)
	mustClaim(t, st, "edge", "i/w3", t0, 20*time.Second)
	if n, err := st.RenewLeases(ctx, []string{"i/w2"}, at(40*time.Second)); err != nil || n != 1 {
		t.Fatalf("RenewLeases = %d %v", n, err)
	}
	if err := st.Quarantine(ctx, "quarantined", "crashed a worker"); err != nil {
		t.Fatal(err)
	}
	// The file changed on disk and is no longer a valid audio file.
	inv := file("invalid")
	inv.Size, inv.IsValid = 5, false
	if _, err := st.UpsertFiles(ctx, []store.File{inv}); err != nil {
		t.Fatal(err)
	}
	removed, err := st.CleanupClaims(ctx, at(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range removed {
		got = append(got, c.FileKey)
	}
	if want := []string{"expired", "invalid", "quarantined"}; !slices.Equal(got, want) {
		t.Fatalf("removed %v, want %v", got, want)
	}
	if removed[0].WorkerID != "i/w0" {
		t.Fatalf("removed claim = %+v", removed[0])
	}
	var left []string
	for _, c := range st.Claims() {
		left = append(left, c.FileKey)
	}
	// "edge": lease_until == now is not yet expired.
	if want := []string{"edge", "live", "renewed"}; !slices.Equal(left, want) {
		t.Fatalf("kept %v, want %v", left, want)
	}
	if got := discover(t, st, at(20*time.Second), "", 10); !slices.Equal(got, []string{"expired"}) {
		t.Fatalf("discover after cleanup = %v", got)
	}
	removed, _ = st.CleanupClaims(ctx, at(20*time.Second+time.Millisecond))
	if len(removed) != 1 || removed[0].FileKey != "edge" {
		t.Fatalf("second cleanup = %+v", removed)
	}
}

func TestRenewLeases(t *testing.T) {
	st := newStore(t, "a", "b", "c")
	mustClaim(t, st, "a", "i/w0", t0, 30*time.Second)
	mustClaim(t, st, "b", "i/w1", t0, 30*time.Second)
	mustClaim(t, st, "c", "i/w2", t0, 30*time.Second)
	n, err := st.RenewLeases(ctx, []string{"i/w0", "i/w1"}, at(40*time.Second))
	if err != nil || n != 2 {
		t.Fatalf("RenewLeases = %d %v", n, err)
	}
	for k, want := range map[string]time.Duration{"a": 40 * time.Second, "b": 40 * time.Second, "c": 30 * time.Second} {
		if c, _ := st.ClaimOf(k); !c.LeaseUntil.Equal(at(want)) {
			t.Fatalf("lease of %s = %s, want %s", k, c.LeaseUntil.Sub(t0), want)
		}
	}
	// Never shortens a lease.
	if n, _ := st.RenewLeases(ctx, []string{"i/w0"}, at(35*time.Second)); n != 0 {
		t.Fatalf("shortening renewal counted %d", n)
	}
	if c, _ := st.ClaimOf("a"); !c.LeaseUntil.Equal(at(40 * time.Second)) {
		t.Fatalf("lease shortened to %s", c.LeaseUntil.Sub(t0))
	}
}

func TestDiscoverOrderAndExclusions(t *testing.T) {
	st := memstore.New(1)
	// Inserted out of order, in two batches.
	batch1 := []store.File{file("f5"), file("f1"), file("f3")}
	batch2 := []store.File{file("f4"), file("f0"), file("f2"), file("f6"), file("f7")}
	if _, err := st.UpsertFiles(ctx, batch1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpsertFiles(ctx, batch2); err != nil {
		t.Fatal(err)
	}
	if got := discover(t, st, t0, "", 100); !slices.Equal(got, []string{"f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7"}) {
		t.Fatalf("discover = %v", got)
	}
	mustClaim(t, st, "f1", "i/w0", t0, time.Minute) // claimed
	if err := st.Quarantine(ctx, "f2", "x"); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, st, "f3", "i/w0", t0, time.Minute) // then retry pending
	if err := st.Release(ctx, store.Ref{FileKey: "f3", WorkerID: "i/w0"}, &store.FileUpdate{Attempts: 1, NextRetryAt: at(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, st, "f4", "i/w0", t0, time.Minute) // then tagged
	if err := st.Complete(ctx, store.Ref{FileKey: "f4", WorkerID: "i/w0"}, store.Completion{Version: "v", At: t0}); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, st, "f5", "i/w0", t0, time.Minute) // then skipped
	if err := st.Release(ctx, store.Ref{FileKey: "f5", WorkerID: "i/w0"}, &store.FileUpdate{SkipUntil: at(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if got := discover(t, st, t0, "", 100); !slices.Equal(got, []string{"f0", "f6", "f7"}) {
		t.Fatalf("discover = %v, want [f0 f6 f7]", got)
	}
	if got := discover(t, st, t0, "", 2); !slices.Equal(got, []string{"f0", "f6"}) {
		t.Fatalf("discover limit 2 = %v", got)
	}
	if got := discover(t, st, t0, "f0", 2); !slices.Equal(got, []string{"f6", "f7"}) {
		t.Fatalf("discover after f0 = %v", got)
	}
	if got := discover(t, st, t0, "f65", 10); !slices.Equal(got, []string{"f7"}) {
		t.Fatalf("discover after f65 = %v", got)
	}
	if got := discover(t, st, at(time.Minute), "", 100); !slices.Equal(got, []string{"f0", "f3", "f5", "f6", "f7"}) {
		t.Fatalf("discover once retry/skip times passed = %v", got)
	}
	c, err := st.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.Counts{Total: 8, Tagged: 1, Failed: 1, Pending: 6, Claimed: 1}); c != want {
		t.Fatalf("counts = %+v, want %+v", c, want)
	}
}

func TestUpsertChangedFileNeedsTaggingAgain(t *testing.T) {
	st := newStore(t, "a", "b")
	mustClaim(t, st, "a", "i/w0", t0, time.Minute)
	if err := st.Complete(ctx, store.Ref{FileKey: "a", WorkerID: "i/w0"}, store.Completion{Version: "v1", At: t0}); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, st, "b", "i/w0", t0, time.Minute)
	if err := st.Release(ctx, store.Ref{FileKey: "b", WorkerID: "i/w0"}, &store.FileUpdate{Failed: true, Attempts: 5, LastError: "x"}); err != nil {
		t.Fatal(err)
	}
	// Unchanged: tagging state kept.
	if _, err := st.UpsertFiles(ctx, []store.File{file("a"), file("b")}); err != nil {
		t.Fatal(err)
	}
	if f, _ := st.Peek("a"); !f.Tagged || f.NeedsTagging {
		t.Fatalf("unchanged file lost its tagging state: %+v", f)
	}
	if got := discover(t, st, at(time.Second), "", 10); len(got) != 0 {
		t.Fatalf("discover = %v", got)
	}
	// Changed size or mtime: needs tagging again, failure cleared.
	a2, b2 := file("a"), file("b")
	a2.MtimeMs, b2.Size = 2, 999
	if _, err := st.UpsertFiles(ctx, []store.File{a2, b2}); err != nil {
		t.Fatal(err)
	}
	fa, _ := st.Peek("a")
	if fa.Tagged || !fa.NeedsTagging || fa.MtimeMs != 2 {
		t.Fatalf("changed file = %+v", fa)
	}
	fb, _ := st.Peek("b")
	if fb.Failed || fb.Attempts != 0 || fb.LastError != "" || fb.Size != 999 {
		t.Fatalf("changed failed file = %+v", fb)
	}
	if got := discover(t, st, at(time.Second), "", 10); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("discover after change = %v", got)
	}
}

func TestUpsertDuplicateKeysInOneBatch(t *testing.T) {
	st := memstore.New(1)
	if _, err := st.UpsertFiles(ctx, []store.File{file("a"), file("a")}); err != nil {
		return // rejecting the batch is fine too
	}
	if n := len(st.Files()); n != 1 {
		t.Fatalf("files = %d, want 1 (keys are unique)", n)
	}
	if c, _ := st.Counts(ctx); c.Total != 1 {
		t.Fatalf("counts = %+v", c)
	}
	if got := discover(t, st, t0, "", 10); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("discover = %v", got)
	}
}

func TestUpsertIsAtomic(t *testing.T) {
	st := newStore(t, "a")
	changed := file("a")
	changed.Size = 7
	_, err := st.UpsertFiles(ctx, []store.File{changed, {Key: ""}})
	if err == nil {
		t.Fatal("empty key accepted")
	}
	if f, _ := st.Peek("a"); f.Size != 100 {
		t.Fatalf("rejected batch partly applied: %+v", f)
	}
}

func TestFaults(t *testing.T) {
	st := newStore(t, "a")
	ops := []struct {
		name string
		do   func() error
	}{
		{"Discover", func() error { _, err := st.Discover(ctx, t0, "", 1); return err }},
		{"Claim", func() error { _, err := st.Claim(ctx, claimOf("a", "i/w0", t0, time.Minute)); return err }},
		{"Complete", func() error { return st.Complete(ctx, store.Ref{FileKey: "a", WorkerID: "i/w0"}, store.Completion{}) }},
		{"Release", func() error { return st.Release(ctx, store.Ref{FileKey: "a", WorkerID: "i/w0"}, nil) }},
		{"ReleaseWorker", func() error { _, err := st.ReleaseWorker(ctx, "i/w0", store.Death{}, nil); return err }},
		{"Quarantine", func() error { return st.Quarantine(ctx, "a", "x") }},
		{"RenewLeases", func() error { _, err := st.RenewLeases(ctx, []string{"i/w0"}, t0); return err }},
		{"CleanupClaims", func() error { _, err := st.CleanupClaims(ctx, t0); return err }},
		{"File", func() error { _, err := st.File(ctx, "a"); return err }},
		{"Counts", func() error { _, err := st.Counts(ctx); return err }},
		{"GetMeta", func() error { _, _, err := st.GetMeta(ctx, "k"); return err }},
		{"SetMeta", func() error { return st.SetMeta(ctx, "k", "v") }},
		{"LoadRestart", func() error { _, _, err := st.LoadRestart(ctx, "k"); return err }},
		{"SaveRestart", func() error { return st.SaveRestart(ctx, "k", restart.State{}) }},
		{"AppendHistory", func() error { return st.AppendHistory(ctx, []store.HistoryRow{{Component: "c"}}) }},
		{"UpsertFiles", func() error { _, err := st.UpsertFiles(ctx, []store.File{file("z")}); return err }},
	}
	for _, tc := range []struct {
		fault memstore.Fault
		want  error
	}{{memstore.Down, memstore.ErrDown}, {memstore.Slow, memstore.ErrSlow}} {
		st.SetFault(tc.fault)
		if st.CurrentFault() != tc.fault {
			t.Fatalf("CurrentFault = %v", st.CurrentFault())
		}
		faults := st.Faults
		for _, op := range ops {
			if err := op.do(); !errors.Is(err, tc.want) || !store.IsFault(err) {
				t.Errorf("%v: %s = %v, want %v", tc.fault, op.name, err, tc.want)
			}
		}
		if st.Faults-faults != int64(len(ops)) {
			t.Fatalf("Faults counted %d, want %d", st.Faults-faults, len(ops))
		}
	}
	st.SetFault(memstore.Healthy)
	// Nothing was changed by the failed operations.
	if c := st.Claims(); len(c) != 0 {
		t.Fatalf("claims = %+v", c)
	}
	if f, _ := st.Peek("a"); f.Failed || f.CrashCount != 0 {
		t.Fatalf("file changed by failed ops: %+v", f)
	}
	if _, ok := st.Peek("z"); ok || len(st.History()) != 0 {
		t.Fatal("failed writes applied")
	}
	if _, ok := st.MetaValue("k"); ok {
		t.Fatal("failed SetMeta applied")
	}
	for _, op := range ops[:1] {
		if err := op.do(); err != nil {
			t.Fatalf("%s after recovery: %v", op.name, err)
		}
	}
}

func TestErrorRate(t *testing.T) {
	run := func(seed uint64) []bool {
		st := memstore.New(seed)
		st.SetErrorRate(0.5)
		var out []bool
		for i := 0; i < 200; i++ {
			err := st.SetMeta(ctx, "k", fmt.Sprint(i))
			if err != nil && !errors.Is(err, memstore.ErrFlap) {
				t.Fatalf("unexpected error %v", err)
			}
			out = append(out, err != nil)
		}
		if st.Ops != 200 {
			t.Fatalf("Ops = %d", st.Ops)
		}
		n := 0
		for _, f := range out {
			if f {
				n++
			}
		}
		if int64(n) != st.Faults || n < 60 || n > 140 {
			t.Fatalf("%d of 200 failed (Faults %d), want about half", n, st.Faults)
		}
		return out
	}
	if a, b := run(7), run(7); !slices.Equal(a, b) {
		t.Fatal("same seed, different fault pattern")
	}
	if a, b := run(7), run(8); slices.Equal(a, b) {
		t.Fatal("different seeds, same fault pattern")
	}
	st := memstore.New(1)
	st.SetErrorRate(1)
	if err := st.SetMeta(ctx, "k", "v"); !errors.Is(err, memstore.ErrFlap) {
		t.Fatalf("rate 1: %v", err)
	}
	st.SetErrorRate(0)
	if err := st.SetMeta(ctx, "k", "v"); err != nil {
		t.Fatalf("rate 0: %v", err)
	}
}

func TestInspectionBypassesFaults(t *testing.T) {
	st := newStore(t, "a")
	if err := st.SetMeta(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	st.SetFault(memstore.Down)
	if _, ok := st.Peek("a"); !ok {
		t.Fatal("Peek failed while down")
	}
	if v, ok := st.MetaValue("k"); !ok || v != "v" {
		t.Fatal("MetaValue failed while down")
	}
	if len(st.Files()) != 1 {
		t.Fatal("Files failed while down")
	}
}

func TestRestartStateAndMetaAndHistory(t *testing.T) {
	st := memstore.New(1)
	if _, ok, err := st.LoadRestart(ctx, "n/w0"); ok || err != nil {
		t.Fatalf("LoadRestart of nothing = %v %v", ok, err)
	}
	s := restart.State{Component: "n/w0", RestartCount: 3, Consecutive: 2, Recent: []int64{1, 2}, FailureReason: "x"}
	if err := st.SaveRestart(ctx, "n/w0", s); err != nil {
		t.Fatal(err)
	}
	s.Recent[0] = 99 // the caller's slice is not aliased
	got, ok, err := st.LoadRestart(ctx, "n/w0")
	if err != nil || !ok || got.RestartCount != 3 || !slices.Equal(got.Recent, []int64{1, 2}) || got.FailureReason != "x" {
		t.Fatalf("LoadRestart = %+v %v %v", got, ok, err)
	}
	got.Recent[1] = 77
	if again, _, _ := st.LoadRestart(ctx, "n/w0"); again.Recent[1] != 2 {
		t.Fatal("loaded state aliases the stored one")
	}
	if _, ok, _ := st.GetMeta(ctx, "nope"); ok {
		t.Fatal("missing meta present")
	}
	if err := st.SetMeta(ctx, store.MetaWorkerEnabled, "false"); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := st.GetMeta(ctx, store.MetaWorkerEnabled); !ok || v != "false" {
		t.Fatalf("GetMeta = %q %v", v, ok)
	}
	rows := []store.HistoryRow{{At: t0, Instance: "i", Component: "c", Status: "healthy"}}
	if err := st.AppendHistory(ctx, rows); err != nil {
		t.Fatal(err)
	}
	rows[0].Status = "mutated"
	if err := st.AppendHistory(ctx, []store.HistoryRow{{At: at(time.Second), Status: "pending"}}); err != nil {
		t.Fatal(err)
	}
	h := st.History()
	if len(h) != 2 || h[0].Status != "healthy" || h[1].Status != "pending" {
		t.Fatalf("history = %+v", h)
	}
	if _, err := st.File(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("File of missing = %v", err)
	}
}
