package arangodb

// Behaviour of a real server that the fake models on purpose: FOR loops
// that read the query's snapshot rather than its own writes, a commit that
// fails, and a write statement whose answer comes in several batches.
// (Write-write conflicts: TestContractFakeConflicts.)

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/adapters/storetest"
	"github.com/nomarr/nomarr/core/store"
)

// RetryFailed, MarkMissing and Retag with a key given twice count the file once,
// as the port says (how many files changed) and the other stores do. A
// server's qRetryFailed/qMarkMissing read every iteration from the query's
// snapshot (the fake too, snapshotKeyedUpdate): given a key twice, they
// would update and count the file twice; the adapter passes each key once.
func TestRepeatedKeysCountedOnce(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f)
	ref := memstore.New(1)
	for _, st := range []store.Store{s, ref} {
		if _, err := st.UpsertFiles(bg, []store.File{storetest.NewFile("a"), storetest.NewFile("b")}); err != nil {
			t.Fatal(err)
		}
		if err := st.Quarantine(bg, "a", "x"); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{"a", "a"}
	want, _ := ref.RetryFailed(bg, keys)
	got, err := s.RetryFailed(bg, keys)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("RetryFailed(%q) = %d on a server whose FOR loops read the query's snapshot, want %d (one file changed; memstore and SQLite say %d)", keys, got, want, want)
	}
	keys = []string{"b", "b"}
	want, _ = ref.MarkMissing(bg, keys)
	got, err = s.MarkMissing(bg, keys)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("MarkMissing(%q) = %d on a server whose FOR loops read the query's snapshot, want %d", keys, got, want)
	}
	for _, st := range []store.Store{s, ref} {
		if _, err := st.UpsertFiles(bg, []store.File{{Key: "c", IsValid: true, Tagged: true, TaggedVersion: "v1"}}); err != nil {
			t.Fatal(err)
		}
	}
	keys = []string{"c", "c"}
	want, _ = ref.Retag(bg, keys, "v2")
	got, err = s.Retag(bg, keys, "v2")
	if err != nil {
		t.Fatal(err)
	}
	if got != want || want != 1 {
		t.Errorf("Retag(%q) = %d on a server whose FOR loops read the query's snapshot, want %d (memstore: %d)", keys, got, 1, want)
	}
}

