package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
)

type scanner interface{ Scan(dest ...any) error }

func scanFile(r scanner) (store.File, error) {
	var f store.File
	var needs, valid, tagged, failed int
	var lastTagged, nextRetry, skipUntil int64
	err := r.Scan(&f.Key, &f.Path, &f.Size, &f.MtimeMs, &needs, &valid, &tagged, &f.TaggedVersion,
		&lastTagged, &f.Attempts, &nextRetry, &skipUntil, &f.CrashCount, &failed, &f.LastError, &f.Checkpoint, &f.StatSeq)
	if err != nil {
		return store.File{}, err
	}
	f.NeedsTagging, f.IsValid, f.Tagged, f.Failed = needs != 0, valid != 0, tagged != 0, failed != 0
	f.LastTaggedAt, f.NextRetryAt, f.SkipUntil = tm(lastTagged), tm(nextRetry), tm(skipUntil)
	return f, nil
}

// UpsertFiles implements store.Library. The batch is validated first (an
// empty key rejects it whole), a key given twice counts once (the last entry
// wins), and it is applied in one transaction: callers with very large
// libraries should pass batches of a few thousand files so that the write
// lock is held briefly. A batch with stat sequence numbers reads the
// sequence once, in the transaction, to clamp them (store.ClampStatSeq).
//
// The transaction reads the batch's stored files first, in one statement
// (sUpsertStored), and store.UpsertOutcomeOf tells from them what becomes
// of each: the upsert statement runs only for the files it writes, so an
// unchanged file (every file of a rescan, as a rule) costs a row of that
// read instead of a statement. The statement keeps its own condition, the
// same rule in SQL; a file it did not write after all counts as unchanged.
func (s *Store) UpsertFiles(ctx context.Context, files []store.File) (store.Upserted, error) {
	last := make(map[string]int, len(files))
	var numbered bool
	for i, f := range files {
		if f.Key == "" {
			return store.Upserted{}, fmt.Errorf("sqlite: upsert: file %d (path %q) has an empty key", i, f.Path)
		}
		last[f.Key] = i
		numbered = numbered || f.StatSeq != 0
	}
	if len(files) == 0 {
		return store.Upserted{}, nil
	}
	// The entries that win, their keys in a JSON array or, for the few
	// keys it cannot carry (jsonSafe), read one by one.
	var keys []string
	var at, odd []int // the index in files of each of keys, and of each odd key
	for i, f := range files {
		switch {
		case last[f.Key] != i:
		case jsonSafe(f.Key):
			keys, at = append(keys, f.Key), append(at, i)
		default:
			odd = append(odd, i)
		}
	}
	keysJSON, err := json.Marshal(keys)
	if err != nil {
		return store.Upserted{}, fmt.Errorf("sqlite: upsert: %w", err)
	}
	var did store.Upserted
	stored := make([]storedStat, len(files)) // by the index in files
	err = s.withTx(ctx, func(tx *sql.Tx) error {
		did = store.Upserted{} // a try again after a busy database starts over
		clear(stored)
		var counter int64
		if numbered {
			if err := tx.StmtContext(ctx, s.ws[sStatSeqNow]).QueryRowContext(ctx).Scan(&counter); err != nil {
				return fmt.Errorf("stat sequence: %w", err)
			}
		}
		if err := readStored(ctx, tx.StmtContext(ctx, s.ws[sUpsertStored]), keysJSON, at, stored); err != nil {
			return fmt.Errorf("stored files: %w", err)
		}
		for _, i := range odd {
			st, err := readStoredStat(tx.StmtContext(ctx, s.ws[sUpsertStoredKey]).QueryRowContext(ctx, files[i].Key))
			switch {
			case err == nil:
				stored[i] = st
			case !errors.Is(err, sql.ErrNoRows):
				return fmt.Errorf("stored file %q: %w", files[i].Key, err)
			}
		}
		st := tx.StmtContext(ctx, s.ws[sUpsertFile])
		for i, f := range files {
			if last[f.Key] != i {
				continue
			}
			o := store.UpsertOutcomeOf(stored[i].file(), f, counter)
			if o == store.UpsertUnchanged {
				did.Count(o) // the statement would not write it
				continue
			}
			res, err := st.ExecContext(ctx, f.Key, f.Path, f.Size, f.MtimeMs, b2i(f.NeedsTagging), b2i(f.IsValid),
				b2i(f.Tagged), f.TaggedVersion, ms(f.LastTaggedAt), f.Attempts, ms(f.NextRetryAt), ms(f.SkipUntil),
				f.CrashCount, b2i(f.Failed), f.LastError, f.Checkpoint, store.ClampStatSeq(f.StatSeq, counter))
			if err != nil {
				return fmt.Errorf("%s: %w", f.Key, err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return fmt.Errorf("%s: %w", f.Key, err)
			} else if n == 0 {
				o = store.UpsertUnchanged
			}
			did.Count(o)
		}
		return nil
	})
	if err != nil {
		return store.Upserted{}, s.fail("upsert", fmt.Sprintf("(%d files)", len(files)), err)
	}
	return did, nil
}

// storedStat is what an upsert reads of a stored file to tell what
// becomes of it (store.UpsertOutcomeOf); known is false for a new file.
type storedStat struct {
	known              bool
	valid              bool
	size, mtimeMs, seq int64
}

// file is the stored file as store.UpsertOutcomeOf takes it (nil: not
// stored).
func (st storedStat) file() *store.File {
	if !st.known {
		return nil
	}
	return &store.File{Size: st.size, MtimeMs: st.mtimeMs, IsValid: st.valid, StatSeq: st.seq}
}

// readStored runs sUpsertStored for the JSON array of keys, whose rows
// name a key by its index in the array, and puts each stored file in
// stored at the index at gives that key.
func readStored(ctx context.Context, q *sql.Stmt, keysJSON []byte, at []int, stored []storedStat) error {
	rows, err := q.QueryContext(ctx, string(keysJSON))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k int
		var valid int
		st := storedStat{known: true}
		if err := rows.Scan(&k, &st.size, &st.mtimeMs, &valid, &st.seq); err != nil {
			return err
		}
		if k < 0 || k >= len(at) {
			return fmt.Errorf("read key #%d of %d", k, len(at))
		}
		st.valid = valid != 0
		stored[at[k]] = st
	}
	return rows.Err()
}

