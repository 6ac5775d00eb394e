package storetest

import (
	"fmt"
	"slices"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// tagAs claims, as a tagging, and completes key with version.
func (h *h) tagAs(key, version string) {
	h.Helper()
	h.claim(key, "i/tagger", T0, time.Hour)
	h.complete(key, "i/tagger", store.Completion{Tags: map[string]string{"nom_version": version, "k": "v"}, Version: version, At: At(time.Second)})
}

// claimKind claims key for work of kind and fails the test on an error.
func (h *h) claimKind(kind store.JobKind, modelSet, key, worker string, now time.Time) store.File {
	h.Helper()
	c := claimOf(key, worker, now, time.Hour)
	c.Kind, c.ModelSet = kind, modelSet
	f, err := h.st.Claim(h.Context(), c)
	if err != nil {
		h.Fatalf("Claim(%s, kind %q): %v", key, kind, err)
	}
	if f.Key != key {
		h.Fatalf("Claim(%s, kind %q) returned file %q", key, kind, f.Key)
	}
	return f
}

// claimKindErr checks that a claim of kind on key fails with want.
func (h *h) claimKindErr(kind store.JobKind, modelSet, key string, now time.Time, want error) {
	h.Helper()
	c := claimOf(key, "i/probe", now, time.Hour)
	c.Kind, c.ModelSet = kind, modelSet
	_, err := h.st.Claim(h.Context(), c)
	wantSemantic(h.T, fmt.Sprintf("Claim(%s, kind %q, %q)", key, kind, modelSet), err, want)
}

func (h *h) markRetag(version string, want int, keys ...string) {
	h.Helper()
	n, err := h.st.MarkRetag(h.Context(), keys, version)
	if err != nil || n != want {
		h.Fatalf("MarkRetag(%v, %q) = %d, %v; want %d", keys, version, n, err, want)
	}
}

func (h *h) wantDiscoverRetag(now time.Time, after string, limit int, want ...string) {
	h.Helper()
	fs, err := h.st.DiscoverRetag(h.Context(), now, after, limit)
	if err != nil {
		h.Fatalf("DiscoverRetag: %v", err)
	}
	if got := Keys(fs); !slices.Equal(got, want) {
		h.Fatalf("DiscoverRetag(T0%+v, %q, %d) = %v, want %v", now.Sub(T0), after, limit, got, want)
	}
}

func (h *h) wantNeedsVector(modelSet string, now time.Time, after string, limit int, want ...string) {
	h.Helper()
	fs, err := h.st.NeedsVector(h.Context(), now, modelSet, after, limit)
	if err != nil {
		h.Fatalf("NeedsVector: %v", err)
	}
	if got := Keys(fs); !slices.Equal(got, want) {
		h.Fatalf("NeedsVector(%q, T0%+v, %q, %d) = %v, want %v", modelSet, now.Sub(T0), after, limit, got, want)
	}
}

func (h *h) wantJobCounts(modelSet string, want store.JobCounts) {
	h.Helper()
	got, err := h.st.CountJobs(h.Context(), modelSet)
	if err != nil || got != want {
		h.Fatalf("CountJobs(%q) = %+v, %v; want %+v", modelSet, got, err, want)
	}
}

// testMarkRetag: only files tagged by the version given, valid, not
// failed and not marked yet are marked, each counted once.
func testMarkRetag(h *h) {
	ctx := h.Context()
	h.upsertKeys("a", "b", "c", "f", "m", "p")
	for _, k := range []string{"a", "b", "f", "m"} {
		h.tagAs(k, "v1")
	}
	h.tagAs("c", "v2")
	if err := h.st.Quarantine(ctx, "f", "poison"); err != nil {
		h.Fatal(err)
	}
	if _, err := h.st.MarkMissing(ctx, []string{"m"}); err != nil {
		h.Fatal(err)
	}
	all := []string{"a", "b", "c", "f", "m", "p", "unknown", "a"}
	h.markRetag("", 0, all...)
	h.markRetag("v1", 2, all...) // a, b; c another version, f failed, m missing, p pending
	h.markRetag("v1", 0, all...) // marked already
	h.wantJobCounts("", store.JobCounts{Retag: 2})
	before := h.file("a")
	h.wantFile("a", before) // a mark changes nothing a File shows
	h.wantCounts(store.Counts{Total: 6, Tagged: 4, Failed: 0, Pending: 1})
	h.wantDiscover(T0, "", 0, "p") // a retag is not a tagging
}

// testRetagJob: marked files are discovered in key order and claimed as
// retags only; a retag claim survives cleanup while its file is marked;
// its completion records the tags and clears the mark.
func testRetagJob(h *h) {
	h.upsertKeys("a", "b", "c", "d", "p")
	for _, k := range []string{"a", "b", "c", "d"} {
		h.tagAs(k, "v1")
	}
	h.markRetag("v1", 3, "a", "b", "c")
	h.wantDiscoverRetag(T0, "", 0, "a", "b", "c")
	h.wantDiscoverRetag(T0, "", 2, "a", "b")
	h.wantDiscoverRetag(T0, "a", 0, "b", "c")
	h.claimKindErr(store.JobTag, "", "a", T0, store.ErrNotEligible)    // tagged: no tagging
	h.claimKindErr(store.JobRetag, "", "d", T0, store.ErrNotEligible)  // not marked
	h.claimKindErr(store.JobRetag, "", "p", T0, store.ErrNotEligible)  // pending, not tagged
	h.claimKindErr(store.JobVector, "", "a", T0, store.ErrNotEligible) // no model set
	f := h.claimKind(store.JobRetag, "", "a", "i/w0", T0)
	if !f.Tagged || f.TaggedVersion != "v1" {
		h.Fatalf("claimed for a retag: %+v", f)
	}
	h.wantHeld("a")
	h.wantDiscoverRetag(T0, "", 0, "b", "c")
	if gone := h.cleanup(At(time.Minute)); len(gone) != 0 {
		h.Fatalf("CleanupClaims deleted %+v, a live retag claim of a marked file", gone)
	}
	h.complete("a", "i/w0", store.Completion{Tags: map[string]string{"nom_version": "v1", "k": "new"}, Version: "v1", At: At(time.Minute),
		Claimed: &store.Stat{Size: f.Size, MtimeMs: f.MtimeMs}})
	if tags, ok := tagsOf(h.T, h.st, "a"); ok && tags["k"] != "new" {
		h.Fatalf("tags after the retag = %v", tags)
	}
	h.wantDiscoverRetag(T0, "", 0, "b", "c")
	h.wantJobCounts("", store.JobCounts{Retag: 2})
	h.markRetag("v1", 1, "a") // can be marked again

	// A failed retag waits for its skip time.
	h.claimKind(store.JobRetag, "", "b", "i/w0", T0)
	h.release("b", "i/w0", &store.FileUpdate{SkipUntil: At(time.Hour), LastError: "transient: x"})
	h.wantDiscoverRetag(T0, "", 0, "a", "c")
	h.claimKindErr(store.JobRetag, "", "b", T0, store.ErrNotEligible)
	h.wantDiscoverRetag(At(time.Hour), "", 0, "a", "b", "c")
	if got := h.file("b"); !got.Tagged || got.Failed {
		h.Fatalf("b after a failed retag = %+v, want tagged, not failed", got)
	}

	// A retag claim on a file that changed (tagged no more) is cleaned up.
	h.claimKind(store.JobRetag, "", "c", "i/w1", T0)
	changed := NewFile("c")
	changed.Size++
	h.upsert(changed)
	if gone := h.cleanup(At(time.Minute)); len(gone) != 1 || gone[0].FileKey != "c" || gone[0].Kind != store.JobRetag {
		h.Fatalf("CleanupClaims = %+v, want c's retag claim", gone)
	}
	h.wantDiscoverRetag(At(time.Hour), "", 0, "a", "b")
}

// testReleaseReanalyze: a file a job found changed since its tags goes
// back to full analysis, its mark cleared.
func testReleaseReanalyze(h *h) {
	h.upsertKeys("a", "b")
	h.tagAs("a", "v1")
	h.tagAs("b", "v1")
	h.markRetag("v1", 2, "a", "b")
	f := h.claimKind(store.JobRetag, "", "a", "i/w0", T0)
	h.release("a", "i/w0", &store.FileUpdate{Reanalyze: true, LastError: "changed since tagged",
		Claimed: &store.Stat{Size: f.Size, MtimeMs: f.MtimeMs}})
	got := h.file("a")
	if got.Tagged || !got.NeedsTagging || got.Failed || !got.IsValid {
		h.Fatalf("a after Reanalyze = %+v, want pending", got)
	}
	h.wantDiscover(T0, "", 0, "a")
	h.wantDiscoverRetag(T0, "", 0, "b")
	h.wantCounts(store.Counts{Total: 2, Tagged: 1, Pending: 1})
	h.wantJobCounts("", store.JobCounts{Retag: 1})
	// Tagged again, it is not marked.
	h.tagAs("a", "v1")
	h.wantDiscoverRetag(T0, "", 0, "b")
}

// testNeedsVector: files tagged by the model set without its vector, in
// key order; a vector claim holds the file until its vector is put and
// the claim released.
func testNeedsVector(h *h) {
	ctx := h.Context()
	h.upsertKeys("a", "b", "c", "d", "e", "f", "p")
	for _, k := range []string{"a", "b", "c", "e", "f"} {
		h.tagAs(k, "v1")
	}
	h.tagAs("d", "v2")
	h.putVector("b", "v1", 1, 0)
	h.putVector("c", "v2", 0, 1) // another model set's: c still needs one
	if err := h.st.Quarantine(ctx, "f", "poison"); err != nil {
		h.Fatal(err)
	}
	h.wantNeedsVector("v1", T0, "", 0, "a", "c", "e")
	h.wantNeedsVector("v1", T0, "", 2, "a", "c")
	h.wantNeedsVector("v1", T0, "a", 0, "c", "e")
	h.wantNeedsVector("v2", T0, "", 0, "d")
	h.wantNeedsVector("", T0, "", 0)
	h.wantJobCounts("v1", store.JobCounts{Vector: 3})
	h.wantDiscover(T0, "", 0, "p")

	h.claimKindErr(store.JobVector, "v1", "b", T0, store.ErrNotEligible) // has its vector
	h.claimKindErr(store.JobVector, "v1", "d", T0, store.ErrNotEligible) // tagged by v2
	h.claimKindErr(store.JobVector, "v1", "p", T0, store.ErrNotEligible) // not tagged
	h.claimKindErr(store.JobVector, "v1", "f", T0, store.ErrNotEligible) // failed
	h.claimKindErr(store.JobRetag, "", "a", T0, store.ErrNotEligible)    // not marked
	f := h.claimKind(store.JobVector, "v1", "a", "i/w0", T0)
	if !f.Tagged || f.TaggedVersion != "v1" {
		h.Fatalf("claimed for a vector: %+v", f)
	}
	h.wantHeld("a")
	h.wantNeedsVector("v1", T0, "", 0, "c", "e")
	h.wantJobCounts("v1", store.JobCounts{Vector: 3}) // claimed, not done
	if gone := h.cleanup(At(time.Minute)); len(gone) != 0 {
		h.Fatalf("CleanupClaims deleted %+v, a live vector claim of a tagged file", gone)
	}
	h.putVector("a", "v1", 0.6, 0.8)
	h.release("a", "i/w0", nil)
	h.wantNeedsVector("v1", T0, "", 0, "c", "e")
	h.wantJobCounts("v1", store.JobCounts{Vector: 2})
	if got := h.file("a"); !got.Tagged || got.LastTaggedAt.After(At(time.Second)) {
		h.Fatalf("a after its vector = %+v, want tagged as before", got)
	}

	// A failed vector job waits for its skip time; the file stays tagged.
	h.claimKind(store.JobVector, "v1", "c", "i/w0", T0)
	h.release("c", "i/w0", &store.FileUpdate{SkipUntil: At(time.Hour), LastError: "vector: transient: x"})
	h.wantNeedsVector("v1", T0, "", 0, "e")
	h.wantNeedsVector("v1", At(time.Hour), "", 0, "c", "e")
	h.wantJobCounts("v1", store.JobCounts{Vector: 2})

	// A vector claim on a file that failed meanwhile is cleaned up.
	h.claimKind(store.JobVector, "v1", "e", "i/w1", T0)
	if err := h.st.Quarantine(ctx, "e", "poison"); err != nil {
		h.Fatal(err)
	}
	if gone := h.cleanup(At(time.Minute)); len(gone) != 1 || gone[0].FileKey != "e" || gone[0].Kind != store.JobVector {
		h.Fatalf("CleanupClaims = %+v, want e's vector claim", gone)
	}
	// A crashed vector job's file counts a crash, as a tagging's does.
	h.claimKind(store.JobVector, "v1", "c", "i/w2", At(time.Hour))
	rel := h.releaseWorker("i/w2", store.Death{}, &store.Crash{QuarantineAt: 2, Reason: "crashed a worker"})
	if len(rel) != 1 || rel[0].FileKey != "c" || rel[0].CrashCount != 1 {
		h.Fatalf("ReleaseWorker = %+v", rel)
	}
	h.wantNeedsVector("v1", At(time.Hour), "", 0, "c")
}
