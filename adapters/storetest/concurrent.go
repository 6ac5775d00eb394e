package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// Clients is the number of concurrent clients RunConcurrent starts.
const Clients = 8

// RunConcurrent checks the store under concurrent clients: each has its own
// handle, from its own call of open, on one and the same store (the first
// call's store is the one seeded), and they race to claim the same files.
// Every file must be claimed exactly once and completed exactly once, and a
// concurrent cleanup must never remove a live claim. open is called from the
// test goroutine; a store that is not safe for concurrent use must return the
// same Locked instance every time.
func RunConcurrent(t *testing.T, open func(t *testing.T) store.Store) {
	handles := make([]store.Store, Clients+1)
	for i := range handles {
		handles[i] = open(t)
	}
	t.Run("ClaimRace", func(t *testing.T) { concurrentClaimRace(t, handles) })
	t.Run("WorkLoop", func(t *testing.T) { concurrentWorkLoop(t, handles) })
	t.Run("SwapMetaRace", func(t *testing.T) { concurrentSwapMeta(t, handles) })
	t.Run("RetagRace", func(t *testing.T) { concurrentRetag(t, handles) })
	t.Run("RescanRace", func(t *testing.T) { concurrentRescan(t, handles) })
}

// concurrentRescan: half the clients are jobs that claim files, rewrite
// them on a model disk (new size and mtime) and complete them recording
// the rewrite; the other half rescan every file over and over, each pass
// taking its stat sequence number, then reading the disk, then upserting
// what it read. A pass that read a file before its rewrite must not write
// that stat over the completion's: in the end every file is tagged, once,
// with its rewritten stat, and needs no tagging (a stale stat written last
// left it pending with its old size). Every completion succeeds.
func concurrentRescan(t *testing.T, handles []store.Store) {
	const n = 40
	ctx := t.Context()
	keys, files := numberedFiles("rescan%03d", n)
	if _, err := handles[0].UpsertFiles(ctx, files); err != nil {
		t.Fatal(err)
	}
	old := store.Stat{Size: files[0].Size, MtimeMs: files[0].MtimeMs}
	tagged := store.Stat{Size: 2 * old.Size, MtimeMs: old.MtimeMs + 60_000}
	var disk [n]atomic.Bool // rewritten
	scan := func(st store.Store) error {
		seq, err := st.NextStatSeq(ctx)
		if err != nil {
			return err
		}
		batch := make([]store.File, n)
		for i := range batch {
			batch[i] = files[i]
			if disk[i].Load() {
				batch[i].Size, batch[i].MtimeMs = tagged.Size, tagged.MtimeMs
			}
			batch[i].StatSeq = seq
		}
		_, err = st.UpsertFiles(ctx, batch)
		return err
	}
	jobs := Clients / 2
	var running atomic.Int32
	running.Store(int32(jobs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < Clients; c++ {
		st, worker := handles[c+1], fmt.Sprintf("rescan/w%d", c)
		if c >= jobs {
			wg.Go(func() {
				<-start
				for running.Load() > 0 {
					if err := scan(st); err != nil {
						t.Errorf("%s: rescan: %v", worker, err)
						return
					}
				}
			})
			continue
		}
		wg.Go(func() {
			defer running.Add(-1)
			<-start
			for i := c; i < n; i += jobs {
				if _, err := st.Claim(ctx, claimOf(keys[i], worker, T0, time.Hour)); err != nil {
					t.Errorf("%s: Claim(%s): %v", worker, keys[i], err)
					return
				}
				disk[i].Store(true)
				err := st.Complete(ctx, store.Ref{FileKey: keys[i], WorkerID: worker},
					store.Completion{Version: "v1", At: T0, Claimed: &old, Rewritten: &tagged})
				if err != nil {
					t.Errorf("%s: Complete(%s): %v", worker, keys[i], err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	if err := scan(handles[0]); err != nil { // after every job: changes nothing
		t.Fatal(err)
	}
	for _, k := range keys {
		f, err := handles[0].File(ctx, k)
		if err != nil || !f.Tagged || f.NeedsTagging || f.Size != tagged.Size || f.MtimeMs != tagged.MtimeMs {
			t.Fatalf("File(%s) = %+v %v; want tagged, size %d, mtime %d", k, f, err, tagged.Size, tagged.MtimeMs)
		}
	}
}

// concurrentRetag: files tagged by model set v1; half the clients send
// them back to work for v2 (Retag, each over every file, several times)
// while the others claim and complete them with v2. A file goes v1 →
// pending → v2 and never back, so the Retag calls change each file exactly
// once in all, and none completed with v2 is sent back to work.
func concurrentRetag(t *testing.T, handles []store.Store) {
	const n = 40
	ctx := t.Context()
	before, err := handles[0].Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys, files := numberedFiles("retag%03d", n)
	for i := range files {
		files[i].NeedsTagging, files[i].Tagged, files[i].TaggedVersion = false, true, "v1"
	}
	if _, err := handles[0].UpsertFiles(ctx, files); err != nil {
		t.Fatal(err)
	}
	var changed, completed atomic.Int32
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < Clients; c++ {
		st, worker := handles[c+1], fmt.Sprintf("retag/w%d", c)
		if c%2 == 0 {
			wg.Go(func() {
				<-start
				for range 3 {
					m, err := st.Retag(ctx, keys, "v2")
					if err != nil {
						t.Errorf("%s: Retag: %v", worker, err)
						return
					}
					changed.Add(int32(m))
				}
			})
			continue
		}
		wg.Go(func() {
			<-start
			deadline := time.Now().Add(20 * time.Second)
			for completed.Load() < n && time.Now().Before(deadline) {
				for _, k := range keys {
					_, err := st.Claim(ctx, claimOf(k, worker, T0, time.Hour))
					switch {
					case err == nil:
					case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotEligible):
						continue
					default:
						t.Errorf("%s: Claim(%s) = %v", worker, k, err)
						return
					}
					err = st.Complete(ctx, store.Ref{FileKey: k, WorkerID: worker}, store.Completion{Version: "v2", At: At(time.Second)})
					if err != nil {
						t.Errorf("%s: Complete(%s) = %v", worker, k, err)
						return
					}
					completed.Add(1)
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	if got := changed.Load(); got != n {
		t.Fatalf("Retag calls changed %d files in all, want %d (each once)", got, n)
	}
	if got := completed.Load(); got != n {
		t.Fatalf("%d completions, want %d", got, n)
	}
	for _, k := range keys {
		f, err := handles[0].File(ctx, k)
		if err != nil || !f.Tagged || f.NeedsTagging || f.TaggedVersion != "v2" {
			t.Fatalf("File(%s) = %+v, %v; want tagged v2", k, f, err)
		}
	}
	want := before
	want.Total += n
	want.Tagged += n
	if c, err := handles[0].Counts(ctx); err != nil || c != want {
		t.Fatalf("Counts = %+v, %v; want %+v", c, err, want)
	}
}

// concurrentSwapMeta: every client swaps one key from the value it last
// read to its own, round after round; in each round exactly one wins, and
// the key ends holding the last winner's value.
func concurrentSwapMeta(t *testing.T, handles []store.Store) {
	ctx := t.Context()
	old := ""
	for round := range 5 {
		var wins atomic.Int32
		var winner atomic.Value
		start := make(chan struct{})
		var wg sync.WaitGroup
		for c := 0; c < Clients; c++ {
			st, mine := handles[c+1], fmt.Sprintf("round%d/client%d", round, c)
			wg.Go(func() {
				<-start
				ok, err := st.SwapMeta(ctx, "node:race", old, mine)
				if err != nil {
					t.Errorf("SwapMeta: %v", err)
				}
				if ok {
					wins.Add(1)
					winner.Store(mine)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d clients swapped %q, want exactly 1", round, n, old)
		}
		old = winner.Load().(string)
		if v, _, err := handles[0].GetMeta(ctx, "node:race"); err != nil || v != old {
			t.Fatalf("round %d: key holds %q (%v), the winner wrote %q", round, v, err, old)
		}
	}
}

// concurrentClaimRace: every client claims every file in the same order at
// the same moment; exactly one wins each file and the others see
// ErrConflict. Then every client tries to complete every file: only the
// winners succeed.
func concurrentClaimRace(t *testing.T, handles []store.Store) {
	const n = 40
	ctx := t.Context()
	keys, files := numberedFiles("race%03d", n)
	if _, err := handles[0].UpsertFiles(ctx, files); err != nil {
		t.Fatal(err)
	}
	var wins [n]atomic.Int32
	owner := make([]atomic.Value, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < Clients; c++ {
		st, worker := handles[c+1], fmt.Sprintf("race/w%d", c)
		wg.Go(func() {
			<-start
			for i, k := range keys {
				_, err := st.Claim(ctx, claimOf(k, worker, T0, time.Hour))
				switch {
				case err == nil:
					wins[i].Add(1)
					owner[i].Store(worker)
				case errors.Is(err, store.ErrConflict):
				default:
					t.Errorf("%s: Claim(%s) = %v, want nil or ErrConflict", worker, k, err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i := range keys {
		if w := wins[i].Load(); w != 1 {
			t.Fatalf("%s claimed %d times, want exactly once", keys[i], w)
		}
	}
	var completions [n]atomic.Int32
	start = make(chan struct{})
	for c := 0; c < Clients; c++ {
		st, worker := handles[c+1], fmt.Sprintf("race/w%d", c)
		wg.Go(func() {
			<-start
			for i, k := range keys {
				err := st.Complete(ctx, store.Ref{FileKey: k, WorkerID: worker}, store.Completion{Tags: map[string]string{"by": worker}, Version: "v1", At: At(time.Second)})
				switch {
				case err == nil:
					completions[i].Add(1)
					if o := owner[i].Load(); o != worker {
						t.Errorf("%s completed %s held by %v", worker, k, o)
					}
				case errors.Is(err, store.ErrClaimLost):
				default:
					t.Errorf("%s: Complete(%s) = %v, want nil or ErrClaimLost", worker, k, err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i, k := range keys {
		if c := completions[i].Load(); c != 1 {
			t.Fatalf("%s completed %d times, want exactly once", k, c)
		}
		f, err := handles[0].File(ctx, k)
		if err != nil || !f.Tagged || f.NeedsTagging {
			t.Fatalf("File(%s) = %+v %v", k, f, err)
		}
		if tags, ok := tagsOf(t, handles[0], k); ok && tags["by"] != owner[i].Load() {
			t.Fatalf("Tags(%s) = %v, want by=%v", k, tags, owner[i].Load())
		}
	}
	c, err := handles[0].Counts(ctx)
	if err != nil || c != (store.Counts{Total: n, Tagged: n}) {
		t.Fatalf("Counts = %+v %v", c, err)
	}
}

// concurrentWorkLoop: clients run the worker loop (discover a batch from the
// start, claim candidates in order, complete what they win) until discovery
// comes back empty, while another client keeps renewing leases and cleaning
// up claims (none of which has expired or become ineligible).
func concurrentWorkLoop(t *testing.T, handles []store.Store) {
	const n = 400
	ctx := t.Context()
	before, err := handles[0].Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys, files := numberedFiles("loop%04d", n)
	// Two batches, the second while nobody works yet.
	if _, err := handles[0].UpsertFiles(ctx, files[n/2:]); err != nil {
		t.Fatal(err)
	}
	if _, err := handles[0].UpsertFiles(ctx, files[:n/2]); err != nil {
		t.Fatal(err)
	}
	index := make(map[string]int, n)
	for i, k := range keys {
		index[k] = i
	}
	var claims, completions [n]atomic.Int32
	var conflicts atomic.Int64
	var workers sync.WaitGroup
	stop := make(chan struct{})
	start := make(chan struct{})
	for c := 0; c < Clients; c++ {
		st, worker := handles[c+1], fmt.Sprintf("loop/w%d", c)
		workers.Go(func() {
			<-start
			for {
				batch, err := st.Discover(ctx, T0, "", 8)
				if err != nil {
					t.Errorf("%s: Discover: %v", worker, err)
					return
				}
				if len(batch) == 0 {
					return
				}
				for _, f := range batch {
					i, ok := index[f.Key]
					if !ok {
						t.Errorf("%s: discovered unknown or already tagged file %s", worker, f.Key)
						return
					}
					_, err := st.Claim(ctx, claimOf(f.Key, worker, T0, time.Hour))
					if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotEligible) {
						conflicts.Add(1)
						continue
					}
					if err != nil {
						t.Errorf("%s: Claim(%s): %v", worker, f.Key, err)
						return
					}
					claims[i].Add(1)
					if err := st.Complete(ctx, store.Ref{FileKey: f.Key, WorkerID: worker}, store.Completion{Tags: map[string]string{"by": worker}, Version: "v1", At: T0}); err != nil {
						t.Errorf("%s: Complete(%s): %v", worker, f.Key, err)
						return
					}
					completions[i].Add(1)
					break // rediscover, as the worker loop does after a job
				}
			}
		})
	}
	var janitor sync.WaitGroup
	janitor.Go(func() {
		st := handles[0]
		ids := make([]string, Clients)
		for c := range ids {
			ids[c] = fmt.Sprintf("loop/w%d", c)
		}
		for k := 1; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := st.RenewLeases(ctx, ids, At(time.Hour+time.Duration(k)*time.Millisecond)); err != nil {
				t.Errorf("RenewLeases: %v", err)
				return
			}
			removed, err := st.CleanupClaims(ctx, At(time.Minute))
			if err != nil {
				t.Errorf("CleanupClaims: %v", err)
				return
			}
			if len(removed) > 0 {
				t.Errorf("CleanupClaims removed live claims: %+v", removed)
				return
			}
		}
	})
	close(start)
	workers.Wait()
	close(stop)
	janitor.Wait()
	if t.Failed() {
		return
	}
	for i, k := range keys {
		if c := claims[i].Load(); c != 1 {
			t.Fatalf("%s claimed %d times, want exactly once", k, c)
		}
		if c := completions[i].Load(); c != 1 {
			t.Fatalf("%s completed %d times, want exactly once", k, c)
		}
	}
	after, err := handles[0].Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := before
	want.Total += n
	want.Tagged += n
	if after != want {
		t.Fatalf("Counts = %+v, want %+v", after, want)
	}
	if fs, err := handles[0].Discover(ctx, At(time.Hour), "", 10); err != nil || len(fs) != 0 {
		t.Fatalf("Discover after the run = %v %v", Keys(fs), err)
	}
	t.Logf("%d files, %d clients, %d conflicts", n, Clients, conflicts.Load())
}

// numberedFiles is n new files (NewFile) keyed by format and 0…n-1, and
// their keys.
func numberedFiles(format string, n int) ([]string, []store.File) {
	keys := make([]string, n)
	files := make([]store.File, n)
	for i := range keys {
		keys[i] = fmt.Sprintf(format, i)
		files[i] = NewFile(keys[i])
	}
	return keys, files
}
