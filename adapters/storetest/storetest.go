package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
)

// Run runs the contract suite against the store. open must return a new,
// empty store on every call (it may register its own cleanup with t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(*h)
	}{
		{"UpsertInsertAndFile", testUpsertInsertAndFile},
		{"UpsertUnchangedKeepsState", testUpsertUnchangedKeepsState},
		{"UpsertChangedNeedsTaggingAgain", testUpsertChangedNeedsTaggingAgain},
		{"UpsertDuplicateKeysLastWins", testUpsertDuplicateKeysLastWins},
		{"UpsertEmptyKeyAppliesNothing", testUpsertEmptyKeyAppliesNothing},
		{"UpsertCounts", testUpsertCounts},
		{"DiscoverOrderLimitAfter", testDiscoverOrderLimitAfter},
		{"DiscoverExclusions", testDiscoverExclusions},
		{"ClaimUnique", testClaimUnique},
		{"ClaimChecksEligibility", testClaimChecksEligibility},
		{"ClaimReturnsCurrentFile", testClaimReturnsCurrentFile},
		{"Complete", testComplete},
		{"CompleteOnlyByHolder", testCompleteOnlyByHolder},
		{"CompleteRecordsRewrite", testCompleteRecordsRewrite},
		{"CompleteRefusedForChangedFile", testCompleteRefusedForChangedFile},
		{"NextStatSeq", testNextStatSeq},
		{"UpsertOlderStatKeepsRewrite", testUpsertOlderStatKeepsRewrite},
		{"UpsertOlderStatKeepsNewerScan", testUpsertOlderStatKeepsNewerScan},
		{"UpsertNumberAboveSequence", testUpsertNumberAboveSequence},
		{"UpsertCountsOlderStat", testUpsertCountsOlderStat},
		{"ReleaseWithoutUpdate", testReleaseWithoutUpdate},
		{"ReleaseWithUpdate", testReleaseWithUpdate},
		{"ReleaseOnlyByHolder", testReleaseOnlyByHolder},
		{"ReleaseRefusedForChangedFile", testReleaseRefusedForChangedFile},
		{"ReleaseWorker", testReleaseWorker},
		{"ReleaseWorkerRetry", testReleaseWorkerRetry},
		{"ReleaseWorkerReceiptsPruned", testReleaseWorkerReceiptsPruned},
		{"Quarantine", testQuarantine},
		{"RetryFailed", testRetryFailed},
		{"Retag", testRetag},
		{"RetagRechecks", testRetagRechecks},
		{"RenewLeases", testRenewLeases},
		{"KeepClaim", testKeepClaim},
		{"CleanupClaims", testCleanupClaims},
		{"ExpiredClaimHeldUntilCleanup", testExpiredClaimHeldUntilCleanup},
		{"Counts", testCounts},
		{"CountsFilesGone", testCountsFilesGone},
		{"Meta", testMeta},
		{"SwapMeta", testSwapMeta},
		{"RestartState", testRestartState},
		{"History", testHistory},
		{"PruneHistory", testPruneHistory},
		{"HistoryAppendIdempotent", testHistoryAppendIdempotent},
		{"ListFiles", testListFiles},
		{"MissingAndBack", testMissingAndBack},
		{"MissingAndChanged", testMissingAndChanged},
		{"ReleaseMissing", testReleaseMissing},
		{"ForgetMissing", testForgetMissing},
		{"PathBytes", testPathBytes},
		{"TrackVectors", testTrackVectors},
		{"TrackVectorReplaced", testTrackVectorReplaced},
		{"TrackVectorRefused", testTrackVectorRefused},
		{"TrackVectorForgotten", testTrackVectorForgotten},
		{"ListTags", testListTags},
		{"MarkRetag", testMarkRetag},
		{"RetagJob", testRetagJob},
		{"ReleaseReanalyze", testReleaseReanalyze},
		{"NeedsVector", testNeedsVector},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(&h{T: t, st: open(t)})
		})
	}
	t.Run("Browse", func(t *testing.T) { RunBrowse(t, open) })
}

// h bundles a test and its store with assertion helpers.
type h struct {
	*testing.T
	st store.Store
}

func (h *h) upsert(files ...store.File) {
	h.Helper()
	if _, err := h.st.UpsertFiles(h.Context(), files); err != nil {
		h.Fatalf("UpsertFiles: %v", err)
	}
}

// wantUpsert upserts files and checks what the store answers it did.
func (h *h) wantUpsert(want store.Upserted, files ...store.File) {
	h.Helper()
	got, err := h.st.UpsertFiles(h.Context(), files)
	if err != nil {
		h.Fatalf("UpsertFiles: %v", err)
	}
	if got != want {
		h.Fatalf("UpsertFiles(%s) = %+v, want %+v", strings.Join(Keys(files), " "), got, want)
	}
}

func (h *h) nextStatSeq() int64 {
	h.Helper()
	n, err := h.st.NextStatSeq(h.Context())
	if err != nil {
		h.Fatalf("NextStatSeq: %v", err)
	}
	return n
}

func (h *h) upsertKeys(keys ...string) {
	h.Helper()
	files := make([]store.File, 0, len(keys))
	for _, k := range keys {
		files = append(files, NewFile(k))
	}
	h.upsert(files...)
}

func (h *h) file(key string) store.File {
	h.Helper()
	f, err := h.st.File(h.Context(), key)
	if err != nil {
		h.Fatalf("File(%s): %v", key, err)
	}
	if f.Key != key {
		h.Fatalf("File(%s) returned key %q", key, f.Key)
	}
	return f
}

func (h *h) wantFile(key string, want store.File) {
	h.Helper()
	if d := DiffFile(h.file(key), want); d != "" {
		h.Fatalf("File(%s): %s", key, d)
	}
}

func (h *h) wantNoFile(key string) {
	h.Helper()
	_, err := h.st.File(h.Context(), key)
	wantSemantic(h.T, fmt.Sprintf("File(%s)", key), err, store.ErrNotFound)
}

func (h *h) discover(now time.Time, after string, limit int) []string {
	h.Helper()
	fs, err := h.st.Discover(h.Context(), now, after, limit)
	if err != nil {
		h.Fatalf("Discover(%s, %q, %d): %v", now.Sub(T0), after, limit, err)
	}
	return Keys(fs)
}

func (h *h) wantDiscover(now time.Time, after string, limit int, want ...string) {
	h.Helper()
	if got := h.discover(now, after, limit); !slices.Equal(got, want) {
		h.Fatalf("Discover(T0%+v, %q, %d) = %v, want %v", now.Sub(T0), after, limit, got, want)
	}
}

func claimOf(key, worker string, now time.Time, ttl time.Duration) store.Claim {
	return store.Claim{FileKey: key, WorkerID: worker, ClaimedAt: now, LeaseUntil: now.Add(ttl)}
}

func (h *h) claim(key, worker string, now time.Time, ttl time.Duration) store.File {
	h.Helper()
	f, err := h.st.Claim(h.Context(), claimOf(key, worker, now, ttl))
	if err != nil {
		h.Fatalf("Claim(%s, %s): %v", key, worker, err)
	}
	if f.Key != key {
		h.Fatalf("Claim(%s, %s) returned file %q", key, worker, f.Key)
	}
	return f
}

func (h *h) claimErr(key, worker string, now time.Time, want error) {
	h.Helper()
	_, err := h.st.Claim(h.Context(), claimOf(key, worker, now, time.Minute))
	wantSemantic(h.T, fmt.Sprintf("Claim(%s, %s)", key, worker), err, want)
}

func (h *h) complete(key, worker string, c store.Completion) {
	h.Helper()
	if err := h.st.Complete(h.Context(), store.Ref{FileKey: key, WorkerID: worker}, c); err != nil {
		h.Fatalf("Complete(%s, %s): %v", key, worker, err)
	}
}

func (h *h) release(key, worker string, upd *store.FileUpdate) {
	h.Helper()
	if err := h.st.Release(h.Context(), store.Ref{FileKey: key, WorkerID: worker}, upd); err != nil {
		h.Fatalf("Release(%s, %s): %v", key, worker, err)
	}
}

func (h *h) cleanup(now time.Time) []store.Claim {
	h.Helper()
	out, err := h.st.CleanupClaims(h.Context(), now)
	if err != nil {
		h.Fatalf("CleanupClaims: %v", err)
	}
	return out
}

func (h *h) counts() store.Counts {
	h.Helper()
	c, err := h.st.Counts(h.Context())
	if err != nil {
		h.Fatalf("Counts: %v", err)
	}
	return c
}

func (h *h) wantCounts(want store.Counts) {
	h.Helper()
	if got := h.counts(); got != want {
		h.Fatalf("Counts = %+v, want %+v", got, want)
	}
}

// wantHeld checks (without changing anything) that key is claimed: a new
// claim conflicts.
func (h *h) wantHeld(key string) {
	h.Helper()
	h.claimErr(key, "probe/held", T0, store.ErrConflict)
}

// wantSemantic checks that err is the semantic error want (errors.Is) and not
// reported as a fault.
func wantSemantic(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s = %v, want %v", what, err, want)
	}
	if store.IsFault(err) {
		t.Fatalf("%s: %v counted as a fault", what, err)
	}
}

func claimKeys(cs []store.Claim) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.FileKey)
	}
	return out
}

// --- UpsertFiles and File ---

func testUpsertInsertAndFile(h *h) {
	// A new file is stored as given, whatever its state.
	full := store.File{
		Key: "full", Path: "/music/a b/ü.mp3", Size: 123456, MtimeMs: 1_767_225_600_123,
		NeedsTagging: true, IsValid: true, Tagged: true, TaggedVersion: "abc123",
		LastTaggedAt: At(-time.Hour), Attempts: 3, NextRetryAt: At(time.Minute),
		SkipUntil: At(2 * time.Minute), CrashCount: 1, Failed: true,
		LastError: "transient: decoder said \"no\"", Checkpoint: "decode,backbone",
	}
	plain := NewFile("plain")
	invalid := NewFile("invalid")
	invalid.IsValid, invalid.NeedsTagging = false, false
	h.upsert(full, plain, invalid)
	h.wantFile("full", full)
	h.wantFile("plain", plain)
	h.wantFile("invalid", invalid)
	h.wantNoFile("missing")
	h.wantNoFile("")
	if _, err := h.st.UpsertFiles(h.Context(), nil); err != nil {
		h.Fatalf("UpsertFiles(nil) = %v", err)
	}
	h.wantCounts(store.Counts{Total: 3, Tagged: 1, Pending: 1})
}

func testUpsertUnchangedKeepsState(h *h) {
	h.upsertKeys("tagged", "retry", "crashed", "failed", "claimed")
	h.claim("tagged", "i/w0", T0, time.Minute)
	h.complete("tagged", "i/w0", store.Completion{Tags: map[string]string{"k": "v"}, Version: "v1", At: At(time.Second)})
	h.claim("retry", "i/w0", T0, time.Minute)
	h.release("retry", "i/w0", &store.FileUpdate{Attempts: 2, NextRetryAt: At(time.Hour), SkipUntil: At(time.Minute), LastError: "transient: x", Checkpoint: "decode"})
	h.claim("crashed", "i/w1", T0, time.Minute)
	if _, err := h.st.ReleaseWorker(h.Context(), "i/w1", store.Death{}, &store.Crash{QuarantineAt: 2, Reason: "crashed a worker"}); err != nil {
		h.Fatal(err)
	}
	h.claim("failed", "i/w0", T0, time.Minute)
	h.release("failed", "i/w0", &store.FileUpdate{Attempts: 5, Failed: true, LastError: "permanent: not audio"})
	h.claim("claimed", "i/w2", T0, time.Minute)

	before := map[string]store.File{}
	for _, k := range []string{"tagged", "retry", "crashed", "failed", "claimed"} {
		before[k] = h.file(k)
	}
	// Rescan: same size and mtime.
	h.upsertKeys("tagged", "retry", "crashed", "failed", "claimed")
	for k, f := range before {
		h.wantFile(k, f)
	}
	if f := before["tagged"]; !f.Tagged || f.NeedsTagging || f.TaggedVersion != "v1" {
		h.Fatalf("completed file = %+v", f)
	}
	if f := before["crashed"]; f.CrashCount != 1 {
		h.Fatalf("crash count = %d", f.CrashCount)
	}
	h.wantHeld("claimed")
	h.wantDiscover(At(2*time.Hour), "", 10, "crashed", "retry")
}