// readStoredStat scans the row of sUpsertStoredKey.
func readStoredStat(r scanner) (storedStat, error) {
	var valid int
	st := storedStat{known: true}
	if err := r.Scan(&st.size, &st.mtimeMs, &valid, &st.seq); err != nil {
		return storedStat{}, err
	}
	st.valid = valid != 0
	return st, nil
}

// jsonSafe reports whether key comes through a JSON array and SQLite's
// json_each as it is: valid UTF-8 (json.Marshal replaces invalid bytes)
// without NUL (which SQLite's JSON functions do not promise to carry). The
// scanner's keys (hexadecimal) are; the port allows any other.
func jsonSafe(key string) bool { return utf8.ValidString(key) && !strings.ContainsRune(key, 0) }

// NextStatSeq implements store.Library: one statement advances the
// counter in meta and returns it.
func (s *Store) NextStatSeq(ctx context.Context) (int64, error) {
	var n int64
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		return tx.StmtContext(ctx, s.ws[sNextStatSeq]).QueryRowContext(ctx).Scan(&n)
	})
	if err != nil {
		return 0, s.fail("next stat seq", "", err)
	}
	return n, nil
}

// Discover implements store.Library. A limit <= 0 means no limit.
func (s *Store) Discover(ctx context.Context, now time.Time, after string, limit int) ([]store.File, error) {
	return s.queryFiles(ctx, "discover", sDiscover, limit, after, ms(now), sqlLimit(limit))
}