// A stream transaction whose commit fails (a 503 from a proxy or
// coordinator, a transport error, the deadline) is aborted. Left open, a
// server keeps it, with the key locks of every document it wrote (here
// claim_a, library_files/a, file_tags/a), until the streaming idle timeout
// (60 s): every write touching one of them meets "timeout waiting to lock
// key" (1200) for that long, and RenewLeases and CleanupClaims, one
// statement over many claims, fail whole. The fake shows the leftover
// transaction (and, as it serializes, blocks every later query).
func TestFailedCommitAborted(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f, WithTimeout(300*time.Millisecond))
	storetestSeed(t, s, "a")
	if _, err := s.Claim(bg, store.Claim{FileKey: "a", WorkerID: "i/w0", ClaimedAt: storetest.T0, LeaseUntil: storetest.At(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	var failed atomic.Bool
	f.setHook(func(route, aql string) *fakeErr {
		if strings.HasPrefix(route, "PUT /_db/nomarr/_api/transaction/") && failed.CompareAndSwap(false, true) {
			return &fakeErr{503, 503, "service unavailable"}
		}
		return nil
	})
	err := s.Complete(bg, store.Ref{FileKey: "a", WorkerID: "i/w0"}, store.Completion{Version: "v", At: storetest.T0})
	if !store.IsFault(err) {
		t.Fatalf("Complete with a failed commit = %v, want a fault", err)
	}
	var open []string
	f.locked(func() { open = txIDs(f.txs) })
	if len(open) != 0 {
		// Release the fake so that the rest of the test and its cleanup run.
		f.locked(func() {
			for id, snap := range f.txs {
				delete(f.txs, id)
				f.colls = snap
			}
		})
		<-f.sem
		t.Errorf("stream transaction(s) %v left open after the commit failed: a server holds their document locks until the streaming idle timeout", open)
	}
}

func txIDs(m map[string]map[string]map[string]doc) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A write statement's cursor is executed and committed before its first
// batch is sent: had PruneHistory (up to 10,000 rows a statement) answered
// a row per deleted document, in batches of 1,000, a failure fetching a
// later batch would report a fault for a delete that was done. It answers
// one row, the count, so a committed write has its whole answer.
func TestPruneAnswersInOneRow(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f)
	var rows []store.HistoryRow
	for i := range 5 {
		rows = append(rows, store.HistoryRow{At: storetest.At(time.Duration(i) * time.Second), Instance: "i", Component: "c", Status: "healthy"})
	}
	if err := s.AppendHistory(bg, rows); err != nil {
		t.Fatal(err)
	}
	f.locked(func() { f.batch = 2 }) // stands for the 1 000-row batches
	f.setHook(func(route, aql string) *fakeErr {
		if strings.HasPrefix(route, "POST /_db/nomarr/_api/cursor/") { // the next batch
			return &fakeErr{503, 503, "service unavailable"}
		}
		return nil
	})
	n, err := s.PruneHistory(bg, storetest.At(time.Hour))
	f.setHook(nil)
	left := len(f.coll(colHistory))
	if err != nil || n != len(rows) || left != 0 {
		t.Errorf("PruneHistory = %d, %v, but all %d rows were deleted: the statement committed before its answer was read", n, err, len(rows))
	}
}

// RenewLeases and CleanupClaims are write statements over every claim (a
// fleet's worth: more than a batch of 1,000 rows at scale). Each answers
// one row — the count of renewed leases, the array of removed claims — so
// the whole answer comes in the first batch, with the commit: had they
// answered a row per claim, a failure fetching a later batch would report
// a fault for leases renewed or claims removed (and the caller, told
// nothing was removed, would not report those claims' files).
func TestRenewAndCleanupAnswerInOneRow(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f)
	keys := []string{"a", "b", "c", "d", "e"}
	storetestSeed(t, s, keys...)
	for _, k := range keys {
		if _, err := s.Claim(bg, store.Claim{FileKey: k, WorkerID: "i/w0", ClaimedAt: storetest.T0, LeaseUntil: storetest.At(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	f.locked(func() { f.batch = 2 }) // stands for the 1 000-row batches
	var fetches atomic.Int32
	f.setHook(func(route, aql string) *fakeErr {
		if strings.HasPrefix(route, "POST /_db/nomarr/_api/cursor/") { // the next batch
			fetches.Add(1)
			return &fakeErr{503, 503, "service unavailable"}
		}
		return nil
	})
	defer f.setHook(nil)
	until := storetest.At(2 * time.Minute)
	n, err := s.RenewLeases(bg, []string{"i/w0"}, until)
	renewed := 0
	for _, c := range f.coll(colClaims) {
		if num(c["lease_until"]) == float64(until.UnixMilli()) {
			renewed++
		}
	}
	if err != nil || n != len(keys) || renewed != len(keys) {
		t.Errorf("RenewLeases = %d, %v, and %d leases were renewed: the statement committed before its answer was read", n, err, renewed)
	}
	gone, err := s.CleanupClaims(bg, storetest.At(time.Hour))
	left := len(f.coll(colClaims))
	var got []string
	for _, c := range gone {
		got = append(got, c.FileKey)
	}
	if err != nil || !slices.Equal(got, keys) || left != 0 {
		t.Errorf("CleanupClaims = %v, %v, and %d claims are left of %d: the statement committed before its answer was read", got, err, left, len(keys))
	}
	if fetches.Load() != 0 {
		t.Errorf("%d further batches fetched, want none: the answer is one row", fetches.Load())
	}
}