func testUpsertChangedNeedsTaggingAgain(h *h) {
	// A file with every kind of tagging state.
	dirty := store.File{
		Key: "dirty", Path: "/music/dirty.mp3", Size: 500, MtimeMs: 10,
		NeedsTagging: false, IsValid: true, Tagged: true, TaggedVersion: "v1",
		LastTaggedAt: At(-time.Hour), Attempts: 4, NextRetryAt: At(time.Hour),
		SkipUntil: At(time.Hour), CrashCount: 1, Failed: true, LastError: "transient: x", Checkpoint: "decode",
	}
	h.upsert(dirty, NewFile("a"), NewFile("b"))
	h.claim("a", "i/w0", T0, time.Minute)
	h.complete("a", "i/w0", store.Completion{Version: "v1", At: T0})
	h.claim("b", "i/w0", T0, time.Minute)
	h.release("b", "i/w0", &store.FileUpdate{Failed: true, Attempts: 5, LastError: "x", Checkpoint: "c"})
	h.wantDiscover(At(time.Second), "", 10)

	// Changed size; changed mtime; changed size and path.
	d2 := dirty
	d2.Size, d2.Path = 501, "/music/moved.mp3"
	a2, b2 := NewFile("a"), NewFile("b")
	a2.MtimeMs++
	b2.Size = 999
	h.upsert(a2, b2, d2)

	for _, tc := range []struct {
		key  string
		in   store.File
		prev store.File
	}{{"a", a2, NewFile("a")}, {"b", b2, NewFile("b")}, {"dirty", d2, dirty}} {
		f := h.file(tc.key)
		if f.Size != tc.in.Size || f.MtimeMs != tc.in.MtimeMs || f.Path != tc.in.Path || f.IsValid != tc.in.IsValid {
			h.Fatalf("%s: size/mtime/path/valid not updated: %+v", tc.key, f)
		}
		if !f.NeedsTagging || f.Tagged {
			h.Fatalf("%s: changed file does not need tagging again: %+v", tc.key, f)
		}
		if f.Failed || f.Attempts != 0 || f.CrashCount != 0 || f.LastError != "" || f.Checkpoint != "" ||
			!f.NextRetryAt.IsZero() || !f.SkipUntil.IsZero() {
			h.Fatalf("%s: changed file kept attempts/failed/retry/skip/crash state: %+v", tc.key, f)
		}
	}
	h.wantDiscover(At(time.Second), "", 10, "a", "b", "dirty")

	// A changed file that is no longer a valid audio file: not work.
	inv := a2
	inv.Size, inv.IsValid = 1, false
	h.upsert(inv)
	if f := h.file("a"); f.IsValid {
		h.Fatalf("validity not updated: %+v", f)
	}
	h.wantDiscover(At(time.Second), "", 10, "b", "dirty")
}

func testUpsertDuplicateKeysLastWins(h *h) {
	// New key twice in one batch: one file, the last entry.
	first, last := NewFile("a"), NewFile("a")
	first.Size, last.Size = 1, 2
	h.upsert(first, NewFile("b"), last)
	h.wantFile("a", last)
	h.wantCounts(store.Counts{Total: 2, Pending: 2})
	h.wantDiscover(T0, "", 10, "a", "b")

	// Known key twice: a change followed by the unchanged entry is no change.
	h.claim("b", "i/w0", T0, time.Minute)
	h.complete("b", "i/w0", store.Completion{Version: "v1", At: T0})
	tagged := h.file("b")
	changed := NewFile("b")
	changed.Size = 77
	h.upsert(changed, NewFile("b"))
	h.wantFile("b", tagged)
	// And the unchanged entry followed by a change is a change.
	h.upsert(NewFile("b"), changed)
	if f := h.file("b"); f.Size != 77 || !f.NeedsTagging || f.Tagged {
		h.Fatalf("last (changed) entry did not win: %+v", f)
	}
	h.wantCounts(store.Counts{Total: 2, Pending: 2})
}

func testUpsertEmptyKeyAppliesNothing(h *h) {
	h.upsertKeys("a")
	changed := NewFile("a")
	changed.Size = 7
	_, err := h.st.UpsertFiles(h.Context(), []store.File{changed, NewFile("b"), {Key: "", Path: "/x"}, NewFile("c")})
	if err == nil {
		h.Fatal("UpsertFiles accepted an empty key")
	}
	h.wantFile("a", NewFile("a"))
	h.wantNoFile("b")
	h.wantNoFile("c")
	h.wantCounts(store.Counts{Total: 1, Pending: 1})
}

// UpsertFiles answers what it did with each file of its batch: a new file
// inserted; a known one changed (another size or mtime: it needs tagging
// again), returned (the same size and mtime, valid again after a scan
// marked it missing; its tagging state kept) or unchanged. A key given
// twice is one file, counted by the entry that wins (the last); an empty
// batch counts nothing.
func testUpsertCounts(h *h) {
	h.wantUpsert(store.Upserted{})
	h.wantUpsert(store.Upserted{Inserted: 3}, NewFile("a"), NewFile("b"), NewFile("c"))
	h.wantUpsert(store.Upserted{Unchanged: 3}, NewFile("a"), NewFile("b"), NewFile("c"))

	// c is tagged, then leaves the disk for one scan.
	h.claim("c", "i/w0", T0, time.Minute)
	h.complete("c", "i/w0", store.Completion{Version: "v1", At: T0})
	if n, err := h.st.MarkMissing(h.Context(), []string{"c"}); err != nil || n != 1 {
		h.Fatalf("MarkMissing = %d, %v", n, err)
	}
	tagged := h.file("c")
	b := NewFile("b")
	b.MtimeMs++
	d1, d2 := NewFile("d"), NewFile("d")
	d1.Size = 1
	h.wantUpsert(store.Upserted{Inserted: 1, Changed: 1, Returned: 1, Unchanged: 1}, NewFile("a"), b, NewFile("c"), d1, d2)
	tagged.IsValid = true
	h.wantFile("c", tagged) // back, and still tagged
	h.wantFile("d", d2)
	if f := h.file("b"); f.MtimeMs != b.MtimeMs || !f.NeedsTagging {
		h.Fatalf("changed file: %+v", f)
	}

	// A file found again with another content is changed, not returned;
	// one still gone (found not valid, as an empty file is) is unchanged.
	if n, err := h.st.MarkMissing(h.Context(), []string{"a", "c"}); err != nil || n != 2 {
		h.Fatalf("MarkMissing = %d, %v", n, err)
	}
	a := NewFile("a")
	a.Size++
	c := NewFile("c")
	c.IsValid = false
	h.wantUpsert(store.Upserted{Changed: 1, Unchanged: 1}, a, c)
	if f := h.file("a"); !f.IsValid || f.Size != a.Size || !f.NeedsTagging {
		h.Fatalf("missing file found changed: %+v", f)
	}

	// Known key twice: a change followed by the unchanged entry is no
	// change, and the other way round is one.
	h.wantUpsert(store.Upserted{Unchanged: 1}, d1, d2)
	h.wantUpsert(store.Upserted{Changed: 1}, d2, d1)
	h.wantCounts(store.Counts{Total: 4, Pending: 3})
}

// --- Discover ---

func testDiscoverOrderLimitAfter(h *h) {
	// Inserted out of order, in two batches.
	h.upsertKeys("f5", "f1", "f3")
	h.upsertKeys("f4", "f0", "f2", "f6", "f7", "f10")
	all := []string{"f0", "f1", "f10", "f2", "f3", "f4", "f5", "f6", "f7"}
	h.wantDiscover(T0, "", 100, all...)
	h.wantDiscover(T0, "", len(all), all...)
	h.wantDiscover(T0, "", 1, "f0")
	h.wantDiscover(T0, "", 3, "f0", "f1", "f10")
	h.wantDiscover(T0, "f0", 2, "f1", "f10")
	h.wantDiscover(T0, "f10", 100, "f2", "f3", "f4", "f5", "f6", "f7")
	h.wantDiscover(T0, "f65", 10, "f7") // a cursor that is not a key
	h.wantDiscover(T0, "f7", 10)
	h.wantDiscover(T0, "zzz", 10)
	// Paging through with the cursor visits every file once, in order.
	var paged []string
	after := ""
	for {
		got := h.discover(T0, after, 2)
		if len(got) == 0 {
			break
		}
		if len(got) > 2 {
			h.Fatalf("page of %d > limit 2", len(got))
		}
		paged = append(paged, got...)
		after = got[len(got)-1]
	}
	if !slices.Equal(paged, all) {
		h.Fatalf("paged = %v, want %v", paged, all)
	}
	// Discover returns whole documents.
	fs, err := h.st.Discover(h.Context(), T0, "f4", 1)
	if err != nil || len(fs) != 1 {
		h.Fatalf("Discover = %v %v", fs, err)
	}
	if d := DiffFile(fs[0], NewFile("f5")); d != "" {
		h.Fatalf("discovered file: %s", d)
	}
}

func testDiscoverExclusions(h *h) {
	tagged := NewFile("e-tagged")
	tagged.NeedsTagging, tagged.Tagged = false, true
	invalid := NewFile("e-invalid")
	invalid.IsValid = false
	failed := NewFile("e-failed")
	failed.Failed = true
	retry := NewFile("e-retry")
	retry.NextRetryAt = At(time.Minute)
	skip := NewFile("e-skip")
	skip.SkipUntil = At(2 * time.Minute)
	h.upsert(NewFile("a"), NewFile("b-claimed"), tagged, invalid, failed, retry, skip, NewFile("z"))
	h.claim("b-claimed", "i/w0", T0, time.Hour)

	h.wantDiscover(T0, "", 100, "a", "z")
	// next_retry_at <= now and skip_until <= now are eligible: the bounds.
	h.wantDiscover(At(time.Minute-time.Millisecond), "", 100, "a", "z")
	h.wantDiscover(At(time.Minute), "", 100, "a", "e-retry", "z")
	h.wantDiscover(At(2*time.Minute), "", 100, "a", "e-retry", "e-skip", "z")
	// The limit counts eligible files only.
	h.wantDiscover(At(2*time.Minute), "", 2, "a", "e-retry")
	h.wantDiscover(At(2*time.Minute), "a", 1, "e-retry")

	// The same exclusions reached through the port's operations.
	h.upsertKeys("p-tagged", "p-failed", "p-retry", "p-skip", "p-quarantined")
	h.claim("p-tagged", "i/w1", T0, time.Hour)
	h.complete("p-tagged", "i/w1", store.Completion{Version: "v", At: T0})
	h.claim("p-failed", "i/w1", T0, time.Hour)
	h.release("p-failed", "i/w1", &store.FileUpdate{Failed: true, LastError: "permanent"})
	h.claim("p-retry", "i/w1", T0, time.Hour)
	h.release("p-retry", "i/w1", &store.FileUpdate{Attempts: 1, NextRetryAt: At(time.Hour)})
	h.claim("p-skip", "i/w1", T0, time.Hour)
	h.release("p-skip", "i/w1", &store.FileUpdate{SkipUntil: At(3 * time.Hour)})
	if err := h.st.Quarantine(h.Context(), "p-quarantined", "crashed a worker"); err != nil {
		h.Fatal(err)
	}
	h.wantDiscover(At(2*time.Minute), "", 100, "a", "e-retry", "e-skip", "z")
	h.wantDiscover(At(3*time.Hour), "", 100, "a", "e-retry", "e-skip", "p-retry", "p-skip", "z")
	// A file claimed once its wait is over (stored with a time, or given
	// one by a release) is excluded like any claimed file.
	h.claim("e-skip", "i/w2", At(3*time.Hour), time.Hour)
	h.claim("p-retry", "i/w2", At(3*time.Hour), time.Hour)
	h.wantDiscover(At(3*time.Hour), "", 100, "a", "e-retry", "p-skip", "z")
	// A released claim makes its file discoverable again.
	h.release("b-claimed", "i/w0", nil)
	h.wantDiscover(T0, "", 100, "a", "b-claimed", "z")
}

// --- Claim ---

func testClaimUnique(h *h) {
	h.upsertKeys("a", "b")
	h.claim("a", "i/w0", T0, 30*time.Second)
	h.claimErr("a", "i/w1", T0, store.ErrConflict)
	h.claimErr("a", "j/w1", At(time.Second), store.ErrConflict)
	// Even the holder cannot claim twice.
	h.claimErr("a", "i/w0", T0, store.ErrConflict)
	// The first claim is intact: its holder can complete, nobody else can.
	err := h.st.Complete(h.Context(), store.Ref{FileKey: "a", WorkerID: "i/w1"}, store.Completion{Version: "v", At: T0})
	wantSemantic(h.T, "Complete by the loser", err, store.ErrClaimLost)
	removed := h.cleanup(At(30 * time.Second))
	if len(removed) != 0 {
		h.Fatalf("cleanup removed %+v", removed)
	}
	removed = h.cleanup(At(31 * time.Second))
	if len(removed) != 1 || removed[0].WorkerID != "i/w0" || !SameTime(removed[0].LeaseUntil, At(30*time.Second)) ||
		!SameTime(removed[0].ClaimedAt, T0) || removed[0].Key() != "claim_a" {
		h.Fatalf("the claim was overwritten: %+v", removed)
	}
	// Another file is independent.
	h.claim("b", "i/w1", T0, time.Minute)
	h.wantCounts(store.Counts{Total: 2, Pending: 2, Claimed: 1})
}