// sqlLimit is limit as a LIMIT value: -1 (none) for limit <= 0.
func sqlLimit(limit int) int64 {
	if limit <= 0 {
		return -1
	}
	return int64(limit)
}

// queryFiles runs the read statement id, whose rows are fileCols, and
// returns the files (op names it in errors; limit, when > 0, sizes the
// result).
func (s *Store) queryFiles(ctx context.Context, op string, id, limit int, args ...any) ([]store.File, error) {
	rows, err := s.rs[id].QueryContext(ctx, args...)
	return s.scanFiles(rows, err, op, limit)
}

// scanFiles reads the files of a query's rows (err: the query's).
func (s *Store) scanFiles(rows *sql.Rows, err error, op string, limit int) ([]store.File, error) {
	if err != nil {
		return nil, s.fail(op, "", err)
	}
	defer rows.Close()
	var out []store.File
	if limit > 0 {
		out = make([]store.File, 0, min(limit, 256))
	}
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return nil, s.fail(op, "", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(op, "", err)
	}
	return out, nil
}

// Claim implements store.Library. A claim that already exists is answered
// from a read, without taking the write lock (the common outcome when
// several workers race for the same batch). The file is read back in the
// claim's transaction.
func (s *Store) Claim(ctx context.Context, c store.Claim) (store.File, error) {
	var one int
	err := s.rs[sClaimExistsR].QueryRowContext(ctx, c.FileKey).Scan(&one)
	switch {
	case err == nil:
		return store.File{}, s.fail("claim", c.FileKey, store.ErrConflict)
	case !errors.Is(err, sql.ErrNoRows):
		return store.File{}, s.fail("claim", c.FileKey, err)
	}
	var f store.File
	err = s.withTx(ctx, func(tx *sql.Tx) error {
		var res sql.Result
		var err error
		switch c.Kind {
		case store.JobTag:
			res, err = tx.StmtContext(ctx, s.ws[sClaimInsert]).ExecContext(ctx, c.FileKey, c.WorkerID, ms(c.ClaimedAt), ms(c.LeaseUntil))
		case store.JobRetag:
			res, err = tx.StmtContext(ctx, s.ws[sClaimInsertRetag]).ExecContext(ctx, c.FileKey, c.WorkerID, ms(c.ClaimedAt), ms(c.LeaseUntil))
		case store.JobVector:
			res, err = tx.StmtContext(ctx, s.ws[sClaimInsertVector]).ExecContext(ctx, c.FileKey, c.WorkerID, ms(c.ClaimedAt), ms(c.LeaseUntil), c.ModelSet)
		default:
			return fmt.Errorf("claim of unknown kind %q", c.Kind)
		}
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 1 {
			f, err = scanFile(tx.StmtContext(ctx, s.ws[sClaimedFile]).QueryRowContext(ctx, c.FileKey))
			return err
		}
		err = tx.StmtContext(ctx, s.ws[sClaimExists]).QueryRowContext(ctx, c.FileKey).Scan(&one)
		switch {
		case err == nil:
			return store.ErrConflict
		case errors.Is(err, sql.ErrNoRows):
			return store.ErrNotEligible
		}
		return err
	})
	if err != nil {
		return store.File{}, s.fail("claim", c.FileKey, err)
	}
	return f, nil
}

