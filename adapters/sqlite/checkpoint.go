package sqlite

import (
	"context"
	"os"
	"strconv"
	"time"
)

// WAL checkpoints. SQLite's automatic checkpoint (every 1000 pages, about
// 4 MiB) copies the WAL into the database but can only start the WAL over
// when no reader still uses its older pages. Several processes that read
// and write without pause (workers claiming and completing files beside a
// library scan) leave no such moment, so the WAL file grows without bound:
// 250 MiB for a 9 MiB database after 60,000 files were scanned and tagged,
// more with the library, and it never shrinks while the store is open.
//
// So after each write, a handle whose WAL file has grown past
// walCheckpointAt runs a TRUNCATE checkpoint on its writer connection,
// letting it wait up to walCheckpointWait for the readers to move on (new
// writes wait meanwhile), and truncates the WAL file to zero when it gets
// through. When it does not, what held it up decides when the handle tries
// again. Readers that keep overlapping (busy workers beside a scan) let
// the checkpoint copy further on each try: it tries again soon
// (walCheckpointRetry), or the WAL keeps growing. A reader that holds one
// snapshot for long (a shell left in a transaction) pins the copy at one
// frame: each try would hold the write lock for walCheckpointWait in vain,
// so the handle waits walCheckpointPinned, doubling after each such
// failure, up to walCheckpointRetryMax. A checkpoint that gets through starts over. One
// handle makes one attempt at a time. journal_size_limit (walCheckpointAt
// too) also truncates an oversized WAL whenever SQLite itself starts it
// over.
//
// Measured with 20,000 files scanned beside 3 workers tagging them as fast
// as they can (real processes, TestWALShrinksBackAfterScan): the WAL peaked
// at 27–67 MiB and kept that size; with these checkpoints it still peaks
// at 11–60 MiB (146 MiB once on a loaded machine), depending on timing,
// but is back under 9 MiB when the burst is over: at once, or, when the
// burst's last attempts were held up, at the first write after their
// back-off (a main process writes health history every history_interval).
const (
	walCheckpointAt       = 8 << 20
	walCheckpointWait     = 200 * time.Millisecond
	walCheckpointRetry    = 100 * time.Millisecond
	walCheckpointPinned   = time.Second
	walCheckpointRetryMax = 30 * time.Second
)

// maybeCheckpoint runs the checkpoint described above when it is due.
func (s *Store) maybeCheckpoint(ctx context.Context) {
	if s.cfg.readOnly || time.Now().UnixNano() < s.walRetryAt.Load() || !s.walBusy.CompareAndSwap(false, true) {
		return
	}
	defer s.walBusy.Store(false)
	if st, err := os.Stat(s.path + "-wal"); err != nil || st.Size() < walCheckpointAt {
		return
	}
	s.walAttempts.Add(1)
	done, ok := s.checkpoint(context.WithoutCancel(ctx))
	if ok {
		s.walTruncations.Add(1)
		s.walFails.Store(0)
		return
	}
	wait, last, fails := checkpointRetry(s.walDone.Load(), done, s.walFails.Load())
	s.walDone.Store(last)
	s.walFails.Store(fails)
	s.walRetryAt.Store(time.Now().Add(wait).UnixNano())
}

// checkpointRetry is when to try again after an attempt that did not get
// through, from the frames copied by the last failed attempt (last), this
// attempt's (done: -1 when it did not run at all) and the failures in a
// row so far at the pinned frame; it returns the wait, and last and fails
// to keep. An attempt that copied further is progress: soon again
// (walCheckpointRetry). One that stopped at the same frame backs off,
// doubling. One that did not run (the write lock or the checkpoint lock
// not had within walCheckpointWait: another handle's write, attempt or
// automatic checkpoint) waits as long as the back-off stands, without
// doubling it, and leaves last as it was: it must not pass for progress
// when the next one stops at the pinned frame again, or two handles taking
// turns would retry every 100 ms behind a reader that never lets go; nor
// must collisions alone, in a write burst with no reader pinning anything,
// push the back-off to its 30 s cap.
func checkpointRetry(last, done, fails int64) (wait time.Duration, keep, failsNow int64) {
	switch {
	case done < 0:
		return min(walCheckpointPinned<<min(fails, 20), walCheckpointRetryMax), last, fails
	case done != last:
		return walCheckpointRetry, done, 0
	}
	return min(walCheckpointPinned<<min(fails, 20), walCheckpointRetryMax), last, fails + 1
}

// checkpoint runs one TRUNCATE checkpoint and reports whether it got
// through, and how many WAL frames were copied into the database by then.
func (s *Store) checkpoint(ctx context.Context) (done int64, ok bool) {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return -1, false
	}
	defer conn.Close()
	// The connection's busy timeout is 0 (withTx waits for the write lock
	// itself); the checkpoint's wait for readers needs one, and it goes
	// back to 0 after.
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = "+strconv.FormatInt(walCheckpointWait.Milliseconds(), 10)); err != nil {
		return -1, false
	}
	defer conn.ExecContext(ctx, "PRAGMA busy_timeout = 0") //nolint:errcheck // best effort
	var busy, logFrames int
	if err := conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done); err != nil {
		return -1, false
	}
	return done, busy == 0
}

// WALTruncations reports how many checkpoints of this handle truncated the
// WAL file.
func (s *Store) WALTruncations() int64 { return s.walTruncations.Load() }