func testClaimChecksEligibility(h *h) {
	tagged := NewFile("tagged")
	tagged.NeedsTagging, tagged.Tagged = false, true
	invalid := NewFile("invalid")
	invalid.IsValid = false
	failed := NewFile("failed")
	failed.Failed = true
	retry := NewFile("retry")
	retry.NextRetryAt = At(time.Minute)
	skip := NewFile("skip")
	skip.SkipUntil = At(time.Minute)
	h.upsert(NewFile("ok"), tagged, invalid, failed, retry, skip)
	for _, k := range []string{"tagged", "invalid", "failed", "retry", "skip", "missing"} {
		h.claimErr(k, "i/w0", T0, store.ErrNotEligible)
	}
	h.wantCounts(store.Counts{Total: 6, Tagged: 1, Failed: 1, Pending: 3})
	// Eligibility is judged at ClaimedAt: retry and skip times reached.
	h.claim("ok", "i/w0", T0, 30*time.Second)
	h.claimErr("retry", "i/w0", At(time.Minute-time.Millisecond), store.ErrNotEligible)
	h.claim("retry", "i/w0", At(time.Minute), 30*time.Second)
	h.claim("skip", "i/w1", At(time.Minute), 30*time.Second)
	h.wantCounts(store.Counts{Total: 6, Tagged: 1, Failed: 1, Pending: 3, Claimed: 3})
	// A file quarantined meanwhile cannot be claimed again.
	h.release("ok", "i/w0", nil)
	if err := h.st.Quarantine(h.Context(), "ok", "poison"); err != nil {
		h.Fatal(err)
	}
	h.claimErr("ok", "i/w0", At(time.Hour), store.ErrNotEligible)
}

// --- Complete ---

// A claim hands back the file as it is when claimed, not as an earlier
// discovery saw it: a worker that claims from an old batch must start from
// the attempts and checkpoint another worker left, or a failing file would
// be retried without end and a checkpoint lost.
func testClaimReturnsCurrentFile(h *h) {
	h.upsertKeys("a")
	seen := h.discover(T0, "", 10) // worker 0's batch: attempts 0, no checkpoint
	if len(seen) != 1 {
		h.Fatalf("discover: %v", seen)
	}
	h.claim("a", "i/w1", T0, time.Minute)
	h.release("a", "i/w1", &store.FileUpdate{Attempts: 2, NextRetryAt: At(time.Minute), LastError: "transient: x", Checkpoint: "decode"})
	got := h.claim("a", "i/w0", At(time.Minute), time.Minute)
	if d := DiffFile(got, h.file("a")); d != "" {
		h.Errorf("Claim returned another file than the stored one: %s", d)
	}
	if got.Attempts != 2 || got.Checkpoint != "decode" || got.LastError != "transient: x" {
		h.Errorf("Claim returned attempts %d, checkpoint %q, error %q; want 2, \"decode\", \"transient: x\"", got.Attempts, got.Checkpoint, got.LastError)
	}
}

func testComplete(h *h) {
	h.upsertKeys("a", "b")
	h.claim("a", "i/w0", T0, 30*time.Second)
	before := h.file("a")
	tags := map[string]string{"nom:mood_happy": "0.71", "nom:genre": "rock;pop", "empty": ""}
	want := maps.Clone(tags)
	h.complete("a", "i/w0", store.Completion{Tags: tags, Version: "v9", At: At(5 * time.Second)})
	tags["nom:genre"] = "mutated by the caller afterwards"

	exp := before
	exp.Tagged, exp.NeedsTagging, exp.TaggedVersion, exp.LastTaggedAt = true, false, "v9", At(5*time.Second)
	h.wantFile("a", exp)
	if got, ok := tagsOf(h.T, h.st, "a"); ok && !mapsEqual(got, want) {
		h.Fatalf("Tags(a) = %v, want %v", got, want)
	}
	// The claim is gone: a second completion is refused and changes nothing.
	err := h.st.Complete(h.Context(), store.Ref{FileKey: "a", WorkerID: "i/w0"}, store.Completion{Tags: map[string]string{"x": "y"}, Version: "v10", At: At(time.Minute)})
	wantSemantic(h.T, "second Complete", err, store.ErrClaimLost)
	h.wantFile("a", exp)
	if got, ok := tagsOf(h.T, h.st, "a"); ok && !mapsEqual(got, want) {
		h.Fatalf("Tags(a) after a refused completion = %v", got)
	}
	h.wantCounts(store.Counts{Total: 2, Tagged: 1, Pending: 1})
	h.wantDiscover(At(time.Minute), "", 10, "b")
	if removed := h.cleanup(At(time.Hour)); len(removed) != 0 {
		h.Fatalf("claim kept after completion: %+v", removed)
	}
	// Checkpoint and last error of earlier attempts are cleared by success
	// (as the reference store does).
	h.claim("b", "i/w0", T0, time.Minute)
	h.release("b", "i/w0", &store.FileUpdate{Attempts: 1, LastError: "transient: x", Checkpoint: "decode"})
	h.claim("b", "i/w1", T0, time.Minute)
	h.complete("b", "i/w1", store.Completion{Version: "v9", At: At(time.Second)})
	if f := h.file("b"); !f.Tagged || f.NeedsTagging || f.Checkpoint != "" || f.LastError != "" || f.Attempts != 1 {
		h.Fatalf("completed after a retry = %+v", f)
	}
	if got, ok := tagsOf(h.T, h.st, "b"); ok && len(got) != 0 {
		h.Fatalf("Tags(b) = %v, want none", got)
	}
	// A changed file is tagged again: the new completion replaces the tags.
	a2 := NewFile("a")
	a2.Size++
	h.upsert(a2)
	h.claim("a", "i/w2", At(time.Hour), time.Minute)
	h.complete("a", "i/w2", store.Completion{Tags: map[string]string{"k": "2"}, Version: "v10", At: At(time.Hour)})
	if f := h.file("a"); !f.Tagged || f.TaggedVersion != "v10" || !SameTime(f.LastTaggedAt, At(time.Hour)) {
		h.Fatalf("retagged = %+v", f)
	}
	if got, ok := tagsOf(h.T, h.st, "a"); ok && !mapsEqual(got, map[string]string{"k": "2"}) {
		h.Fatalf("Tags(a) after retagging = %v", got)
	}
}

// A completion that rewrote the file stores its new size and mtime, so the
// next scan, which finds the file as the job left it, sees it unchanged and
// keeps it tagged; a completion without a rewrite keeps the stored ones.
func testCompleteRecordsRewrite(h *h) {
	h.upsertKeys("a", "b")
	h.claim("a", "i/w0", T0, time.Minute)
	h.complete("a", "i/w0", store.Completion{Version: "v1", At: T0, Rewritten: &store.Stat{Size: 1234, MtimeMs: 1_800_000_000_000}})
	f := h.file("a")
	if f.Size != 1234 || f.MtimeMs != 1_800_000_000_000 || !f.Tagged {
		h.Fatalf("after a rewriting completion: %+v", f)
	}
	rescanned := NewFile("a")
	rescanned.Size, rescanned.MtimeMs = 1234, 1_800_000_000_000
	h.upsert(rescanned)
	if f := h.file("a"); !f.Tagged || f.NeedsTagging {
		h.Fatalf("the rewritten file, scanned as the job left it, needs tagging again: %+v", f)
	}
	h.wantDiscover(At(time.Hour), "", 10, "b")

	h.claim("b", "i/w0", T0, time.Minute)
	h.complete("b", "i/w0", store.Completion{Version: "v1", At: T0})
	if f, want := h.file("b"), NewFile("b"); f.Size != want.Size || f.MtimeMs != want.MtimeMs {
		h.Fatalf("a completion without a rewrite changed size/mtime: %+v", f)
	}
}

// NextStatSeq hands out increasing numbers, from 1 on a new store, and
// keeps the sequence in meta under store.MetaStatSeq.
func testNextStatSeq(h *h) {
	var prev int64
	for i := range 3 {
		n, err := h.st.NextStatSeq(h.Context())
		if err != nil {
			h.Fatalf("NextStatSeq: %v", err)
		}
		if n != prev+1 {
			h.Fatalf("NextStatSeq #%d = %d, want %d", i+1, n, prev+1)
		}
		prev = n
	}
	if v, ok, err := h.st.GetMeta(h.Context(), store.MetaStatSeq); err != nil || !ok || v != "3" {
		h.Fatalf("GetMeta(%s) = %q %v %v, want 3", store.MetaStatSeq, v, ok, err)
	}
}

// A scan batch that took its stat sequence number before a job's
// completion recorded the job's rewrite may have read the file's stat
// before the write: its upsert leaves the file as the completion left it
// (tagged, new size and mtime) instead of writing the older stat back and
// sending the file to work again. A batch that took its number after the
// completion read the file after it, and applies; an upsert without a
// number always applies.
func testUpsertOlderStatKeepsRewrite(h *h) {
	h.upsertKeys("a", "b")
	old := NewFile("a")
	seq := h.nextStatSeq() // the scan batch takes its number, then reads a's stat
	scanned := old
	scanned.StatSeq = seq

	h.claim("a", "i/w0", T0, time.Minute) // meanwhile a job rewrites a and completes
	rewritten := store.Stat{Size: 1234, MtimeMs: old.MtimeMs + 60_000}
	h.complete("a", "i/w0", store.Completion{Version: "v1", At: T0,
		Claimed: &store.Stat{Size: old.Size, MtimeMs: old.MtimeMs}, Rewritten: &rewritten})
	done := h.file("a")
	if done.StatSeq != seq {
		h.Fatalf("a completion that rewrote the file stamped it %d, want the sequence's value %d", done.StatSeq, seq)
	}

	h.upsert(scanned, NewFile("b")) // the batch is written after the completion
	h.wantFile("a", done)
	if !done.Tagged || done.NeedsTagging || done.Size != rewritten.Size || done.MtimeMs != rewritten.MtimeMs {
		h.Fatalf("after a stale batch: %+v", done)
	}
	h.wantDiscover(At(time.Hour), "", 10, "b")

	// The next batch took its number after the completion: the file as the
	// job left it is unchanged, and a change made since is a change.
	again := old
	again.Size, again.MtimeMs, again.StatSeq = rewritten.Size, rewritten.MtimeMs, h.nextStatSeq()
	h.upsert(again)
	h.wantFile("a", done)
	changed := again
	changed.Size, changed.StatSeq = 4321, h.nextStatSeq()
	h.upsert(changed)
	if f := h.file("a"); f.Size != 4321 || !f.NeedsTagging || f.Tagged || f.StatSeq != changed.StatSeq {
		h.Fatalf("a change scanned after the completion: %+v", f)
	}

	// A completion without a rewrite keeps the stored stat and its number.
	h.claim("b", "i/w0", T0, time.Minute)
	before := h.file("b")
	h.complete("b", "i/w0", store.Completion{Version: "v1", At: T0})
	if f := h.file("b"); f.StatSeq != before.StatSeq || f.Size != before.Size {
		h.Fatalf("a completion without a rewrite changed the stat: %+v, was %+v", f, before)
	}

	// Without a number: applied whatever the stored one.
	h.upsert(NewFile("a"))
	if f := h.file("a"); f.Size != old.Size || f.StatSeq != changed.StatSeq {
		h.Fatalf("an upsert without a number: %+v", f)
	}
}

// Of two scans running at once, the one that took the later number wins:
// the other's older stat does not replace it, nor does its older view of
// the file's presence (a file it found is not made valid again over a
// newer stat); a file new to the store is inserted whatever its number.
func testUpsertOlderStatKeepsNewerScan(h *h) {
	h.upsertKeys("a", "b")
	early, late := h.nextStatSeq(), h.nextStatSeq()
	newer := NewFile("a")
	newer.Size, newer.StatSeq = 2000, late
	h.upsert(newer)
	want := h.file("a")
	older := NewFile("a")
	older.StatSeq = early
	h.upsert(older)
	h.wantFile("a", want)
	if want.Size != 2000 || want.StatSeq != late {
		h.Fatalf("after the later scan: %+v", want)
	}

	// b: the later scan records a change and the file is then marked
	// missing; the earlier scan's batch, which found b as it was before,
	// changes nothing.
	b := NewFile("b")
	b.Size, b.StatSeq = 3000, late
	h.upsert(b)
	if n, err := h.st.MarkMissing(h.Context(), []string{"b"}); err != nil || n != 1 {
		h.Fatalf("MarkMissing = %d, %v", n, err)
	}
	gone := h.file("b")
	olderB := NewFile("b")
	olderB.StatSeq = early
	h.upsert(olderB)
	h.wantFile("b", gone)

	fresh := NewFile("c")
	fresh.StatSeq = early
	h.upsert(fresh)
	h.wantFile("c", fresh)
}