// Complete implements store.Library: claim deleted, file marked tagged and
// tags stored in one transaction, only if ref holds the claim.
func (s *Store) Complete(ctx context.Context, ref store.Ref, c store.Completion) error {
	tags := c.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	doc, err := json.Marshal(tags)
	if err != nil {
		return s.fail("complete", ref.FileKey, err)
	}
	err = s.withTx(ctx, func(tx *sql.Tx) error {
		if err := deleteHeld(ctx, tx.StmtContext(ctx, s.ws[sDeleteHeld]), ref); err != nil {
			return err
		}
		var size, mtime, csize, cmtime int64
		if c.Rewritten != nil {
			size, mtime = c.Rewritten.Size, c.Rewritten.MtimeMs
		}
		if c.Claimed != nil {
			csize, cmtime = c.Claimed.Size, c.Claimed.MtimeMs
		}
		res, err := tx.StmtContext(ctx, s.ws[sComplete]).ExecContext(ctx, ref.FileKey, c.Version, ms(c.At),
			b2i(c.Rewritten != nil), size, mtime, b2i(c.Claimed != nil), csize, cmtime)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			if _, err := scanFile(tx.StmtContext(ctx, s.ws[sClaimedFile]).QueryRowContext(ctx, ref.FileKey)); err == nil {
				return errChanged
			}
			return errGone
		}
		_, err = tx.StmtContext(ctx, s.ws[sPutTags]).ExecContext(ctx, ref.FileKey, string(doc), c.Version, ms(c.At))
		return err
	})
	if errors.Is(err, errGone) || errors.Is(err, errChanged) {
		// The file vanished, or changed, under its claim: drop the claim,
		// as the reference store does, and report the file missing, or the
		// claim lost (the file, needing tagging again, is left as it is).
		if _, derr := s.exec(ctx, sDeleteHeld, ref.FileKey, ref.WorkerID); derr != nil {
			return s.fail("complete", ref.FileKey, derr)
		}
		if errors.Is(err, errChanged) {
			return s.fail("complete", ref.FileKey, store.ErrClaimLost)
		}
		return s.fail("complete", ref.FileKey, store.ErrNotFound)
	}
	if err != nil {
		return s.fail("complete", ref.FileKey, err)
	}
	return nil
}

var (
	errGone    = errors.New("file gone")
	errChanged = errors.New("file changed under its claim")
)

// exec runs one prepared write statement in its own write transaction.
func (s *Store) exec(ctx context.Context, id int, args ...any) (sql.Result, error) {
	var res sql.Result
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = tx.StmtContext(ctx, s.ws[id]).ExecContext(ctx, args...)
		return err
	})
	return res, err
}

// deleteHeld deletes ref's claim; ErrClaimLost when ref does not hold it.
func deleteHeld(ctx context.Context, st *sql.Stmt, ref store.Ref) error {
	res, err := st.ExecContext(ctx, ref.FileKey, ref.WorkerID)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrClaimLost
	}
	return nil
}

// Release implements store.Library in one transaction: the claim deleted
// only if ref holds it, the update applied only if the file is still the
// content it claimed (upd.Claimed). A file that changed loses the claim in
// the same transaction, which commits, and ErrClaimLost is returned.
func (s *Store) Release(ctx context.Context, ref store.Ref, upd *store.FileUpdate) error {
	var changed bool
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		changed = false
		if err := deleteHeld(ctx, tx.StmtContext(ctx, s.ws[sDeleteHeld]), ref); err != nil || upd == nil {
			return err
		}
		var csize, cmtime int64
		if upd.Claimed != nil {
			csize, cmtime = upd.Claimed.Size, upd.Claimed.MtimeMs
		}
		res, err := tx.StmtContext(ctx, s.ws[sReleaseUpdate]).ExecContext(ctx, ref.FileKey, upd.Attempts,
			ms(upd.NextRetryAt), ms(upd.SkipUntil), b2i(upd.Failed), upd.LastError, upd.Checkpoint, b2i(upd.Missing),
			b2i(upd.Claimed != nil), csize, cmtime, b2i(upd.Reanalyze))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 0 || upd.Claimed == nil {
			return err
		}
		// Nothing updated: the file is gone (the claim goes, as for any
		// release), or it changed under the job.
		_, err = scanFile(tx.StmtContext(ctx, s.ws[sClaimedFile]).QueryRowContext(ctx, ref.FileKey))
		switch {
		case err == nil:
			changed = true
		case errors.Is(err, sql.ErrNoRows):
			err = nil
		}
		return err
	})
	if err == nil && changed {
		err = store.ErrClaimLost
	}
	if err != nil {
		return s.fail("release", ref.FileKey, err)
	}
	return nil
}

