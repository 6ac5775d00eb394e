package storetest

import (
	"slices"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// releaseWorker calls ReleaseWorker and fails the test on an error.
func (h *h) releaseWorker(worker string, d store.Death, crash *store.Crash) []store.Released {
	h.Helper()
	rel, err := h.st.ReleaseWorker(h.Context(), worker, d, crash)
	if err != nil {
		h.Fatalf("ReleaseWorker(%s, %+v): %v", worker, d, err)
	}
	return rel
}

func (h *h) wantReleased(worker string, d store.Death, crash *store.Crash, want ...store.Released) {
	h.Helper()
	if got := h.releaseWorker(worker, d, crash); !slices.Equal(got, want) {
		h.Fatalf("ReleaseWorker(%s, %+v) = %+v, want %+v", worker, d, got, want)
	}
}

// testReleaseWorkerRetry: a ReleaseWorker tried again for the same death
// — its first answer lost after the commit — answers what the first call
// released and quarantined, however often it is repeated, and changes
// nothing more (no crash counted twice). Claims of the worker id found by
// a retry are released and added to the answer. The receipt is per worker
// id and per death; without a death ID nothing is remembered.
func testReleaseWorkerRetry(h *h) {
	crash := &store.Crash{QuarantineAt: 2, Reason: "crashed a worker"}
	h.upsertKeys("a", "b", "c", "d")
	h.claim("a", "i/w0", T0, time.Minute)
	h.wantReleased("i/w0", store.Death{}, crash, store.Released{FileKey: "a", CrashCount: 1})

	h.claim("b", "i/w0", T0, time.Minute)
	h.claim("a", "i/w0", T0, time.Minute)
	d1 := store.Death{ID: "2@1", At: T0}
	first := []store.Released{{FileKey: "a", CrashCount: 2, Quarantined: true}, {FileKey: "b", CrashCount: 1}}
	h.wantReleased("i/w0", d1, crash, first...)
	if _, ok, err := h.st.GetMeta(h.Context(), store.ReceiptKey("i/w0")); err != nil || !ok {
		h.Fatalf("no receipt in meta under %s: %v %v", store.ReceiptKey("i/w0"), ok, err)
	}
	for range 2 {
		h.wantReleased("i/w0", d1, crash, first...)
	}
	exp := NewFile("a")
	exp.CrashCount, exp.Failed, exp.LastError = 2, true, "crashed a worker"
	h.wantFile("a", exp)
	exp = NewFile("b")
	exp.CrashCount = 1
	h.wantFile("b", exp)

	// A claim of the worker id that a retry finds is released with it and
	// joins the receipt.
	h.claim("c", "i/w0", T0, time.Minute)
	grown := []store.Released{first[0], first[1], {FileKey: "c", CrashCount: 1}}
	h.wantReleased("i/w0", d1, crash, grown...)
	h.wantReleased("i/w0", d1, crash, grown...)
	h.wantDiscover(T0, "", 10, "b", "c", "d")

	// Another worker id, or another death of the same one: not a retry.
	h.wantReleased("i/w1", d1, crash)
	h.wantReleased("i/w0", store.Death{ID: "3@5", At: At(5 * time.Second)}, crash)

	// Without a death ID: nothing remembered.
	h.claim("d", "i/w2", T0, time.Minute)
	h.wantReleased("i/w2", store.Death{}, nil, store.Released{FileKey: "d"})
	h.wantReleased("i/w2", store.Death{}, nil)
	h.wantCounts(store.Counts{Total: 4, Failed: 1, Pending: 3})
}

// testReleaseWorkerReceiptsPruned: a call that writes a receipt deletes the
// receipts of deaths more than store.ReceiptKeep before its own; a retry
// then answers only what it releases itself. Younger receipts stay.
func testReleaseWorkerReceiptsPruned(h *h) {
	h.upsertKeys("a", "b", "c", "d")
	old := store.Death{ID: "1@0", At: T0}
	young := store.Death{ID: "1@2h", At: At(2 * time.Hour)}
	// edge is exactly ReceiptKeep before late (below): kept.
	edge := store.Death{ID: "1@1ms", At: At(time.Millisecond)}
	h.claim("a", "i/w0", T0, time.Minute)
	h.wantReleased("i/w0", old, nil, store.Released{FileKey: "a"})
	h.claim("d", "i/w3", At(time.Millisecond), time.Minute)
	h.wantReleased("i/w3", edge, nil, store.Released{FileKey: "d"})
	h.claim("b", "i/w1", At(2*time.Hour), time.Minute)
	h.wantReleased("i/w1", young, nil, store.Released{FileKey: "b"})

	// Released nothing: no receipt written, none deleted.
	late := store.Death{ID: "1@late", At: At(store.ReceiptKeep + time.Millisecond)}
	h.wantReleased("i/w2", late, nil)
	h.wantReleased("i/w0", old, nil, store.Released{FileKey: "a"})

	// Other meta keys, before and after the receipts' and holding an old
	// at_ms as receipts do, are not receipts: the prune leaves them.
	others := map[string]string{store.GPUHealthKey("h9"): `{"at_ms":0}`, "zz:note": `{"at_ms":0}`}
	for k, v := range others {
		if err := h.st.SetMeta(h.Context(), k, v); err != nil {
			h.Fatal(err)
		}
	}
	h.claim("c", "i/w2", At(store.ReceiptKeep), time.Minute)
	h.wantReleased("i/w2", late, nil, store.Released{FileKey: "c"})
	for k, want := range others {
		if v, ok, err := h.st.GetMeta(h.Context(), k); err != nil || !ok || v != want {
			h.Fatalf("meta %s after a receipts' prune = %q %v %v, want %q", k, v, ok, err, want)
		}
	}
	h.wantReleased("i/w0", old, nil)
	if _, ok, err := h.st.GetMeta(h.Context(), store.ReceiptKey("i/w0")); err != nil || ok {
		h.Fatalf("receipt past ReceiptKeep still in meta: %v %v", ok, err)
	}
	h.wantReleased("i/w1", young, nil, store.Released{FileKey: "b"})
	h.wantReleased("i/w2", late, nil, store.Released{FileKey: "c"})
	h.wantReleased("i/w3", edge, nil, store.Released{FileKey: "d"})
}