// A number above the stat sequence (a scan that took it from another
// store: the database replaced or restored from a backup while the scan
// ran) is written as the sequence's value: no stamp exceeds the sequence,
// which the upsert does not move, so the next scans' numbers are above
// every stamp and their changes apply. Stamped with the number as given,
// the files would refuse every numbered scan until the sequence passed it.
func testUpsertNumberAboveSequence(h *h) {
	// A store whose sequence is absent (0): a number is written as 0, an
	// observation without order, as every stamp there is.
	z := NewFile("z")
	z.StatSeq = 500
	h.upsert(z)
	if f := h.file("z"); f.StatSeq != 0 {
		h.Fatalf("a new file given number 500 in a store without a sequence: stamped %d, want 0", f.StatSeq)
	}
	h.upsertKeys("a", "b")
	h.nextStatSeq()
	cur := h.nextStatSeq() // 2
	foreign := cur + 500

	a := NewFile("a") // a change
	a.Size, a.StatSeq = 2000, foreign
	b := NewFile("b") // a validity change
	b.IsValid, b.StatSeq = false, foreign
	c := NewFile("c") // a new file
	c.StatSeq = foreign
	h.upsert(a, b, c)
	for _, k := range []string{"a", "b", "c"} {
		if f := h.file(k); f.StatSeq != cur {
			h.Fatalf("%s given number %d with the sequence at %d: stamped %d, want %d", k, foreign, cur, f.StatSeq, cur)
		}
	}
	if f := h.file("a"); f.Size != 2000 || !f.NeedsTagging {
		h.Fatalf("a change given a number above the sequence: %+v", f)
	}
	if f := h.file("b"); f.IsValid {
		h.Fatalf("a validity change given a number above the sequence: %+v", f)
	}
	if v, ok, err := h.st.GetMeta(h.Context(), store.MetaStatSeq); err != nil || !ok || v != strconv.FormatInt(cur, 10) {
		h.Fatalf("GetMeta(%s) = %q %v %v after the upsert, want %d", store.MetaStatSeq, v, ok, err, cur)
	}

	// The next scan's number is above the stamps: its changes apply.
	next := h.nextStatSeq()
	for _, k := range []string{"a", "b", "c", "z"} {
		f := NewFile(k)
		f.Size, f.StatSeq = 3000, next
		h.upsert(f)
		if got := h.file(k); got.Size != 3000 || !got.IsValid || got.StatSeq != next {
			h.Fatalf("%s scanned with number %d after the upsert above the sequence: %+v", k, next, got)
		}
	}
}

// A file that an upsert leaves as it is because the given stat is older
// than the stored one (store.StatNewer) is counted unchanged, whatever the
// given size, mtime and validity say: a job rewrote it after the scan
// took its number (its new size and mtime are not a change), or a later
// scan recorded its stat. In the same batch, a file whose stored stat is
// older is counted as what happens to it, and a new file is inserted
// whatever its number. A later number applies and counts as a change.
func testUpsertCountsOlderStat(h *h) {
	h.upsertKeys("a", "b", "c")
	old := NewFile("a")
	seq := h.nextStatSeq() // the scan batch takes its number, then reads the stats

	h.claim("a", "i/w0", T0, time.Minute) // meanwhile a job rewrites a and completes
	rewritten := store.Stat{Size: 1234, MtimeMs: old.MtimeMs + 60_000}
	h.complete("a", "i/w0", store.Completion{Version: "v1", At: T0,
		Claimed: &store.Stat{Size: old.Size, MtimeMs: old.MtimeMs}, Rewritten: &rewritten})
	done := h.file("a")
	emptied := NewFile("b") // and a later scan finds b emptied
	emptied.Size, emptied.IsValid, emptied.StatSeq = 0, false, h.nextStatSeq()
	h.wantUpsert(store.Upserted{Changed: 1}, emptied)
	gone := h.file("b")
	if n, err := h.st.MarkMissing(h.Context(), []string{"c"}); err != nil || n != 1 {
		h.Fatalf("MarkMissing = %d, %v", n, err)
	}

	var batch []store.File // the batch, written after all that
	for _, k := range []string{"a", "b", "c", "d"} {
		f := NewFile(k)
		f.StatSeq = seq
		batch = append(batch, f)
	}
	h.wantUpsert(store.Upserted{Inserted: 1, Returned: 1, Unchanged: 2}, batch...)
	h.wantFile("a", done)
	h.wantFile("b", gone)
	if f := h.file("c"); !f.IsValid || f.StatSeq != seq {
		h.Fatalf("c, older stamp, found again: %+v", f)
	}

	late := NewFile("a")
	late.StatSeq = h.nextStatSeq()
	h.wantUpsert(store.Upserted{Changed: 1}, late)
}

// A file whose content changed while its job ran (a scan recorded a new
// size or mtime) is not completed with the old content's result: the
// completion is refused as ErrClaimLost, the claim dropped and the file,
// needing tagging again, is left to be claimed anew. A file as the job
// claimed it, or as the job itself rewrote it (a scan between the write and
// the completion), is completed.
func testCompleteRefusedForChangedFile(h *h) {
	h.upsertKeys("a", "b", "c")
	at := NewFile("a")
	claimed := &store.Stat{Size: at.Size, MtimeMs: at.MtimeMs}
	h.claim("a", "i/w0", T0, time.Minute)
	changed := NewFile("a")
	changed.Size, changed.MtimeMs = 4321, at.MtimeMs+1000
	h.upsert(changed)
	err := h.st.Complete(h.Context(), store.Ref{FileKey: "a", WorkerID: "i/w0"},
		store.Completion{Version: "v1", At: At(time.Second), Claimed: claimed})
	wantSemantic(h.T, "Complete of a changed file", err, store.ErrClaimLost)
	if f := h.file("a"); f.Tagged || !f.NeedsTagging || f.Size != 4321 {
		h.Fatalf("changed file after a refused completion: %+v", f)
	}
	if got, ok := tagsOf(h.T, h.st, "a"); ok && len(got) != 0 {
		h.Fatalf("tags stored for a refused completion: %v", got)
	}
	h.wantDiscover(At(time.Second), "", 10, "a", "b", "c")

	// Unchanged: completed.
	h.claim("b", "i/w0", T0, time.Minute)
	h.complete("b", "i/w0", store.Completion{Version: "v1", At: T0, Claimed: claimed})
	// Rewritten by the job, and a scan saw the rewrite first: completed.
	h.claim("c", "i/w0", T0, time.Minute)
	rewritten := NewFile("c")
	rewritten.Size, rewritten.MtimeMs = 1100, at.MtimeMs+5
	h.upsert(rewritten)
	h.complete("c", "i/w0", store.Completion{Version: "v1", At: T0, Claimed: claimed,
		Rewritten: &store.Stat{Size: 1100, MtimeMs: at.MtimeMs + 5}})
	if fb, fc := h.file("b"), h.file("c"); !fb.Tagged || !fc.Tagged || fc.NeedsTagging {
		h.Fatalf("completions of unchanged or self-rewritten files: %+v %+v", fb, fc)
	}
}

func testCompleteOnlyByHolder(h *h) {
	h.upsertKeys("a", "b")
	h.claim("a", "i/w0", T0, 30*time.Second)
	before := map[string]store.File{"a": h.file("a"), "b": h.file("b")}
	comp := store.Completion{Tags: map[string]string{"k": "v"}, Version: "v9", At: At(5 * time.Second)}
	for _, ref := range []store.Ref{
		{FileKey: "a", WorkerID: "i/w1"},  // another worker
		{FileKey: "a", WorkerID: "j/w0"},  // same component, other instance
		{FileKey: "b", WorkerID: "i/w0"},  // unclaimed file
		{FileKey: "zz", WorkerID: "i/w0"}, // missing file
	} {
		err := h.st.Complete(h.Context(), ref, comp)
		wantSemantic(h.T, fmt.Sprintf("Complete(%+v)", ref), err, store.ErrClaimLost)
	}
	for k, f := range before {
		h.wantFile(k, f)
		if got, ok := tagsOf(h.T, h.st, k); ok && len(got) != 0 {
			h.Fatalf("non-holder stored tags for %s: %v", k, got)
		}
	}
	h.wantNoFile("zz")
	h.wantHeld("a")
	h.wantCounts(store.Counts{Total: 2, Pending: 2, Claimed: 1})
	// Lost claim: expired and cleaned up, then the late completion is refused.
	if removed := h.cleanup(At(31 * time.Second)); !slices.Equal(claimKeys(removed), []string{"a"}) {
		h.Fatalf("cleanup = %+v", removed)
	}
	h.claim("a", "i/w1", At(31*time.Second), 30*time.Second)
	err := h.st.Complete(h.Context(), store.Ref{FileKey: "a", WorkerID: "i/w0"}, comp)
	wantSemantic(h.T, "late Complete", err, store.ErrClaimLost)
	h.wantFile("a", before["a"])
	h.complete("a", "i/w1", comp)
	if f := h.file("a"); !f.Tagged {
		h.Fatalf("new holder's completion lost: %+v", f)
	}
}

// --- Release ---

func testReleaseWithoutUpdate(h *h) {
	h.upsertKeys("a")
	h.claim("a", "i/w0", T0, time.Minute)
	h.release("a", "i/w0", &store.FileUpdate{Attempts: 1, LastError: "transient: x", Checkpoint: "decode"})
	f := h.file("a")
	h.claim("a", "i/w0", T0, time.Minute)
	h.wantDiscover(T0, "", 10)
	h.release("a", "i/w0", nil)
	h.wantFile("a", f)
	h.wantDiscover(T0, "", 10, "a")
	h.wantCounts(store.Counts{Total: 1, Pending: 1})
	err := h.st.Release(h.Context(), store.Ref{FileKey: "a", WorkerID: "i/w0"}, nil)
	wantSemantic(h.T, "second Release", err, store.ErrClaimLost)
}

func testReleaseWithUpdate(h *h) {
	h.upsertKeys("a", "b")
	h.claim("a", "i/w0", T0, 30*time.Second)
	upd := &store.FileUpdate{Attempts: 2, NextRetryAt: At(time.Hour), SkipUntil: At(30 * time.Minute), LastError: "transient: x", Checkpoint: "decode"}
	h.release("a", "i/w0", upd)
	exp := NewFile("a")
	exp.Attempts, exp.NextRetryAt, exp.SkipUntil, exp.LastError, exp.Checkpoint = 2, At(time.Hour), At(30*time.Minute), "transient: x", "decode"
	h.wantFile("a", exp)
	h.wantCounts(store.Counts{Total: 2, Pending: 2})
	h.wantDiscover(At(time.Hour-time.Millisecond), "", 10, "b")
	h.wantDiscover(At(time.Hour), "", 10, "a", "b")

	// An update replaces all six fields (zero values too).
	h.claim("a", "i/w0", At(time.Hour), time.Minute)
	h.release("a", "i/w0", &store.FileUpdate{Attempts: 3})
	exp.Attempts, exp.NextRetryAt, exp.SkipUntil, exp.LastError, exp.Checkpoint = 3, time.Time{}, time.Time{}, "", ""
	h.wantFile("a", exp)
	h.wantDiscover(T0, "", 10, "a", "b")

	// Failed: out of the work queue for good.
	h.claim("a", "i/w0", At(time.Hour), time.Minute)
	h.release("a", "i/w0", &store.FileUpdate{Attempts: 5, Failed: true, LastError: "transient: x (after 5 attempts)"})
	exp.Attempts, exp.Failed, exp.LastError = 5, true, "transient: x (after 5 attempts)"
	h.wantFile("a", exp)
	h.wantDiscover(At(100*time.Hour), "", 10, "b")
	h.claimErr("a", "i/w0", At(100*time.Hour), store.ErrNotEligible)
	h.wantCounts(store.Counts{Total: 2, Failed: 1, Pending: 1})
}

func testReleaseOnlyByHolder(h *h) {
	h.upsertKeys("a", "b")
	h.claim("a", "i/w0", T0, 30*time.Second)
	before := h.file("a")
	upd := &store.FileUpdate{Attempts: 2, NextRetryAt: At(time.Hour), Failed: true, LastError: "x", Checkpoint: "c"}
	for _, tc := range []struct {
		ref store.Ref
		upd *store.FileUpdate
	}{
		{store.Ref{FileKey: "a", WorkerID: "i/w1"}, upd},
		{store.Ref{FileKey: "a", WorkerID: "i/w1"}, nil},
		{store.Ref{FileKey: "b", WorkerID: "i/w0"}, upd},
		{store.Ref{FileKey: "zz", WorkerID: "i/w0"}, upd},
	} {
		err := h.st.Release(h.Context(), tc.ref, tc.upd)
		wantSemantic(h.T, fmt.Sprintf("Release(%+v, %v)", tc.ref, tc.upd != nil), err, store.ErrClaimLost)
	}
	h.wantFile("a", before)
	h.wantFile("b", NewFile("b"))
	h.wantHeld("a")
	h.wantCounts(store.Counts{Total: 2, Pending: 2, Claimed: 1})
}