// KeepClaim implements store.Library: one conditional UPDATE of ref's claim.
func (s *Store) KeepClaim(ctx context.Context, ref store.Ref, until time.Time) error {
	res, err := s.exec(ctx, sKeepHeld, ref.FileKey, ref.WorkerID, ms(until))
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n == 0 {
			err = store.ErrClaimLost
		}
	}
	if err != nil {
		return s.fail("keep claim", ref.FileKey, err)
	}
	return nil
}

// ReleaseWorker implements store.Library: the claims are deleted, the
// crash counts incremented, the poison files quarantined and the receipt
// written (receipt.go) in one transaction (one statement a file counts and
// quarantines it).
func (s *Store) ReleaseWorker(ctx context.Context, workerID string, death store.Death, crash *store.Crash) ([]store.Released, error) {
	var out []store.Released
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.StmtContext(ctx, s.ws[sReleaseWorker]).QueryContext(ctx, workerID)
		if err != nil {
			return err
		}
		var keys []string
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return err
			}
			keys = append(keys, k)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		slices.Sort(keys)
		get, inc := tx.StmtContext(ctx, s.ws[sCrashGet]), tx.StmtContext(ctx, s.ws[sCrashInc])
		for _, k := range keys {
			r := store.Released{FileKey: k}
			var err error
			if crash == nil {
				err = get.QueryRowContext(ctx, k).Scan(&r.CrashCount)
			} else {
				err = inc.QueryRowContext(ctx, k, crash.QuarantineAt, crash.Reason).Scan(&r.CrashCount)
				r.Quarantined = err == nil && r.CrashCount >= crash.QuarantineAt
			}
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			out = append(out, r)
		}
		out, err = replyReleased(ctx, tx, workerID, death, out)
		return err
	})
	if err != nil {
		return nil, s.fail("release worker", workerID, err)
	}
	if out == nil {
		out = []store.Released{}
	}
	return out, nil
}

// Quarantine implements store.Library.
func (s *Store) Quarantine(ctx context.Context, fileKey, reason string) error {
	res, err := s.exec(ctx, sQuarantine, fileKey, reason)
	if err != nil {
		return s.fail("quarantine", fileKey, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.fail("quarantine", fileKey, err)
	}
	if n == 0 {
		return s.fail("quarantine", fileKey, store.ErrNotFound)
	}
	return nil
}

// renewChunk bounds the worker ids per statement (SQLite's parameter limit).
const renewChunk = 500

// RenewLeases implements store.Library: one conditional UPDATE (one per 500
// workers) in one transaction; a lease is only ever extended.
func (s *Store) RenewLeases(ctx context.Context, workerIDs []string, until time.Time) (int, error) {
	if len(workerIDs) == 0 {
		return 0, nil
	}
	total := 0
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		total = 0
		for ids := range slices.Chunk(workerIDs, renewChunk) {
			q := `UPDATE worker_claims SET lease_until = ?1 WHERE lease_until < ?1 AND worker_id IN (?` +
				strings.Repeat(", ?", len(ids)-1) + `)`
			args := make([]any, 0, len(ids)+1)
			args = append(args, ms(until))
			for _, id := range ids {
				args = append(args, id)
			}
			res, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			total += int(n)
		}
		return nil
	})
	if err != nil {
		return 0, s.fail("renew leases", fmt.Sprintf("(%d workers)", len(workerIDs)), err)
	}
	return total, nil
}

