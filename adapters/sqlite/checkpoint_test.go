package sqlite

import (
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/internal/eventually"
)

// growWAL writes until the handle's WAL file is past walCheckpointAt, with
// a reader holding a snapshot so that no checkpoint can restart it.
func growWAL(t *testing.T, s *Store) {
	t.Helper()
	pad := strings.Repeat("x", 4000)
	for i := 0; ; i++ {
		fi, err := os.Stat(s.path + "-wal")
		if err == nil && fi.Size() > walCheckpointAt+(1<<20) {
			return
		}
		var fs []store.File
		for j := 0; j < 200; j++ {
			fs = append(fs, store.File{Key: fmt.Sprintf("k%06d", i*200+j), Path: "/m/" + pad + fmt.Sprint(i*200+j), Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true})
		}
		if _, err := s.UpsertFiles(bg, fs); err != nil {
			t.Fatal(err)
		}
		if i > 200 {
			t.Fatal("WAL never grew")
		}
	}
}

// Behind a reader that holds a snapshot and never lets go, the checkpoint
// attempts (each waits up to walCheckpointWait, holding the write lock) are
// spaced out: a steady writer spends about a fifth of 6 s (under a third
// on a loaded machine) in its own and another handle's (the writes of both
// wait for either's), and
// another process's writes are held up no longer than one attempt. With a
// 100 ms retry shorter than the wait, two thirds of the writing time went
// to attempts bound to fail. Once the reader lets go, the next attempt
// truncates the WAL.
func TestCheckpointBackOffBehindAHeldSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("writes for 6 s (-short skips it)")
	}
	path := tempDB(t)
	s := openT(t, path)
	// A reader in another connection holds a snapshot (a long API listing,
	// another process's scan) for the whole test.
	rtx := holdSnapshot(t, path)
	growWAL(t, s)

	// Another handle (another process's) writes too: its writes wait for
	// the write lock that each failing TRUNCATE attempt holds.
	other := openT(t, path)
	// The other handle's two longest writes: one may be a stall of this
	// loaded VM (a 1.4 s pause under -race was seen once); attempts that
	// hold the lock too long would make every write wait, the second
	// longest too.
	otherMax := make(chan [2]time.Duration, 1)
	go func() {
		var mx [2]time.Duration
		// A write every 5 ms for 5.9 s of the real clock, on which the
		// checkpoint attempts back off.
		for st := time.Now(); time.Since(st) < 5900*time.Millisecond; time.Sleep(5 * time.Millisecond) {
			t0 := time.Now()
			_ = other.SetMeta(bg, "other", "x")
			if d := time.Since(t0); d > mx[0] {
				mx = [2]time.Duration{d, mx[0]}
			} else if d > mx[1] {
				mx[1] = d
			}
		}
		otherMax <- mx
	}()
	start := time.Now()
	var slow time.Duration
	writes := 0
	for time.Since(start) < 6*time.Second {
		t0 := time.Now()
		if err := s.SetMeta(bg, "probe", fmt.Sprint(writes)); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d >= walCheckpointWait*3/4 {
			slow += d
		}
		writes++
	}
	total := time.Since(start)
	longest := <-otherMax
	t.Logf("%.0f%% of %s of writing in checkpoint attempts; another handle's longest writes %s, %s",
		100*float64(slow)/float64(total), total.Round(time.Millisecond), longest[0], longest[1])
	// The back-off itself: attempts 1, 2, 4 s apart behind the pinned
	// frame, 3–4 of each handle in 6 s (a 100 ms retry made 40 and more).
	// Counted, not timed: on a machine whose disk or CPU is busy with
	// other work every write is slow, and the time shares below with it.
	attempts, otherAttempts := s.walAttempts.Load(), other.walAttempts.Load()
	t.Logf("checkpoint attempts: %d by the writer, %d by the other handle", attempts, otherAttempts)
	if attempts > 6 || otherAttempts > 6 {
		t.Errorf("%d and %d checkpoint attempts in 6 s behind a held snapshot; want at most 6 each (1, 2, 4 s apart)", attempts, otherAttempts)
	}
	// The time shares are shown, not judged: the storm this guards against
	// took 98 %; backed off, runs measure 5–40 %, but one run beside every
	// other package's tests saw 95 % with 2.4 s writes and the attempts
	// within bounds.
	if s.WALTruncations() != 0 {
		t.Fatalf("%d truncations behind a held snapshot", s.WALTruncations())
	}
	// The reader lets go: the next due attempt gets through.
	if err := rtx.Rollback(); err != nil {
		t.Fatal(err)
	}
	// A truncation is announced by nothing but its count: writes are
	// tried until one checkpoint gets through.
	eventually.True(t, walCheckpointRetryMax+5*time.Second, "a truncation after the reader let go", func() bool {
		s.walRetryAt.Store(0) // no need to wait out the backoff here
		if err := s.SetMeta(bg, "probe", "after"); err != nil {
			t.Fatal(err)
		}
		return s.WALTruncations() > 0
	})
	fi, err := os.Stat(s.path + "-wal")
	if err != nil || fi.Size() > 1<<20 {
		t.Fatalf("after the reader let go: %d truncations, WAL %v (%v)", s.WALTruncations(), fi.Size(), err)
	}
}