// A file whose content changed while its job ran (a scan recorded a new
// size or mtime and reset its tagging state) does not take the update of
// the old content's failure — its attempts, retry time, failure,
// checkpoint, missing mark: the release is refused as ErrClaimLost, the
// claim dropped and the file left as the scan made it, eligible at once.
// A file still as the job claimed it takes the update.
func testReleaseRefusedForChangedFile(h *h) {
	h.upsertKeys("a", "b")
	at := NewFile("a")
	claimed := &store.Stat{Size: at.Size, MtimeMs: at.MtimeMs}
	changed := NewFile("a")
	changed.Size, changed.MtimeMs = 4321, at.MtimeMs+1000
	for _, upd := range []store.FileUpdate{
		{Attempts: 1, NextRetryAt: At(time.Hour), LastError: "transient: x", Checkpoint: "old tags"},
		{Attempts: 1, Failed: true, LastError: "permanent: cannot decode", Checkpoint: "old tags"},
		{Attempts: 1, Missing: true, LastError: "missing: not on disk"},
	} {
		h.claim("a", "i/w0", T0, time.Minute)
		changed.MtimeMs++
		h.upsert(changed)
		upd.Claimed = claimed
		err := h.st.Release(h.Context(), store.Ref{FileKey: "a", WorkerID: "i/w0"}, &upd)
		wantSemantic(h.T, "Release of a changed file ("+upd.LastError+")", err, store.ErrClaimLost)
		h.wantFile("a", changed)
		h.wantDiscover(T0, "", 10, "a", "b")
		h.wantCounts(store.Counts{Total: 2, Pending: 2})
		claimed = &store.Stat{Size: changed.Size, MtimeMs: changed.MtimeMs} // the next job claims this content
	}

	// Unchanged: the update applies.
	h.claim("b", "i/w0", T0, time.Minute)
	upd := &store.FileUpdate{Attempts: 1, NextRetryAt: At(time.Hour), LastError: "transient: x", Checkpoint: "c",
		Claimed: &store.Stat{Size: 1000, MtimeMs: 1_700_000_000_000}}
	h.release("b", "i/w0", upd)
	exp := NewFile("b")
	exp.Attempts, exp.NextRetryAt, exp.LastError, exp.Checkpoint = 1, At(time.Hour), "transient: x", "c"
	h.wantFile("b", exp)
	h.wantDiscover(T0, "", 10, "a")
}

// --- ReleaseWorker, Quarantine ---

// testReleaseWorker: a dead worker's claims are released in key order;
// with a Crash, each file counts the crash and one whose count reaches
// QuarantineAt is quarantined in the same operation (not discoverable,
// not claimable once ReleaseWorker returns); without, counts stay.
func testReleaseWorker(h *h) {
	crash := &store.Crash{QuarantineAt: 2, Reason: "crashed a worker"}
	h.upsertKeys("a", "b", "c", "d", "e")
	// Claimed out of key order.
	h.claim("d", "i/w0", T0, time.Minute)
	h.claim("b", "i/w0", T0, time.Minute)
	h.claim("a", "i/w0", T0, time.Minute)
	h.claim("c", "i/w1", T0, time.Minute)
	h.claim("e", "j/w0", T0, time.Minute) // same component on another instance
	rel, err := h.st.ReleaseWorker(h.Context(), "i/w0", store.Death{}, crash)
	if err != nil {
		h.Fatal(err)
	}
	want := []store.Released{{FileKey: "a", CrashCount: 1}, {FileKey: "b", CrashCount: 1}, {FileKey: "d", CrashCount: 1}}
	if !slices.Equal(rel, want) {
		h.Fatalf("ReleaseWorker = %+v, want %+v", rel, want)
	}
	h.wantHeld("c")
	h.wantHeld("e")
	if f := h.file("c"); f.CrashCount != 0 {
		h.Fatalf("another worker's file counted a crash: %+v", f)
	}
	h.wantDiscover(T0, "", 10, "a", "b", "d")
	exp := NewFile("a")
	exp.CrashCount = 1
	h.wantFile("a", exp)

	// Without a crash: released, the counts reported unchanged.
	h.claim("a", "i/w0", T0, time.Minute)
	h.claim("b", "i/w0", T0, time.Minute)
	rel, err = h.st.ReleaseWorker(h.Context(), "i/w0", store.Death{}, nil)
	if err != nil || !slices.Equal(rel, []store.Released{{FileKey: "a", CrashCount: 1}, {FileKey: "b", CrashCount: 1}}) {
		h.Fatalf("release without counting = %+v %v", rel, err)
	}
	h.wantFile("a", exp)

	// Second crash of a and d: both quarantined in the same operation.
	h.claim("a", "i/w0", T0, time.Minute)
	h.claim("d", "i/w0", T0, time.Minute)
	rel, err = h.st.ReleaseWorker(h.Context(), "i/w0", store.Death{}, crash)
	want = []store.Released{{FileKey: "a", CrashCount: 2, Quarantined: true}, {FileKey: "d", CrashCount: 2, Quarantined: true}}
	if err != nil || !slices.Equal(rel, want) {
		h.Fatalf("second crash = %+v %v, want %+v", rel, err, want)
	}
	exp.CrashCount, exp.Failed, exp.LastError = 2, true, "crashed a worker"
	h.wantFile("a", exp)
	h.wantDiscover(At(time.Hour), "", 10, "b")
	h.claimErr("a", "i/w0", At(time.Hour), store.ErrNotEligible)
	h.wantCounts(store.Counts{Total: 5, Failed: 2, Pending: 3, Claimed: 2})

	// A threshold of 1 quarantines on the first crash.
	h.claim("b", "i/w3", T0, time.Minute)
	rel, err = h.st.ReleaseWorker(h.Context(), "i/w3", store.Death{}, &store.Crash{QuarantineAt: 1, Reason: "poison"})
	if err != nil || !slices.Equal(rel, []store.Released{{FileKey: "b", CrashCount: 2, Quarantined: true}}) {
		h.Fatalf("crash under a threshold of 1 = %+v %v", rel, err)
	}
	if f := h.file("b"); !f.Failed || f.LastError != "poison" {
		h.Fatalf("quarantined under a threshold of 1: %+v", f)
	}
	// Nothing held: empty, no error.
	rel, err = h.st.ReleaseWorker(h.Context(), "i/none", store.Death{}, crash)
	if err != nil || len(rel) != 0 {
		h.Fatalf("ReleaseWorker of an idle worker = %+v %v", rel, err)
	}
	h.wantCounts(store.Counts{Total: 5, Failed: 3, Pending: 2, Claimed: 2})
}

func testQuarantine(h *h) {
	h.upsertKeys("a", "b", "c")
	if err := h.st.Quarantine(h.Context(), "a", "crashed a worker"); err != nil {
		h.Fatal(err)
	}
	exp := NewFile("a")
	exp.Failed, exp.LastError = true, "crashed a worker"
	h.wantFile("a", exp)
	h.wantDiscover(T0, "", 10, "b", "c")
	h.claimErr("a", "i/w0", T0, store.ErrNotEligible)
	err := h.st.Quarantine(h.Context(), "zz", "x")
	wantSemantic(h.T, "Quarantine(missing)", err, store.ErrNotFound)
	h.wantNoFile("zz")
	// A claimed file: quarantined; its claim goes at the next cleanup.
	h.claim("b", "i/w0", T0, time.Hour)
	if err := h.st.Quarantine(h.Context(), "b", "poison"); err != nil {
		h.Fatal(err)
	}
	if f := h.file("b"); !f.Failed || f.LastError != "poison" {
		h.Fatalf("quarantined = %+v", f)
	}
	if removed := h.cleanup(T0); !slices.Equal(claimKeys(removed), []string{"b"}) {
		h.Fatalf("cleanup after quarantine = %+v", removed)
	}
	h.wantCounts(store.Counts{Total: 3, Failed: 2, Pending: 1})
}

func testRetryFailed(h *h) {
	ctx := h.Context()
	h.upsertKeys("a", "b", "c", "d")
	// a: failed after its transient retries, with a checkpoint.
	h.claim("a", "i/w0", T0, time.Hour)
	h.release("a", "i/w0", &store.FileUpdate{Attempts: 5, Failed: true, LastError: "transient: timeout", Checkpoint: "cp"})
	// b: quarantined after crashing two workers.
	for _, w := range []string{"i/w0", "i/w1"} {
		h.claim("b", w, T0, time.Hour)
		if _, err := h.st.ReleaseWorker(ctx, w, store.Death{}, &store.Crash{QuarantineAt: 2, Reason: "crashed a worker"}); err != nil {
			h.Fatal(err)
		}
	}
	// c: waiting for a retry, not failed.
	h.claim("c", "i/w0", T0, time.Hour)
	h.release("c", "i/w0", &store.FileUpdate{Attempts: 1, NextRetryAt: At(time.Minute), LastError: "transient: x"})
	h.wantDiscover(T0, "", 10, "d")

	n, err := h.st.RetryFailed(ctx, []string{"a", "b", "c", "zz", "a"})
	if err != nil || n != 2 {
		h.Fatalf("RetryFailed = %d %v, want 2 (a and b; a repeated key counted once)", n, err)
	}
	exp := NewFile("a")
	exp.Checkpoint = "cp" // kept: a retry resumes from it
	h.wantFile("a", exp)
	h.wantFile("b", NewFile("b"))
	if f := h.file("c"); f.Attempts != 1 || !f.NextRetryAt.Equal(At(time.Minute)) || f.LastError != "transient: x" {
		h.Fatalf("a file that was not failed changed: %+v", f)
	}
	h.wantDiscover(T0, "", 10, "a", "b", "d")
	h.wantCounts(store.Counts{Total: 4, Pending: 4})
	if n, err := h.st.RetryFailed(ctx, []string{"a", "b"}); err != nil || n != 0 {
		h.Fatalf("RetryFailed again = %d %v, want 0", n, err)
	}
	if n, err := h.st.RetryFailed(ctx, nil); err != nil || n != 0 {
		h.Fatalf("RetryFailed(nil) = %d %v", n, err)
	}
}