// CleanupClaims implements store.Library: conditional deletes (expired
// lease; file gone, tagged, failed or invalid) in one transaction, each
// re-checking its condition as it deletes.
//
// It also settles the waits that have ended (settleWaits): housekeeping
// of the discovery indexes (see version2), in transactions of its own
// after the deletes commit. When settling fails, the deleted claims are
// returned with the error.
func (s *Store) CleanupClaims(ctx context.Context, now time.Time) ([]store.Claim, error) {
	var out []store.Claim
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		for _, id := range []int{sCleanupExpired, sCleanupIneligible} {
			var args []any
			if id == sCleanupExpired {
				args = append(args, ms(now))
			}
			rows, err := tx.StmtContext(ctx, s.ws[id]).QueryContext(ctx, args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var c store.Claim
				var at, until int64
				if err := rows.Scan(&c.FileKey, &c.WorkerID, &at, &until, &c.Kind); err != nil {
					rows.Close()
					return err
				}
				c.ClaimedAt, c.LeaseUntil = tm(at), tm(until)
				out = append(out, c)
			}
			if err := rows.Close(); err != nil {
				return err
			}
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.fail("cleanup claims", "", err)
	}
	slices.SortFunc(out, func(a, b store.Claim) int { return strings.Compare(a.FileKey, b.FileKey) })
	if out == nil {
		out = []store.Claim{}
	}
	// The deletes have committed: a failure to settle comes with them.
	if err := s.settleWaits(ctx, now, s.cfg.busyTimeout); err != nil {
		return out, s.fail("cleanup claims", fmt.Sprintf("(settling waits, after deleting %d claims)", len(out)), err)
	}
	return out, nil
}

// File implements store.Library.
func (s *Store) File(ctx context.Context, key string) (store.File, error) {
	f, err := scanFile(s.rs[sFile].QueryRowContext(ctx, key))
	if errors.Is(err, sql.ErrNoRows) {
		return store.File{}, s.fail("file", key, store.ErrNotFound)
	}
	if err != nil {
		return store.File{}, s.fail("file", key, err)
	}
	return f, nil
}

// Counts implements store.Library: one read transaction of the four rows of
// library_counts (kept by triggers, see version2) and the claims.
func (s *Store) Counts(ctx context.Context) (store.Counts, error) {
	var c store.Counts
	if err := s.checkFile(); err != nil { // the count a person reads must be of the file at the path
		return c, s.fail("counts", "", err)
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return c, s.fail("counts", "", err)
	}
	defer tx.Rollback()
	rows, err := tx.StmtContext(ctx, s.rs[sCounts]).QueryContext(ctx)
	if err != nil {
		return store.Counts{}, s.fail("counts", "", err)
	}
	defer rows.Close()
	for rows.Next() {
		var class string
		var n int
		if err := rows.Scan(&class, &n); err != nil {
			return store.Counts{}, s.fail("counts", "", err)
		}
		c.AddClass(class, n)
	}
	if err := rows.Err(); err != nil {
		return store.Counts{}, s.fail("counts", "", err)
	}
	if err := tx.StmtContext(ctx, s.rs[sClaimCount]).QueryRowContext(ctx).Scan(&c.Claimed); err != nil {
		return store.Counts{}, s.fail("counts", "", err)
	}
	return c, nil
}

// GetMeta implements store.Meta.
func (s *Store) GetMeta(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := s.rs[sGetMeta].QueryRowContext(ctx, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.fail("get meta", key, err)
	}
	return v, true, nil
}

// SetMeta implements store.Meta.
func (s *Store) SetMeta(ctx context.Context, key, value string) error {
	if _, err := s.exec(ctx, sSetMeta, key, value); err != nil {
		return s.fail("set meta", key, err)
	}
	return nil
}

// SwapMeta implements store.Meta: an insert that does nothing when the key
// exists, or an update conditioned on the old value.
func (s *Store) SwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	var res sql.Result
	var err error
	if old == "" {
		res, err = s.exec(ctx, sInsertMeta, key, value)
	} else {
		res, err = s.exec(ctx, sSwapMeta, key, old, value)
	}
	if err != nil {
		return false, s.fail("swap meta", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, s.fail("swap meta", key, err)
	}
	return n == 1, nil
}