// checkpointRetry backs off behind a pinned frame, doubling up to
// walCheckpointRetryMax, and tries again soon after progress. An attempt
// that did not run at all (-1: another handle's write or attempt held a
// lock past walCheckpointWait) is no progress: two handles whose attempts
// alternate between "did not run" and "stopped at the pinned frame" back
// off all the same (they used to reset each other to 100 ms).
func TestCheckpointRetry(t *testing.T) {
	type step struct {
		done  int64
		wait  time.Duration
		fails int64
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"progress, then pinned", []step{{100, walCheckpointRetry, 0}, {250, walCheckpointRetry, 0}, {250, time.Second, 1},
			{250, 2 * time.Second, 2}, {250, 4 * time.Second, 3}, {300, walCheckpointRetry, 0}}},
		{"did not run, pinned, in turns", []step{{250, walCheckpointRetry, 0}, {-1, time.Second, 0}, {250, time.Second, 1},
			{-1, 2 * time.Second, 1}, {250, 2 * time.Second, 2}, {-1, 4 * time.Second, 2}, {250, 4 * time.Second, 3}}},
		{"collisions alone do not escalate", []step{{-1, time.Second, 0}, {-1, time.Second, 0}, {-1, time.Second, 0}, {40, walCheckpointRetry, 0}}},
		{"up to the cap", []step{{7, walCheckpointRetry, 0}, {7, time.Second, 1}, {7, 2 * time.Second, 2}, {7, 4 * time.Second, 3},
			{7, 8 * time.Second, 4}, {7, 16 * time.Second, 5}, {7, walCheckpointRetryMax, 6}, {-1, walCheckpointRetryMax, 6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var last, fails int64
			for i, st := range tc.steps {
				var wait time.Duration
				wait, last, fails = checkpointRetry(last, st.done, fails)
				if wait != st.wait || fails != st.fails {
					t.Fatalf("attempt %d (copied %d): wait %s, %d failures in a row; want %s, %d", i+1, st.done, wait, fails, st.wait, st.fails)
				}
			}
		})
	}
}

// A checkpoint that gets through starts the back-off over: the failures
// in a row before it no longer count.
func TestCheckpointSuccessResetsBackOff(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	rtx := holdSnapshot(t, path)
	growWAL(t, s)
	if err := rtx.Rollback(); err != nil {
		t.Fatal(err)
	}
	s.walFails.Store(5) // five attempts in a row pinned at one frame
	s.walRetryAt.Store(0)
	before := s.WALTruncations()
	if err := s.SetMeta(bg, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if s.WALTruncations() != before+1 || s.walFails.Load() != 0 {
		t.Fatalf("after a checkpoint that got through: %d truncations (was %d), %d failures in a row, want 0",
			s.WALTruncations(), before, s.walFails.Load())
	}
}

// holdSnapshot opens another connection to the database at path and reads
// in a transaction, whose snapshot it holds until the test ends or the
// caller rolls it back: a checkpoint cannot truncate the WAL past it.
func holdSnapshot(t *testing.T, path string) *sql.Tx {
	t.Helper()
	rdb, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	rtx, err := rdb.Begin()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rtx.Rollback() }) //nolint:errcheck
	var n int
	if err := rtx.QueryRow(`SELECT count(*) FROM library_files`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return rtx
}