// testRetag: files tagged by another model set (inventory.Scan.Stale over
// ListFiles) become work again — only those tagged, valid, not failed and
// without a claim — keeping their version, tagging time, tags and
// checkpoint; Counts move them from Tagged to Pending.
func testRetag(h *h) {
	ctx := h.Context()
	h.upsertKeys("t1", "t2", "f1", "p", "m1")
	tag := func(k, version string) {
		h.Helper()
		h.claim(k, "i/w0", T0, time.Hour)
		h.complete(k, "i/w0", store.Completion{Tags: map[string]string{"nom_version": version}, Version: version, At: At(time.Second)})
	}
	// t1: tagged v1 after a transient failure and a worker crash (Complete
	// keeps attempts and crash count).
	h.claim("t1", "i/w0", T0, time.Hour)
	h.release("t1", "i/w0", &store.FileUpdate{Attempts: 2, LastError: "transient: x"})
	h.claim("t1", "i/w9", T0, time.Hour)
	if _, err := h.st.ReleaseWorker(ctx, "i/w9", store.Death{}, &store.Crash{QuarantineAt: 2, Reason: "crashed a worker"}); err != nil {
		h.Fatal(err)
	}
	tag("t1", "v1")
	tag("t2", "v2")
	tag("f1", "v1")
	if err := h.st.Quarantine(ctx, "f1", "poison"); err != nil { // tagged v1, then failed
		h.Fatal(err)
	}
	tag("m1", "v1")
	if _, err := h.st.MarkMissing(ctx, []string{"m1"}); err != nil { // tagged v1, missing
		h.Fatal(err)
	}
	// cp: tagged v1 with a checkpoint (stored as given).
	cp := NewFile("cp")
	cp.NeedsTagging, cp.Tagged, cp.TaggedVersion, cp.LastTaggedAt, cp.Checkpoint = false, true, "v1", At(-time.Hour), "cp"
	// held: tagged v1 and claimed, a job at work on it.
	held := NewFile("held")
	held.Tagged, held.TaggedVersion = true, "v1"
	h.upsert(cp, held)
	h.claim("held", "i/w1", T0, time.Hour)
	// m1, tagged but gone, counts as invalid (store.ClassOf).
	h.wantCounts(store.Counts{Total: 7, Tagged: 5, Pending: 1, Claimed: 1})
	t1 := h.file("t1")
	if t1.Attempts != 2 || t1.CrashCount != 1 {
		h.Fatalf("t1 before = %+v, want 2 attempts and 1 crash", t1)
	}

	files, err := h.st.ListFiles(ctx, "", 0)
	if err != nil {
		h.Fatal(err)
	}
	if got := walkedAll(files).Stale(files, "v2"); !slices.Equal(got, []string{"cp", "held", "t1"}) {
		h.Fatalf("Stale = %v", got)
	}
	all := append(Keys(files), "unknown", "t1")
	if n, err := h.st.Retag(ctx, all, ""); err != nil || n != 0 {
		h.Fatalf("Retag(all, \"\") = %d, %v; want 0 (an unknown version changes nothing)", n, err)
	}
	n, err := h.st.Retag(ctx, all, "v2")
	if err != nil || n != 2 {
		h.Fatalf("Retag(all, v2) = %d, %v; want 2 (t1, cp; unknown and repeated keys ignored)", n, err)
	}
	exp := t1
	exp.Tagged, exp.NeedsTagging, exp.Attempts, exp.CrashCount = false, true, 0, 0
	h.wantFile("t1", exp) // version, tagging time and last error kept
	exp = cp
	exp.Tagged, exp.NeedsTagging = false, true
	h.wantFile("cp", exp) // the checkpoint kept
	for k, v := range map[string]string{"t1": "v1", "t2": "v2", "f1": "v1", "m1": "v1"} {
		if got, ok := tagsOf(h.T, h.st, k); ok && !mapsEqual(got, map[string]string{"nom_version": v}) {
			h.Fatalf("Tags(%s) = %v, want the %s tags kept", k, got, v)
		}
	}
	for _, k := range []string{"t2", "f1", "m1", "held"} {
		if f := h.file(k); !f.Tagged {
			h.Fatalf("%s changed: %+v", k, f)
		}
	}
	h.wantDiscover(T0, "", 10, "cp", "p", "t1")
	h.wantCounts(store.Counts{Total: 7, Tagged: 3, Pending: 3, Claimed: 1})
	if n, err := h.st.Retag(ctx, all, "v2"); err != nil || n != 0 {
		h.Fatalf("Retag again = %d, %v; want 0", n, err)
	}
	if n, err := h.st.Retag(ctx, nil, "v2"); err != nil || n != 0 {
		h.Fatalf("Retag(nil) = %d, %v", n, err)
	}
	// The claim goes: held is changed by the next call.
	h.release("held", "i/w1", nil)
	if n, err := h.st.Retag(ctx, all, "v2"); err != nil || n != 1 {
		h.Fatalf("Retag after the claim went = %d, %v; want 1 (held)", n, err)
	}
	h.wantDiscover(T0, "", 10, "cp", "held", "p", "t1")
	h.wantCounts(store.Counts{Total: 7, Tagged: 2, Pending: 4})
	// Completed by the new models: tagged again, with the new tags.
	h.claim("t1", "i/w2", T0, time.Hour)
	h.complete("t1", "i/w2", store.Completion{Tags: map[string]string{"nom_version": "v2"}, Version: "v2", At: At(time.Hour)})
	if f := h.file("t1"); !f.Tagged || f.NeedsTagging || f.TaggedVersion != "v2" || !SameTime(f.LastTaggedAt, At(time.Hour)) {
		h.Fatalf("t1 tagged again = %+v", f)
	}
	h.wantCounts(store.Counts{Total: 7, Tagged: 3, Pending: 3})
}

// testRetagRechecks: a file completed by the new model set between the
// listing and the call — or being tagged by it, claimed — is not changed.
func testRetagRechecks(h *h) {
	ctx := h.Context()
	h.upsertKeys("a", "b", "c")
	for _, k := range []string{"a", "b", "c"} {
		h.claim(k, "i/w0", T0, time.Hour)
		h.complete(k, "i/w0", store.Completion{Version: "v1", At: T0})
	}
	files, err := h.st.ListFiles(ctx, "", 0)
	if err != nil {
		h.Fatal(err)
	}
	stale := walkedAll(files).Stale(files, "v2")
	if !slices.Equal(stale, []string{"a", "b", "c"}) {
		h.Fatalf("Stale = %v", stale)
	}
	// Another process's scan sends a and b back to work; a worker tags a
	// with the new models and is at work on b.
	if n, err := h.st.Retag(ctx, []string{"a", "b"}, "v2"); err != nil || n != 2 {
		h.Fatalf("other Retag = %d, %v", n, err)
	}
	h.claim("a", "i/w1", T0, time.Hour)
	h.complete("a", "i/w1", store.Completion{Version: "v2", At: At(time.Minute)})
	h.claim("b", "i/w1", T0, time.Hour)
	n, err := h.st.Retag(ctx, stale, "v2")
	if err != nil || n != 1 {
		h.Fatalf("Retag(stale listing) = %d, %v; want 1 (c only)", n, err)
	}
	if f := h.file("a"); !f.Tagged || f.NeedsTagging || f.TaggedVersion != "v2" {
		h.Fatalf("a, completed with v2 meanwhile, changed: %+v", f)
	}
	h.wantHeld("b")
	h.complete("b", "i/w1", store.Completion{Version: "v2", At: At(time.Minute)})
	h.wantDiscover(T0, "", 10, "c")
	h.wantCounts(store.Counts{Total: 3, Tagged: 2, Pending: 1})
}

// --- Leases and cleanup ---

func testRenewLeases(h *h) {
	h.upsertKeys("a", "b", "c", "d")
	h.claim("a", "i/w0", T0, 30*time.Second)
	h.claim("b", "i/w1", T0, 30*time.Second)
	h.claim("c", "i/w2", T0, 30*time.Second)
	h.claim("d", "i/w0", T0, 30*time.Second)
	renew := func(ids []string, until time.Time, want int) {
		h.Helper()
		n, err := h.st.RenewLeases(h.Context(), ids, until)
		if err != nil || n != want {
			h.Fatalf("RenewLeases(%v, T0%+v) = %d %v, want %d", ids, until.Sub(T0), n, err, want)
		}
	}
	renew([]string{"i/w0", "i/w1", "i/nobody"}, At(40*time.Second), 3)
	// Never shortens a lease; an equal lease is not renewed either.
	renew([]string{"i/w0"}, At(35*time.Second), 0)
	renew([]string{"i/w0", "i/w1"}, At(40*time.Second), 0)
	renew(nil, At(time.Hour), 0)
	renew([]string{}, At(time.Hour), 0)
	renew([]string{"j/w0"}, At(time.Hour), 0)
	// Leases as seen by cleanup.
	removed := h.cleanup(At(30*time.Second + time.Millisecond))
	if len(removed) != 1 || removed[0].FileKey != "c" || !SameTime(removed[0].LeaseUntil, At(30*time.Second)) {
		h.Fatalf("cleanup at 30.001s = %+v, want only c", removed)
	}
	if removed := h.cleanup(At(40 * time.Second)); len(removed) != 0 {
		h.Fatalf("cleanup at 40s = %+v, want none", removed)
	}
	removed = h.cleanup(At(40*time.Second + time.Millisecond))
	if !slices.Equal(claimKeys(removed), []string{"a", "b", "d"}) {
		h.Fatalf("cleanup at 40.001s = %+v", removed)
	}
	for _, c := range removed {
		if !SameTime(c.LeaseUntil, At(40*time.Second)) || !SameTime(c.ClaimedAt, T0) {
			h.Fatalf("renewed claim = %+v", c)
		}
	}
}

// KeepClaim answers whether ref holds its claim: it extends the holder's
// lease (never shortening it, an equal lease kept), and refuses with
// ErrClaimLost, changing nothing, for another worker's claim, an unknown
// file, a released claim and one that cleanup removed. A lease that ran out
// but was not cleaned up yet is still held, and extended.
func testKeepClaim(h *h) {
	h.upsertKeys("a", "b", "c")
	h.claim("a", "i/w0", T0, 30*time.Second)
	h.claim("b", "i/w1", T0, 30*time.Second)
	h.claim("c", "i/w2", T0, 10*time.Second)
	keep := func(key, worker string, until time.Time, want error) {
		h.Helper()
		err := h.st.KeepClaim(h.Context(), store.Ref{FileKey: key, WorkerID: worker}, until)
		if !errors.Is(err, want) || (want == nil && err != nil) {
			h.Fatalf("KeepClaim(%s, %s, T0%+v) = %v, want %v", key, worker, until.Sub(T0), err, want)
		}
	}
	keep("a", "i/w0", At(40*time.Second), nil)
	keep("a", "i/w0", At(40*time.Second), nil)           // an equal lease: still held
	keep("a", "i/w0", At(35*time.Second), nil)           // held; the lease stays at 40 s (cleanup at 40 s below)
	keep("a", "i/w1", At(time.Hour), store.ErrClaimLost) // another worker's claim
	keep("b", "j/w1", At(time.Hour), store.ErrClaimLost) // same component, other host
	keep("nosuch", "i/w0", At(time.Hour), store.ErrClaimLost)
	h.release("b", "i/w1", nil)
	keep("b", "i/w1", At(time.Hour), store.ErrClaimLost)
	// c's lease ran out at 10 s; until cleanup runs, c is still i/w2's.
	keep("c", "i/w2", At(50*time.Second), nil)
	if removed := h.cleanup(At(40 * time.Second)); len(removed) != 0 {
		h.Fatalf("cleanup at 40s = %+v, want none", removed)
	}
	removed := h.cleanup(At(40*time.Second + time.Millisecond))
	if len(removed) != 1 || removed[0].FileKey != "a" || !SameTime(removed[0].LeaseUntil, At(40*time.Second)) {
		h.Fatalf("cleanup at 40.001s = %+v, want a with its lease at 40s", removed)
	}
	keep("a", "i/w0", At(time.Hour), store.ErrClaimLost)
	if removed := h.cleanup(At(50*time.Second + time.Millisecond)); len(removed) != 1 || removed[0].FileKey != "c" {
		h.Fatalf("cleanup at 50.001s = %+v, want c", removed)
	}
	h.claim("a", "j/w9", At(41*time.Second), 30*time.Second)
	keep("a", "i/w0", At(time.Hour), store.ErrClaimLost) // the file is someone else's now
}

// A claim whose lease ran out still holds its file until CleanupClaims
// deletes it: neither discovery nor another claim looks at lease_until, so
// the cleanup is the one place that ends an abandoned claim (and reports
// it), and the file is rediscoverable at most one cleanup period later. A
// cleanup with a zero expiry time expires nothing.
func testExpiredClaimHeldUntilCleanup(h *h) {
	h.upsertKeys("a")
	h.claim("a", "i/w0", T0, 30*time.Second)
	later := At(time.Minute)
	h.wantDiscover(later, "", 10)
	h.claimErr("a", "j/w1", later, store.ErrConflict)
	// A zero time counts no lease as expired (a cleanup after store trouble).
	if got := h.cleanup(time.Time{}); len(got) != 0 {
		h.Fatalf("cleanup with expiry off removed %v", claimKeys(got))
	}
	if got := claimKeys(h.cleanup(later)); !slices.Equal(got, []string{"a"}) {
		h.Fatalf("cleanup removed %v, want [a]", got)
	}
	h.wantDiscover(later, "", 10, "a")
	h.claim("a", "j/w1", later, 30*time.Second)
}