// LoadRestart implements store.RestartStates.
func (s *Store) LoadRestart(ctx context.Context, key string) (restart.State, bool, error) {
	var st restart.State
	var recent string
	err := s.rs[sLoadRestart].QueryRowContext(ctx, key).Scan(&st.Component, &st.RestartCount, &st.Consecutive,
		&recent, &st.LastRestartWallMs, &st.FailedAtWallMs, &st.FailureReason, &st.UpdatedAtWallMs)
	if errors.Is(err, sql.ErrNoRows) {
		return restart.State{}, false, nil
	}
	if err != nil {
		return restart.State{}, false, s.fail("load restart", key, err)
	}
	if err := json.Unmarshal([]byte(recent), &st.Recent); err != nil {
		return restart.State{}, false, s.fail("load restart", key, fmt.Errorf("bad recent %q: %w", recent, err))
	}
	return st, true, nil
}

// SaveRestart implements store.RestartStates.
func (s *Store) SaveRestart(ctx context.Context, key string, st restart.State) error {
	recent := st.Recent
	if recent == nil {
		recent = []int64{}
	}
	doc, err := json.Marshal(recent)
	if err != nil {
		return s.fail("save restart", key, err)
	}
	_, err = s.exec(ctx, sSaveRestart, key, st.Component, st.RestartCount, st.Consecutive, string(doc),
		st.LastRestartWallMs, st.FailedAtWallMs, st.FailureReason, st.UpdatedAtWallMs)
	if err != nil {
		return s.fail("save restart", key, err)
	}
	return nil
}

// AppendHistory implements store.History (one transaction per batch): a
// row whose identity is stored already, or earlier in the batch, is
// skipped (sAppendHistory).
func (s *Store) AppendHistory(ctx context.Context, rows []store.HistoryRow) error {
	if len(rows) == 0 {
		return nil
	}
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		st := tx.StmtContext(ctx, s.ws[sAppendHistory])
		for _, r := range rows {
			if _, err := st.ExecContext(ctx, ms(r.At), r.Instance, r.Component, r.Status); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.fail("append history", fmt.Sprintf("(%d rows)", len(rows)), err)
	}
	return nil
}

// pruneBatch is the most history rows one PruneHistory statement deletes,
// so that a large backlog does not hold the write lock for long.
const pruneBatch = 10000

// PruneHistory implements store.HistoryRetention, in statements of at most
// pruneBatch rows (index on at_ms).
func (s *Store) PruneHistory(ctx context.Context, before time.Time) (int, error) {
	total := 0
	for {
		var n int64
		err := s.withTx(ctx, func(tx *sql.Tx) error {
			res, err := tx.StmtContext(ctx, s.ws[sPruneHistory]).ExecContext(ctx, ms(before), pruneBatch)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return total, s.fail("prune history", fmt.Sprintf("(before %s, %d rows deleted)", before.UTC().Format(time.RFC3339), total), err)
		}
		total += int(n)
		if n < pruneBatch {
			return total, nil
		}
	}
}

// ListFiles implements store.Inventory.
func (s *Store) ListFiles(ctx context.Context, after string, limit int) ([]store.File, error) {
	return s.queryFiles(ctx, "list files", sListFiles, limit, after, sqlLimit(limit))
}

// MarkMissing implements store.Inventory, in one transaction.
func (s *Store) MarkMissing(ctx context.Context, keys []string) (int, error) {
	return s.updateEach(ctx, sMarkMissing, "mark missing", keys)
}

// RetryFailed implements store.Inventory, in one transaction.
func (s *Store) RetryFailed(ctx context.Context, keys []string) (int, error) {
	return s.updateEach(ctx, sRetryFailed, "retry failed", keys)
}

// Retag implements store.Inventory, in one transaction: one conditional
// UPDATE per key (sRetag), which re-checks the file and its claim; the
// library_counts trigger moves each changed file from tagged to pending.
func (s *Store) Retag(ctx context.Context, keys []string, version string) (int, error) {
	if version == "" {
		return 0, nil
	}
	return s.updateEach(ctx, sRetag, "retag", keys, version)
}

// ForgetMissing implements store.Inventory, in one transaction.
func (s *Store) ForgetMissing(ctx context.Context, keys []string) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	var n int
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		n = 0
		file, tags, claim := tx.StmtContext(ctx, s.ws[sForgetFile]), tx.StmtContext(ctx, s.ws[sForgetTags]), tx.StmtContext(ctx, s.ws[sForgetClaim])
		vector := tx.StmtContext(ctx, s.ws[sForgetVector])
		for _, k := range keys {
			res, err := file.ExecContext(ctx, k)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			if c, err := res.RowsAffected(); err != nil {
				return err
			} else if c == 0 {
				continue
			}
			n++
			for _, st := range []*sql.Stmt{tags, claim, vector} {
				if _, err := st.ExecContext(ctx, k); err != nil {
					return fmt.Errorf("%s: %w", k, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, s.fail("forget missing", fmt.Sprintf("(%d files)", len(keys)), err)
	}
	return n, nil
}

// updateEach runs the write statement id once per key in one transaction,
// with the key as its first argument and args after it, and returns how
// many rows it changed.
func (s *Store) updateEach(ctx context.Context, id int, op string, keys []string, args ...any) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	var n int64
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		n = 0
		st := tx.StmtContext(ctx, s.ws[id])
		argv := append([]any{nil}, args...)
		for _, k := range keys {
			argv[0] = k
			res, err := st.ExecContext(ctx, argv...)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			c, err := res.RowsAffected()
			if err != nil {
				return err
			}
			n += c
		}
		return nil
	})
	if err != nil {
		return 0, s.fail(op, fmt.Sprintf("(%d files)", len(keys)), err)
	}
	return int(n), nil
}