func testCleanupClaims(h *h) {
	h.upsertKeys("expired", "live", "renewed", "quarantined", "invalid", "edge", "released")
	h.claim("live", "i/w1", T0, time.Minute)
	h.claim("expired", "i/w0", T0, 10*time.Second)
	h.claim("renewed", "i/w2", T0, 10*time.Second)
	h.claim("quarantined", "i/w1", T0, time.Minute)
	h.claim("invalid", "i/w1", T0, time.Minute)
	h.claim("edge", "i/w3", T0, 20*time.Second)
	h.claim("released", "i/w4", T0, 10*time.Second)
	if n, err := h.st.RenewLeases(h.Context(), []string{"i/w2"}, At(40*time.Second)); err != nil || n != 1 {
		h.Fatalf("RenewLeases = %d %v", n, err)
	}
	if err := h.st.Quarantine(h.Context(), "quarantined", "crashed a worker"); err != nil {
		h.Fatal(err)
	}
	// The file changed on disk and is no longer a valid audio file.
	inv := NewFile("invalid")
	inv.Size, inv.IsValid = 5, false
	h.upsert(inv)
	h.release("released", "i/w4", nil)

	removed := h.cleanup(At(20 * time.Second))
	want := []store.Claim{
		claimOf("expired", "i/w0", T0, 10*time.Second),
		claimOf("invalid", "i/w1", T0, time.Minute),
		claimOf("quarantined", "i/w1", T0, time.Minute),
	}
	if len(removed) != len(want) {
		h.Fatalf("removed %v, want %v", claimKeys(removed), claimKeys(want))
	}
	for i, c := range removed {
		w := want[i]
		if c.FileKey != w.FileKey || c.WorkerID != w.WorkerID || !SameTime(c.ClaimedAt, w.ClaimedAt) || !SameTime(c.LeaseUntil, w.LeaseUntil) {
			h.Fatalf("removed[%d] = %+v, want %+v", i, c, w)
		}
	}
	// Kept: live, renewed, and edge (lease_until == now is not yet expired).
	for _, k := range []string{"edge", "live", "renewed"} {
		h.wantHeld(k)
	}
	h.wantCounts(store.Counts{Total: 7, Failed: 1, Pending: 5, Claimed: 3})
	h.wantDiscover(At(20*time.Second), "", 10, "expired", "released")
	if removed := h.cleanup(At(20 * time.Second)); len(removed) != 0 {
		h.Fatalf("second cleanup at the same time = %+v", removed)
	}
	removed = h.cleanup(At(20*time.Second + time.Millisecond))
	if !slices.Equal(claimKeys(removed), []string{"edge"}) {
		h.Fatalf("cleanup at 20.001s = %v", claimKeys(removed))
	}
	// A claim completed meanwhile is not reported; the holder of an expired
	// and cleaned-up claim has lost it.
	h.complete("live", "i/w1", store.Completion{Version: "v", At: At(21 * time.Second)})
	err := h.st.Complete(h.Context(), store.Ref{FileKey: "edge", WorkerID: "i/w3"}, store.Completion{Version: "v"})
	wantSemantic(h.T, "Complete after cleanup", err, store.ErrClaimLost)
	removed = h.cleanup(At(time.Hour))
	if !slices.Equal(claimKeys(removed), []string{"renewed"}) {
		h.Fatalf("final cleanup = %v", claimKeys(removed))
	}
	h.wantCounts(store.Counts{Total: 7, Tagged: 1, Failed: 1, Pending: 4})
}

// --- Counts ---

func testCounts(h *h) {
	h.wantCounts(store.Counts{})
	tagged := NewFile("t1")
	tagged.NeedsTagging, tagged.Tagged = false, true
	invalid := NewFile("x1")
	invalid.IsValid, invalid.NeedsTagging = false, false
	failed := NewFile("f1")
	failed.Failed = true
	retry := NewFile("r1")
	retry.NextRetryAt = At(time.Hour)
	h.upsert(tagged, invalid, failed, retry, NewFile("p1"), NewFile("p2"), NewFile("p3"))
	// Tagged, failed, pending (needs tagging, valid, not failed: claimed and
	// retry-pending files included); invalid files count only in Total.
	h.wantCounts(store.Counts{Total: 7, Tagged: 1, Failed: 1, Pending: 4})
	if n := h.counts().Invalid(); n != 1 {
		h.Fatalf("Invalid() = %d, want 1", n)
	}
	h.claim("p1", "i/w0", T0, time.Minute)
	h.claim("p2", "i/w1", T0, time.Minute)
	h.wantCounts(store.Counts{Total: 7, Tagged: 1, Failed: 1, Pending: 4, Claimed: 2})
	h.complete("p1", "i/w0", store.Completion{Version: "v", At: T0})
	h.release("p2", "i/w1", &store.FileUpdate{Failed: true})
	h.wantCounts(store.Counts{Total: 7, Tagged: 2, Failed: 2, Pending: 2})
}

// testCountsFilesGone: a file that is not valid (gone at the last scan)
// counts as invalid whatever it was before, tagged and failed files
// included (store.ClassOf), so that a person sees the files that left;
// found again unchanged, each is back in its class.
func testCountsFilesGone(h *h) {
	h.upsertKeys("tagged", "failed", "pending", "kept")
	h.claim("tagged", "i/w0", T0, time.Minute)
	h.complete("tagged", "i/w0", store.Completion{Version: "v", At: T0})
	h.claim("failed", "i/w0", T0, time.Minute)
	h.release("failed", "i/w0", &store.FileUpdate{Failed: true})
	all := store.Counts{Total: 4, Tagged: 1, Failed: 1, Pending: 2}
	h.wantCounts(all)
	if n, err := h.st.MarkMissing(h.Context(), []string{"tagged", "failed", "pending"}); err != nil || n != 3 {
		h.Fatalf("MarkMissing = %d, %v; want 3", n, err)
	}
	h.wantCounts(store.Counts{Total: 4, Pending: 1})
	if n := h.counts().Invalid(); n != 3 {
		h.Fatalf("Invalid() = %d, want 3 (the tagged, failed and pending files gone)", n)
	}
	h.upsertKeys("tagged", "failed", "pending")
	h.wantCounts(all)
}

// --- Meta, restart states, history ---

func testMeta(h *h) {
	ctx := h.Context()
	if v, ok, err := h.st.GetMeta(ctx, store.MetaWorkerEnabled); ok || err != nil || v != "" {
		h.Fatalf("GetMeta of nothing = %q %v %v", v, ok, err)
	}
	for _, kv := range [][2]string{
		{store.MetaWorkerEnabled, "false"},
		{store.MetaGPUHealth, `{"available":true,"at_ms":1767225600000}`},
		{"empty", ""},
		{store.MetaWorkerEnabled, "true"}, // overwrite
	} {
		if err := h.st.SetMeta(ctx, kv[0], kv[1]); err != nil {
			h.Fatalf("SetMeta(%s): %v", kv[0], err)
		}
	}
	for k, want := range map[string]string{store.MetaWorkerEnabled: "true", store.MetaGPUHealth: `{"available":true,"at_ms":1767225600000}`, "empty": ""} {
		if v, ok, err := h.st.GetMeta(ctx, k); !ok || err != nil || v != want {
			h.Fatalf("GetMeta(%s) = %q %v %v, want %q", k, v, ok, err, want)
		}
	}
	if _, ok, err := h.st.GetMeta(ctx, "nope"); ok || err != nil {
		h.Fatalf("GetMeta(nope) = %v %v", ok, err)
	}
}

func testSwapMeta(h *h) {
	ctx := h.Context()
	swap := func(key, old, value string, want bool) {
		h.Helper()
		got, err := h.st.SwapMeta(ctx, key, old, value)
		if err != nil || got != want {
			h.Fatalf("SwapMeta(%s, %q → %q) = %v %v, want %v", key, old, value, got, err, want)
		}
	}
	get := func(key, want string) {
		h.Helper()
		if v, ok, err := h.st.GetMeta(ctx, key); !ok || err != nil || v != want {
			h.Fatalf("GetMeta(%s) = %q %v %v, want %q", key, v, ok, err, want)
		}
	}
	swap("node:a", "x", "y", false) // absent: no old value matches
	if _, ok, _ := h.st.GetMeta(ctx, "node:a"); ok {
		h.Fatal("a refused swap created the key")
	}
	swap("node:a", "", "one", true) // absent → set
	swap("node:a", "", "two", false)
	get("node:a", "one")
	swap("node:a", "two", "three", false) // stale old value
	get("node:a", "one")
	swap("node:a", "one", "two", true)
	get("node:a", "two")
	swap("node:a", "two", "two", true) // same value: still a match
	if err := h.st.SetMeta(ctx, "node:b", ""); err != nil {
		h.Fatal(err)
	}
	swap("node:b", "", "one", false) // present with an empty value is not absent
	get("node:b", "")
}

func testRestartState(h *h) {
	ctx := h.Context()
	if st, ok, err := h.st.LoadRestart(ctx, "n/worker:discovery:0"); ok || err != nil || st.RestartCount != 0 || len(st.Recent) != 0 {
		h.Fatalf("LoadRestart of nothing = %+v %v %v", st, ok, err)
	}
	s := restart.State{
		Component: "worker:discovery:0", RestartCount: 7, Consecutive: 3,
		Recent:            []int64{At(-4 * time.Minute).UnixMilli(), At(-time.Minute).UnixMilli(), At(0).UnixMilli()},
		LastRestartWallMs: At(0).UnixMilli(), FailedAtWallMs: At(time.Second).UnixMilli(),
		FailureReason: "5 restarts within 5m0s", UpdatedAtWallMs: At(2 * time.Second).UnixMilli(),
	}
	if err := h.st.SaveRestart(ctx, "n/worker:discovery:0", s); err != nil {
		h.Fatal(err)
	}
	want := s
	want.Recent = slices.Clone(s.Recent)
	s.Recent[0] = 99 // the caller's slice is not aliased
	got, ok, err := h.st.LoadRestart(ctx, "n/worker:discovery:0")
	if err != nil || !ok || !restartEqual(got, want) {
		h.Fatalf("LoadRestart = %+v %v %v, want %+v", got, ok, err, want)
	}
	got.Recent[1] = 77
	if again, _, _ := h.st.LoadRestart(ctx, "n/worker:discovery:0"); !restartEqual(again, want) {
		h.Fatalf("loaded state aliases the stored one: %+v", again)
	}
	// Overwrite: a manual reset clears everything.
	reset := restart.State{Component: "worker:discovery:0", UpdatedAtWallMs: At(time.Hour).UnixMilli()}
	if err := h.st.SaveRestart(ctx, "n/worker:discovery:0", reset); err != nil {
		h.Fatal(err)
	}
	if got, ok, err := h.st.LoadRestart(ctx, "n/worker:discovery:0"); err != nil || !ok || !restartEqual(got, reset) {
		h.Fatalf("after reset = %+v %v %v", got, ok, err)
	}
	// Keys are independent.
	other := restart.State{Component: "worker:discovery:1", RestartCount: 1, Recent: []int64{5}}
	if err := h.st.SaveRestart(ctx, "n/worker:discovery:1", other); err != nil {
		h.Fatal(err)
	}
	if got, ok, _ := h.st.LoadRestart(ctx, "n/worker:discovery:1"); !ok || !restartEqual(got, other) {
		h.Fatalf("other key = %+v", got)
	}
	if got, _, _ := h.st.LoadRestart(ctx, "n/worker:discovery:0"); !restartEqual(got, reset) {
		h.Fatalf("first key changed: %+v", got)
	}
}

func restartEqual(a, b restart.State) bool {
	return a.Component == b.Component && a.RestartCount == b.RestartCount && a.Consecutive == b.Consecutive &&
		slices.Equal(a.Recent, b.Recent) && a.LastRestartWallMs == b.LastRestartWallMs &&
		a.FailedAtWallMs == b.FailedAtWallMs && a.FailureReason == b.FailureReason && a.UpdatedAtWallMs == b.UpdatedAtWallMs
}

func testHistory(h *h) {
	ctx := h.Context()
	if err := h.st.AppendHistory(ctx, nil); err != nil {
		h.Fatalf("AppendHistory(nil) = %v", err)
	}
	rows := []store.HistoryRow{
		{At: T0, Instance: "host:1:0", Component: "worker:discovery:0", Status: "healthy"},
		{At: T0, Instance: "host:1:0", Component: "worker:discovery:1", Status: "pending"},
	}
	if err := h.st.AppendHistory(ctx, rows); err != nil {
		h.Fatal(err)
	}
	rows[0].Status = "mutated" // rows are only valid during the call
	if err := h.st.AppendHistory(ctx, []store.HistoryRow{{At: At(30 * time.Second), Instance: "host:1:0", Component: "worker:discovery:0", Status: "failed"}}); err != nil {
		h.Fatal(err)
	}
	got, ok := historyOf(h.T, h.st, 100)
	if !ok {
		return
	}
	want := []store.HistoryRow{
		{At: T0, Instance: "host:1:0", Component: "worker:discovery:0", Status: "healthy"},
		{At: T0, Instance: "host:1:0", Component: "worker:discovery:1", Status: "pending"},
		{At: At(30 * time.Second), Instance: "host:1:0", Component: "worker:discovery:0", Status: "failed"},
	}
	if len(got) != len(want) {
		h.Fatalf("history = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !SameTime(g.At, w.At) || g.Instance != w.Instance || g.Component != w.Component || g.Status != w.Status {
			h.Fatalf("history[%d] = %+v, want %+v", i, g, w)
		}
	}
	if last, _ := historyOf(h.T, h.st, 1); len(last) != 1 || last[0].Status != "failed" {
		h.Fatalf("RecentHistory(1) = %+v", last)
	}
}