// Tags returns the tags stored by the file's last completion (empty when it
// was never completed). It is not part of the port (the contract suite's
// storetest.TagReader).
func (s *Store) Tags(ctx context.Context, key string) (map[string]string, error) {
	var doc string
	err := s.rs[sTags].QueryRowContext(ctx, key).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, s.fail("tags", key, err)
	}
	tags := map[string]string{}
	if err := json.Unmarshal([]byte(doc), &tags); err != nil {
		return nil, s.fail("tags", key, fmt.Errorf("bad tags document: %w", err))
	}
	return tags, nil
}

// RecentHistory returns the newest limit health-history rows, oldest first
// (storetest.HistoryReader; for the history API).
func (s *Store) RecentHistory(ctx context.Context, limit int) ([]store.HistoryRow, error) {
	rows, err := s.rs[sHistory].QueryContext(ctx, limit)
	if err != nil {
		return nil, s.fail("history", "", err)
	}
	defer rows.Close()
	var out []store.HistoryRow
	for rows.Next() {
		var r store.HistoryRow
		var at int64
		if err := rows.Scan(&at, &r.Instance, &r.Component, &r.Status); err != nil {
			return nil, s.fail("history", "", err)
		}
		r.At = tm(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("history", "", err)
	}
	return out, nil
}

// settleWaits moves the files whose wait ended by now from the waiting
// index to the ready one, settleBatch a transaction (each holds the write
// lock about 20–70 ms at a million files), until none is left or ctx ends;
// each transaction waits up to lockWait for the write lock.
// Files wait one at a time as jobs fail, so a cleanup period (30 s) rarely
// has a batch to settle; a backlog comes from waits that ended while no
// main process ran (Open settles those) or a version 1 file's upgrade.
func (s *Store) settleWaits(ctx context.Context, now time.Time, lockWait time.Duration) error {
	for {
		var n int64
		err := s.withTxWaiting(ctx, lockWait, func(tx *sql.Tx) error {
			res, err := tx.StmtContext(ctx, s.ws[sSettleWaits]).ExecContext(ctx, ms(now), settleBatch)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil || n < settleBatch {
			return err
		}
	}
}

// settleBatch is the most waits one transaction settles.
const settleBatch = 1000