// testHistoryAppendIdempotent: a row whose identity (instance, component,
// time in milliseconds) is stored already is skipped, whatever its status,
// as is the second of two such rows in one call: the monitor sends its
// buffer again after a failed call, and the store may have written it
// before its answer was lost. Rows differing in any part of the identity
// are kept; a pruned row's identity is free again.
func testHistoryAppendIdempotent(h *h) {
	ctx := h.Context()
	rows := []store.HistoryRow{
		{At: T0, Instance: "host:1:0", Component: "worker:discovery:0", Status: "healthy"},
		{At: T0, Instance: "host:1:0", Component: "worker:discovery:1", Status: "pending"},
		{At: T0, Instance: "host:2:0", Component: "worker:discovery:0", Status: "healthy"},
		{At: At(30 * time.Second), Instance: "host:1:0", Component: "worker:discovery:0", Status: "unhealthy"},
	}
	if err := h.st.AppendHistory(ctx, rows); err != nil {
		h.Fatal(err)
	}
	later := store.HistoryRow{At: At(time.Minute), Instance: "host:1:0", Component: "worker:discovery:0", Status: "failed"}
	same := rows[0]
	same.At, same.Status = same.At.Add(400*time.Microsecond), "failed" // the same millisecond: the same snapshot
	again := append(slices.Clone(rows), later, later, same)
	if err := h.st.AppendHistory(ctx, again); err != nil {
		h.Fatalf("AppendHistory(the batch again, plus one row) = %v", err)
	}
	if err := h.st.AppendHistory(ctx, rows[3:]); err != nil {
		h.Fatalf("AppendHistory(one row again) = %v", err)
	}
	want := append(slices.Clone(rows), later)
	h.wantHistory("after appending the batch again", want)

	if n, err := h.st.PruneHistory(ctx, At(2*time.Minute)); err != nil || n != len(want) {
		h.Fatalf("PruneHistory(2m) = %d, %v; want all %d rows", n, err, len(want))
	}
	if err := h.st.AppendHistory(ctx, rows[:1]); err != nil {
		h.Fatal(err)
	}
	h.wantHistory("after pruning and appending a pruned row again", rows[:1])
}

// wantHistory checks the store's history (when it can read it back) is
// want, oldest first.
func (h *h) wantHistory(what string, want []store.HistoryRow) {
	h.Helper()
	got, ok := historyOf(h.T, h.st, 100)
	if !ok {
		return
	}
	if len(got) != len(want) {
		h.Fatalf("history %s = %d rows %+v, want %d %+v", what, len(got), got, len(want), want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !SameTime(g.At, w.At) || g.Instance != w.Instance || g.Component != w.Component || g.Status != w.Status {
			h.Fatalf("history %s: row %d = %+v, want %+v (all: %+v)", what, i, g, w, got)
		}
	}
}

// testPruneHistory: rows taken before the cut are deleted, the cut itself
// and later rows kept, the count returned; pruning again deletes nothing.
func testPruneHistory(h *h) {
	ctx := h.Context()
	var rows []store.HistoryRow
	for i := range 25 {
		rows = append(rows, store.HistoryRow{At: At(time.Duration(i) * time.Minute), Instance: "host:1:0",
			Component: fmt.Sprintf("worker:discovery:%d", i%3), Status: "healthy"})
	}
	if err := h.st.AppendHistory(ctx, rows); err != nil {
		h.Fatal(err)
	}
	n, err := h.st.PruneHistory(ctx, At(10*time.Minute))
	if err != nil || n != 10 {
		h.Fatalf("PruneHistory(10m) = %d, %v; want 10 rows (0m…9m)", n, err)
	}
	if n, err := h.st.PruneHistory(ctx, At(10*time.Minute)); err != nil || n != 0 {
		h.Fatalf("PruneHistory(10m) again = %d, %v; want 0", n, err)
	}
	got, ok := historyOf(h.T, h.st, 100)
	if !ok {
		return
	}
	if len(got) != 15 || !SameTime(got[0].At, At(10*time.Minute)) || !SameTime(got[14].At, At(24*time.Minute)) {
		h.Fatalf("history after pruning = %d rows from %v; want 15 from 10m", len(got), got)
	}
	if n, err := h.st.PruneHistory(ctx, At(time.Hour)); err != nil || n != 15 {
		h.Fatalf("PruneHistory(1h) = %d, %v; want 15", n, err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func testListFiles(h *h) {
	h.upsertKeys("c", "a", "e", "b", "d")
	h.claim("b", "i/w0", T0, time.Minute)
	h.complete("b", "i/w0", store.Completion{Version: "v1", At: T0})
	list := func(after string, limit int) []string {
		h.Helper()
		fs, err := h.st.ListFiles(h.Context(), after, limit)
		if err != nil {
			h.Fatalf("ListFiles(%q, %d): %v", after, limit, err)
		}
		var keys []string
		for _, f := range fs {
			keys = append(keys, f.Key)
			if d := DiffFile(f, h.file(f.Key)); d != "" {
				h.Fatalf("ListFiles gives %s otherwise than File: %s", f.Key, d)
			}
		}
		return keys
	}
	for _, c := range []struct {
		after string
		limit int
		want  []string
	}{
		{"", 0, []string{"a", "b", "c", "d", "e"}}, // tagged files too
		{"", 2, []string{"a", "b"}},
		{"b", 2, []string{"c", "d"}},
		{"d", -1, []string{"e"}},
		{"e", 10, nil},
	} {
		if got := list(c.after, c.limit); !slices.Equal(got, c.want) {
			h.Fatalf("ListFiles(%q, %d) = %v, want %v", c.after, c.limit, got, c.want)
		}
	}
}

// testMissingAndBack: a file marked missing is neither discovered nor
// claimable, a claim on it is cleaned up, and an unchanged rescan makes it
// valid again with its tagging state kept.
func testMissingAndBack(h *h) {
	h.upsertKeys("gone", "pending", "held", "other")
	h.claim("gone", "i/w0", T0, time.Minute)
	h.complete("gone", "i/w0", store.Completion{Tags: map[string]string{"k": "v"}, Version: "v1", At: At(time.Second)})
	h.claim("held", "i/w1", T0, time.Minute)
	tagged := h.file("gone")

	n, err := h.st.MarkMissing(h.Context(), []string{"gone", "pending", "held", "unknown", "pending"})
	if err != nil || n != 3 {
		h.Fatalf("MarkMissing = %d, %v; want 3 (unknown keys ignored, a repeated key counted once)", n, err)
	}
	if n, err := h.st.MarkMissing(h.Context(), []string{"gone", "pending"}); err != nil || n != 0 {
		h.Fatalf("MarkMissing again = %d, %v; want 0", n, err)
	}
	for _, k := range []string{"gone", "pending", "held"} {
		if h.file(k).IsValid {
			h.Fatalf("%s still valid after MarkMissing", k)
		}
	}
	h.wantDiscover(T0, "", 10, "other")
	h.claimErr("pending", "i/w0", T0, store.ErrNotEligible)
	if got := claimKeys(h.cleanup(T0)); !slices.Equal(got, []string{"held"}) {
		h.Fatalf("cleanup after MarkMissing removed %v, want the claim on held", got)
	}

	// Back, unchanged: valid again, tagging state kept.
	h.upsertKeys("gone", "pending", "held")
	want := tagged
	h.wantFile("gone", want)
	if f := h.file("pending"); !f.IsValid || !f.NeedsTagging || f.Tagged {
		h.Fatalf("pending file back = %+v", f)
	}
	h.wantDiscover(T0, "", 10, "held", "other", "pending")
}

// testForgetMissing: only files that are not valid are forgotten, with
// their stored tags and their claims; one found again before the call is
// kept, and a forgotten file that comes back is a new file.
func testForgetMissing(h *h) {
	h.upsertKeys("back", "gone", "held", "valid")
	h.claim("gone", "i/w0", T0, time.Minute)
	h.complete("gone", "i/w0", store.Completion{Tags: map[string]string{"k": "v"}, Version: "v1", At: At(time.Second)})
	h.claim("held", "i/w1", T0, time.Minute)
	if _, err := h.st.MarkMissing(h.Context(), []string{"back", "gone", "held"}); err != nil {
		h.Fatal(err)
	}
	h.upsertKeys("back") // found again by a scan
	n, err := h.st.ForgetMissing(h.Context(), []string{"gone", "held", "back", "valid", "unknown", "gone"})
	if err != nil || n != 2 {
		h.Fatalf("ForgetMissing = %d, %v; want 2 (gone and held; valid, unknown and repeated keys ignored)", n, err)
	}
	h.wantNoFile("gone")
	h.wantNoFile("held")
	for _, k := range []string{"back", "valid"} {
		if f := h.file(k); !f.IsValid {
			h.Fatalf("%s: %+v, want it kept valid", k, f)
		}
	}
	if got, ok := tagsOf(h.T, h.st, "gone"); ok && len(got) != 0 {
		h.Fatalf("tags of a forgotten file still stored: %v", got)
	}
	if c, err := h.st.Counts(h.Context()); err != nil || c.Total != 2 || c.Pending != 2 || c.Claimed != 0 {
		h.Fatalf("Counts after ForgetMissing = %+v, %v; want 2 files, both pending, none claimed", c, err)
	}
	if n, err := h.st.ForgetMissing(h.Context(), []string{"gone", "held"}); err != nil || n != 0 {
		h.Fatalf("ForgetMissing again = %d, %v; want 0", n, err)
	}
	// Back: new files, no claim left over to refuse a worker.
	h.upsertKeys("gone", "held")
	if f := h.file("gone"); f.Tagged || !f.NeedsTagging || f.TaggedVersion != "" {
		h.Fatalf("forgotten file back = %+v, want a new file", f)
	}
	h.claim("held", "i/w2", T0, time.Minute)
	h.wantDiscover(T0, "", 10, "back", "gone", "valid")
}

// testMissingAndChanged: a missing file that comes back changed needs
// tagging again, like any changed file.
func testMissingAndChanged(h *h) {
	h.upsertKeys("f")
	h.claim("f", "i/w0", T0, time.Minute)
	h.complete("f", "i/w0", store.Completion{Version: "v1", At: T0})
	if _, err := h.st.MarkMissing(h.Context(), []string{"f"}); err != nil {
		h.Fatal(err)
	}
	changed := NewFile("f")
	changed.Size++
	h.upsert(changed)
	if f := h.file("f"); !f.IsValid || !f.NeedsTagging || f.Tagged || f.Size != changed.Size {
		h.Fatalf("changed file back = %+v", f)
	}
	h.wantDiscover(T0, "", 10, "f")
}

// testReleaseMissing: a job that found its file gone releases it as
// missing — not valid, not failed, its attempts and tagging state kept —
// and a rescan that finds it unchanged makes it eligible again.
func testReleaseMissing(h *h) {
	h.upsertKeys("gone", "other")
	h.claim("gone", "i/w0", T0, time.Minute)
	h.release("gone", "i/w0", &store.FileUpdate{Attempts: 1, Missing: true, LastError: "missing: not on disk"})
	f := h.file("gone")
	if f.IsValid || f.Failed || !f.NeedsTagging || f.Attempts != 1 || f.LastError != "missing: not on disk" {
		h.Fatalf("released missing: %+v", f)
	}
	h.wantDiscover(T0, "", 10, "other")
	if c, err := h.st.Counts(h.Context()); err != nil || c.Failed != 0 || c.Pending != 1 || c.Invalid() != 1 {
		h.Fatalf("Counts = %+v, %v: want the missing file neither failed nor pending", c, err)
	}
	h.upsertKeys("gone") // found again, unchanged
	if f := h.file("gone"); !f.IsValid || !f.NeedsTagging || f.Failed {
		h.Fatalf("back: %+v", f)
	}
	h.wantDiscover(T0, "", 10, "gone", "other")
	// A release without Missing leaves validity alone.
	h.claim("gone", "i/w0", T0, time.Minute)
	h.release("gone", "i/w0", &store.FileUpdate{Attempts: 2})
	if f := h.file("gone"); !f.IsValid {
		h.Fatalf("plain release made the file not valid: %+v", f)
	}
}

// testPathBytes: a path is bytes, as the file system has them — not
// always valid UTF-8 (a Latin-1 name from an old disk) — and comes back
// from every read exactly as written, or the file could not be opened.
func testPathBytes(h *h) {
	latin1 := NewFile("latin1")
	latin1.Path = "/music/caf\xe9/d\xe9j\xe0 vu.flac"
	utf := NewFile("utf8")
	utf.Path = "/music/café/déjà vu.flac"
	h.upsert(latin1, utf)
	for _, want := range []store.File{latin1, utf} {
		if got := h.file(want.Key).Path; got != want.Path {
			h.Fatalf("File(%s).Path = %q, want %q", want.Key, got, want.Path)
		}
	}
	files, err := h.st.Discover(h.Context(), T0, "", 10)
	if err != nil {
		h.Fatal(err)
	}
	listed, err := h.st.ListFiles(h.Context(), "", 10)
	if err != nil {
		h.Fatal(err)
	}
	for _, f := range append(files, listed...) {
		if want := map[string]string{"latin1": latin1.Path, "utf8": utf.Path}[f.Key]; f.Path != want {
			h.Fatalf("%s read back as %q, want %q", f.Key, f.Path, want)
		}
	}
}

// walkedAll is a scan whose walk found every one of files.
func walkedAll(files []store.File) inventory.Scan {
	scan := inventory.Scan{Seen: make(map[string]bool, len(files))}
	for _, f := range files {
		scan.Seen[f.Key] = true
	}
	return scan
}
