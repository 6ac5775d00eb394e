package arangodb

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/arangodb/go-driver/v2/arangodb"

	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
)

// fileDoc is a library_files document.
type fileDoc struct {
	Key  string `json:"_key"`
	Path string `json:"path"`
	// PathRaw holds a path that is not valid UTF-8 (JSON strings must be),
	// base64-encoded; Path then shows it with U+FFFD for the bad bytes.
	PathRaw       string `json:"path_raw,omitempty"`
	Size          num64  `json:"size"`
	MtimeMs       num64  `json:"mtime_ms"`
	NeedsTagging  bool   `json:"needs_tagging"`
	IsValid       bool   `json:"is_valid"`
	Tagged        bool   `json:"tagged"`
	TaggedVersion string `json:"tagged_version"`
	LastTaggedAt  num64  `json:"last_tagged_at"`
	Attempts      num64  `json:"attempts"`
	NextRetryAt   num64  `json:"next_retry_at"`
	SkipUntil     num64  `json:"skip_until"`
	CrashCount    num64  `json:"crash_count"`
	Failed        bool   `json:"failed"`
	LastError     string `json:"last_error"`
	Checkpoint    string `json:"checkpoint"`
	StatSeq       num64  `json:"stat_seq"` // absent (a document from before it): 0
}

func toDoc(f store.File) fileDoc {
	path, raw := f.Path, ""
	if !utf8.ValidString(path) {
		path, raw = strings.ToValidUTF8(path, "\uFFFD"), base64.StdEncoding.EncodeToString([]byte(path))
	}
	return fileDoc{
		Key: f.Key, Path: path, PathRaw: raw, Size: num64(f.Size), MtimeMs: num64(f.MtimeMs), NeedsTagging: f.NeedsTagging,
		IsValid: f.IsValid, Tagged: f.Tagged, TaggedVersion: f.TaggedVersion, LastTaggedAt: num64(ms(f.LastTaggedAt)),
		Attempts: num64(f.Attempts), NextRetryAt: num64(ms(f.NextRetryAt)), SkipUntil: num64(ms(f.SkipUntil)), CrashCount: num64(f.CrashCount),
		Failed: f.Failed, LastError: f.LastError, Checkpoint: f.Checkpoint, StatSeq: num64(f.StatSeq),
	}
}

func (d fileDoc) file() store.File {
	path := d.Path
	if b, err := base64.StdEncoding.DecodeString(d.PathRaw); err == nil && d.PathRaw != "" {
		path = string(b)
	}
	return store.File{
		Key: d.Key, Path: path, Size: int64(d.Size), MtimeMs: int64(d.MtimeMs), NeedsTagging: d.NeedsTagging,
		IsValid: d.IsValid, Tagged: d.Tagged, TaggedVersion: d.TaggedVersion, LastTaggedAt: tm(int64(d.LastTaggedAt)),
		Attempts: int(d.Attempts), NextRetryAt: tm(int64(d.NextRetryAt)), SkipUntil: tm(int64(d.SkipUntil)), CrashCount: int(d.CrashCount),
		Failed: d.Failed, LastError: d.LastError, Checkpoint: d.Checkpoint, StatSeq: int64(d.StatSeq),
	}
}

// num64 is a stored number. AQL computes in doubles: a value written by
// arithmetic (crash_count + 1) may come back as 2.0, which encoding/json
// refuses for an integer; num64 takes any JSON number (and null, as 0).
type num64 int64

func (n *num64) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		*n = 0
		return nil
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		*n = num64(i)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("not a number: %.40s", s)
	}
	*n = num64(math.Round(f))
	return nil
}

// claimDoc is a worker_claims document, keyed claim_<file_key>.
type claimDoc struct {
	Key        string `json:"_key"`
	FileKey    string `json:"file_key"`
	WorkerID   string `json:"worker_id"`
	ClaimedAt  num64  `json:"claimed_at"`
	LeaseUntil num64  `json:"lease_until"`
	Kind       string `json:"kind"` // absent (a claim from before kinds): tagging
}

// upsertChunk bounds the files of one UPSERT statement; a larger batch runs
// as several statements in one stream transaction.
const upsertChunk = 1000

// UpsertFiles implements store.Library. The batch is validated first (an
// empty key, or one ArangoDB cannot take as a document key, rejects it
// whole), a key given twice counts once (the last entry wins), and it is
// applied atomically: one statement, or one stream transaction for more than
// 1000 files. Callers with very large libraries should pass batches of a few
// thousand files. Each statement answers the outcome of each file it wrote
// (qUpsertFiles); the files it did not write are unchanged.
func (s *Store) UpsertFiles(ctx context.Context, files []store.File) (store.Upserted, error) {
	last := make(map[string]int, len(files))
	for i, f := range files {
		if f.Key == "" {
			return store.Upserted{}, fmt.Errorf("arangodb: upsert: file %d (path %q) has an empty key", i, f.Path)
		}
		if !validFileKey(f.Key) {
			return store.Upserted{}, fmt.Errorf("arangodb: upsert: file %d (path %q) has key %q, not a valid document key "+
				"(letters, digits and _-:.@()+,=;$!*'%%, at most %d bytes)", i, f.Path, f.Key, maxKeyLen-len(claimPrefix))
		}
		last[f.Key] = i
	}
	if len(files) == 0 {
		return store.Upserted{}, nil
	}
	docs := make([]fileDoc, 0, len(last))
	for i, f := range files {
		if last[f.Key] == i {
			docs = append(docs, toDoc(f))
		}
	}
	var did store.Upserted
	// upsert runs qUpsertFiles on one chunk and counts its answer.
	upsert := func(ctx context.Context, q querier, chunk []fileDoc) error {
		written, err := queryAll[string](ctx, q, qUpsertFiles, map[string]any{"docs": chunk})
		if err != nil {
			return err
		}
		for _, w := range written {
			o, ok := upsertOutcomes[w]
			if !ok {
				return fmt.Errorf("upsert answered %.40q, not an outcome", w)
			}
			did.Count(o)
		}
		did.Unchanged += len(chunk) - len(written)
		return nil
	}
	// Concurrent upserts of the same new key: the loser's insert violates
	// the unique key and runs again, then finds the file unchanged.
	err := s.write(ctx, alsoUnique, func(ctx context.Context) error {
		did = store.Upserted{} // a try again starts over
		if len(docs) <= upsertChunk {
			return upsert(ctx, s.db, docs)
		}
		cols := arangodb.TransactionCollections{Write: []string{colFiles}, Read: []string{colMeta}}
		return s.withTxOn(ctx, cols, func(ctx context.Context, tx arangodb.Transaction) error {
			for chunk := range slices.Chunk(docs, upsertChunk) {
				if err := upsert(ctx, tx, chunk); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return store.Upserted{}, s.fail("upsert", fmt.Sprintf("(%d files)", len(files)), err)
	}
	return did, nil
}

// upsertOutcomes are the outcomes qUpsertFiles answers, by name.
var upsertOutcomes = map[string]store.UpsertOutcome{
	"inserted": store.UpsertInserted,
	"changed":  store.UpsertChanged,
	"returned": store.UpsertReturned,
}

// NextStatSeq implements store.Library: one query advances the counter in
// meta and returns it.
func (s *Store) NextStatSeq(ctx context.Context) (int64, error) {
	var n num64
	err := s.write(ctx, alsoUnique, func(ctx context.Context) error {
		var err error
		n, err = queryOne[num64](ctx, s.db, qNextStatSeq, "stat sequence", nil)
		return err
	})
	if err != nil {
		return 0, s.fail("next stat seq", "", err)
	}
	return int64(n), nil
}

// Discover implements store.Library. A limit <= 0 means no limit. Key
// order is the server's string order, which is byte order for keys of
// [0-9a-f] (the scanner's); see queries.go.
func (s *Store) Discover(ctx context.Context, now time.Time, after string, limit int) ([]store.File, error) {
	return s.queryFiles(ctx, "discover", qDiscover, qDiscoverAll, limit, map[string]any{"after": after, "now": ms(now)})
}

// queryFiles runs a read query returning file documents: q with @limit
// bound to limit, or qAll (q without its LIMIT) when limit <= 0. op names
// the operation in errors.
func (s *Store) queryFiles(ctx context.Context, op, q, qAll string, limit int, bind map[string]any) ([]store.File, error) {
	if limit > 0 {
		bind["limit"] = limit
	} else {
		q = qAll
	}
	var docs []fileDoc
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		docs, err = queryAll[fileDoc](ctx, s.db, q, bind)
		return err
	})
	if err != nil {
		return nil, s.fail(op, "", err)
	}
	out := make([]store.File, len(docs))
	for i, d := range docs {
		out[i] = d.file()
	}
	return out, nil
}

// Claim implements store.Library: one query checks that no claim exists and
// that the file is eligible at c.ClaimedAt, and inserts the claim document
// claim_<file_key>; its unique key makes exactly one of racing claims win.
// The same query returns the file it claimed.
func (s *Store) Claim(ctx context.Context, c store.Claim) (store.File, error) {
	if !validFileKey(c.FileKey) {
		return store.File{}, s.fail("claim", c.FileKey, store.ErrNotEligible) // no such file can exist
	}
	bind := map[string]any{
		"file": c.FileKey, "claim": c.Key(), "worker": c.WorkerID,
		"at": ms(c.ClaimedAt), "until": ms(c.LeaseUntil), "kind": string(c.Kind), "model_set": c.ModelSet,
	}
	if !c.Kind.Known() {
		return store.File{}, s.fail("claim", c.FileKey, fmt.Errorf("claim of unknown kind %q", c.Kind))
	}
	var f store.File
	err := s.write(ctx, conflictsOnly, func(ctx context.Context) error {
		res, err := queryAll[claimResult](ctx, s.db, qClaim, bind)
		switch {
		case hasErrorNum(err, errUniqueViolate):
			return store.ErrConflict
		case err != nil:
			return err
		case len(res) != 1:
			return fmt.Errorf("claim query returned %d rows", len(res))
		}
		switch res[0].Status {
		case "claimed":
			if res[0].File == nil {
				return errors.New("claim query returned no file")
			}
			f = res[0].File.file()
			return nil
		case "conflict":
			return store.ErrConflict
		case "not_eligible":
			return store.ErrNotEligible
		}
		return fmt.Errorf("claim query returned %q", res[0].Status)
	})
	if err != nil {
		return store.File{}, s.fail("claim", c.FileKey, err)
	}
	return f, nil
}

// claimResult is qClaim's answer.
type claimResult struct {
	Status string   `json:"status"`
	File   *fileDoc `json:"file"`
}

// errFileGone: the claimed file vanished under its claim.
var errFileGone = errors.New("file gone")

// Complete implements store.Library in one stream transaction writing
// worker_claims, library_files and file_tags: delete the claim only if ref
// holds it (ErrClaimLost otherwise: the transaction is aborted, nothing
// changed), mark the file tagged, store the tags, commit. A file that
// vanished under its claim: the claim is dropped all the same and
// ErrNotFound returned (as the reference store does).
func (s *Store) Complete(ctx context.Context, ref store.Ref, c store.Completion) error {
	if !validFileKey(ref.FileKey) {
		return s.fail("complete", ref.FileKey, store.ErrClaimLost)
	}
	tags := c.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	held := map[string]any{"claim": claimPrefix + ref.FileKey, "worker": ref.WorkerID}
	file := map[string]any{"file": ref.FileKey, "version": c.Version, "at": ms(c.At), "rewritten": false, "size": 0, "mtime": 0}
	if c.Rewritten != nil {
		file["rewritten"], file["size"], file["mtime"] = true, c.Rewritten.Size, c.Rewritten.MtimeMs
	}
	file["claimed"], file["csize"], file["cmtime"] = false, 0, 0
	if c.Claimed != nil {
		file["claimed"], file["csize"], file["cmtime"] = true, c.Claimed.Size, c.Claimed.MtimeMs
	}
	putTags := map[string]any{"file": ref.FileKey, "version": c.Version, "at": ms(c.At), "tags": tags,
		"labels": store.Labels(tags), "scores": store.Scores(tags)}
	err := s.write(ctx, alsoUnique, func(ctx context.Context) error {
		cols := arangodb.TransactionCollections{Write: []string{colClaims, colFiles, colTags}, Read: []string{colMeta}}
		return s.withTxOn(ctx, cols, func(ctx context.Context, tx arangodb.Transaction) error {
			if n, err := queryAll[int](ctx, tx, qRemoveHeld, held); err != nil {
				return err
			} else if len(n) == 0 {
				return store.ErrClaimLost
			}
			res, err := queryAll[string](ctx, tx, qCompleteFile, file)
			switch {
			case err != nil:
				return err
			case len(res) != 1:
				return fmt.Errorf("complete query returned %d rows", len(res))
			case res[0] == "gone":
				return &commitAnyway{store.ErrNotFound}
			case res[0] == "changed": // the claim goes, the file stays as it is
				return &commitAnyway{store.ErrClaimLost}
			case res[0] != "done":
				return fmt.Errorf("complete query returned %q", res[0])
			}
			_, err = queryAll[int](ctx, tx, qPutTags, putTags)
			return err
		})
	})
	if err != nil {
		if hasErrorNum(err, errDocNotFound) {
			err = store.ErrClaimLost // removed under us
		}
		return s.fail("complete", ref.FileKey, err)
	}
	return nil
}

// Release implements store.Library: without an update one conditional
// delete; with one, a stream transaction that deletes the claim only if ref
// holds it and applies upd to the file if it is still the content the job
// claimed (upd.Claimed). A file that changed: the transaction commits the
// claim's deletion alone and ErrClaimLost is returned.
func (s *Store) Release(ctx context.Context, ref store.Ref, upd *store.FileUpdate) error {
	if !validFileKey(ref.FileKey) {
		return s.fail("release", ref.FileKey, store.ErrClaimLost)
	}
	held := map[string]any{"claim": claimPrefix + ref.FileKey, "worker": ref.WorkerID}
	err := s.write(ctx, conflictsOnly, func(ctx context.Context) error {
		if upd == nil {
			n, err := queryAll[int](ctx, s.db, qRemoveHeld, held)
			if err == nil && len(n) == 0 {
				return store.ErrClaimLost
			}
			return err
		}
		return s.withTx(ctx, []string{colClaims, colFiles}, func(ctx context.Context, tx arangodb.Transaction) error {
			if n, err := queryAll[int](ctx, tx, qRemoveHeld, held); err != nil {
				return err
			} else if len(n) == 0 {
				return store.ErrClaimLost
			}
			bind := map[string]any{
				"file": ref.FileKey, "attempts": upd.Attempts, "retry": ms(upd.NextRetryAt), "skip": ms(upd.SkipUntil),
				"failed": upd.Failed, "error": upd.LastError, "checkpoint": upd.Checkpoint, "missing": upd.Missing,
				"reanalyze": upd.Reanalyze,
				"claimed":   false, "csize": 0, "cmtime": 0,
			}
			if upd.Claimed != nil {
				bind["claimed"], bind["csize"], bind["cmtime"] = true, upd.Claimed.Size, upd.Claimed.MtimeMs
			}
			res, err := queryAll[string](ctx, tx, qReleaseFile, bind)
			switch {
			case err != nil:
				return err
			case len(res) != 1:
				return fmt.Errorf("release query returned %d rows", len(res))
			case res[0] == "changed": // the claim goes, the file stays as it is
				return &commitAnyway{store.ErrClaimLost}
			case res[0] != "done" && res[0] != "gone":
				return fmt.Errorf("release query returned %q", res[0])
			}
			return nil
		})
	})
	if err != nil {
		if hasErrorNum(err, errDocNotFound) {
			err = store.ErrClaimLost
		}
		return s.fail("release", ref.FileKey, err)
	}
	return nil
}

// ReleaseWorker implements store.Library: one stream transaction deletes
// the worker's claims, (with crash) increments the crash counts and
// quarantines the files whose count reaches crash.QuarantineAt, and
// answers with the receipt (receipt.go). A
// claim of the worker deleted concurrently (CleanupClaims on another host)
// may fail the REMOVE with "document not found": the transaction is aborted
// and run again on a fresh snapshot, which no longer holds that claim, so
// the result names exactly the claims this call deleted.
func (s *Store) ReleaseWorker(ctx context.Context, workerID string, death store.Death, crash *store.Crash) ([]store.Released, error) {
	type counted struct {
		Key         string `json:"key"`
		CrashCount  num64  `json:"crash_count"`
		Quarantined bool   `json:"quarantined"`
	}
	var out []store.Released
	err := s.write(ctx, alsoGone, func(ctx context.Context) error {
		out = out[:0]
		return s.withTx(ctx, []string{colClaims, colFiles, colMeta}, func(ctx context.Context, tx arangodb.Transaction) error {
			keys, err := queryAll[string](ctx, tx, qRemoveWorkerClaims, map[string]any{"worker": workerID})
			if err != nil {
				return err
			}
			if len(keys) == 0 {
				out, err = replyReleased(ctx, tx, workerID, death, out)
				return err
			}
			q, bind := qCrashCounts, map[string]any{"keys": keys}
			if crash != nil {
				q, bind["quarantineAt"], bind["reason"] = qCountCrashes, crash.QuarantineAt, crash.Reason
			}
			counts, err := queryAll[counted](ctx, tx, q, bind)
			if err != nil {
				return err
			}
			byKey := make(map[string]counted, len(counts))
			for _, c := range counts {
				byKey[c.Key] = c
			}
			slices.Sort(keys)
			for _, k := range keys {
				c := byKey[k]
				out = append(out, store.Released{FileKey: k, CrashCount: int(c.CrashCount), Quarantined: c.Quarantined})
			}
			out, err = replyReleased(ctx, tx, workerID, death, out)
			return err
		})
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
	if !validFileKey(fileKey) {
		return s.fail("quarantine", fileKey, store.ErrNotFound)
	}
	err := s.write(ctx, conflictsOnly, func(ctx context.Context) error {
		n, err := queryAll[int](ctx, s.db, qQuarantine, map[string]any{"file": fileKey, "reason": reason})
		if err == nil && len(n) == 0 {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		if hasErrorNum(err, errDocNotFound) {
			err = store.ErrNotFound
		}
		return s.fail("quarantine", fileKey, err)
	}
	return nil
}

// KeepClaim implements store.Library: one conditional UPDATE of ref's
// claim document. A claim deleted concurrently may fail it with "document
// not found": the claim is lost either way.
func (s *Store) KeepClaim(ctx context.Context, ref store.Ref, until time.Time) error {
	if !validFileKey(ref.FileKey) {
		return s.fail("keep claim", ref.FileKey, store.ErrClaimLost)
	}
	held := map[string]any{"claim": claimPrefix + ref.FileKey, "worker": ref.WorkerID, "until": ms(until)}
	err := s.write(ctx, conflictsOnly, func(ctx context.Context) error {
		n, err := queryAll[int](ctx, s.db, qKeepHeld, held)
		if err == nil && len(n) == 0 {
			return store.ErrClaimLost
		}
		return err
	})
	if err != nil {
		if hasErrorNum(err, errDocNotFound) {
			err = store.ErrClaimLost
		}
		return s.fail("keep claim", ref.FileKey, err)
	}
	return nil
}

// RenewLeases implements store.Library: one conditional UPDATE over the
// claims of all the workers; a lease is only ever extended. A claim deleted
// concurrently (completed, released, cleaned up) may fail the UPDATE with
// "document not found": the statement had no effect and runs again on a
// fresh snapshot, without that claim.
func (s *Store) RenewLeases(ctx context.Context, workerIDs []string, until time.Time) (int, error) {
	if len(workerIDs) == 0 {
		return 0, nil
	}
	var n int
	err := s.write(ctx, alsoGone, func(ctx context.Context) error {
		var err error
		n, err = queryCount(ctx, s.db, qRenewLeases, map[string]any{"ids": workerIDs, "until": ms(until)})
		return err
	})
	if err != nil {
		return 0, s.fail("renew leases", fmt.Sprintf("(%d workers)", len(workerIDs)), err)
	}
	return n, nil
}

// CleanupClaims implements store.Library: one query that re-checks the
// condition (expired lease; file gone, tagged, failed or invalid) and
// removes the claims it holds for, in one transaction. A claim deleted
// concurrently (completed, released) may fail the REMOVE with "document not
// found": the statement had no effect and runs again on a fresh snapshot,
// so the claims returned are exactly the ones this call removed.
func (s *Store) CleanupClaims(ctx context.Context, now time.Time) ([]store.Claim, error) {
	var docs []claimDoc
	err := s.write(ctx, alsoGone, func(ctx context.Context) error {
		var err error
		docs, err = queryOne[[]claimDoc](ctx, s.db, qCleanupClaims, "removed-claims", map[string]any{"now": ms(now)})
		return err
	})
	if err != nil {
		return nil, s.fail("cleanup claims", "", err)
	}
	out := make([]store.Claim, 0, len(docs))
	for _, d := range docs {
		out = append(out, store.Claim{FileKey: d.FileKey, WorkerID: d.WorkerID, ClaimedAt: tm(int64(d.ClaimedAt)), LeaseUntil: tm(int64(d.LeaseUntil)),
			Kind: store.JobKind(d.Kind)})
	}
	slices.SortFunc(out, func(a, b store.Claim) int { return strings.Compare(a.FileKey, b.FileKey) })
	return out, nil
}

// File implements store.Library.
func (s *Store) File(ctx context.Context, key string) (store.File, error) {
	if !validFileKey(key) {
		return store.File{}, s.fail("file", key, store.ErrNotFound)
	}
	var docs []fileDoc
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		docs, err = queryAll[fileDoc](ctx, s.db, qFile, map[string]any{"key": key})
		return err
	})
	if err != nil {
		return store.File{}, s.fail("file", key, err)
	}
	if len(docs) == 0 {
		return store.File{}, s.fail("file", key, store.ErrNotFound)
	}
	return docs[0].file(), nil
}

// ListFiles implements store.Inventory, in the key order of Discover
// (byte order for keys of [0-9a-f]).
func (s *Store) ListFiles(ctx context.Context, after string, limit int) ([]store.File, error) {
	return s.queryFiles(ctx, "list files", qListFiles, qListFilesAll, limit, map[string]any{"after": after})
}

// MarkMissing implements store.Inventory in one query (one transaction).
func (s *Store) MarkMissing(ctx context.Context, keys []string) (int, error) {
	return s.updateEach(ctx, qMarkMissing, "mark missing", keys, conflictsOnly, nil)
}

// RetryFailed implements store.Inventory.
func (s *Store) RetryFailed(ctx context.Context, keys []string) (int, error) {
	return s.updateEach(ctx, qRetryFailed, "retry failed", keys, conflictsOnly, nil)
}

// Retag implements store.Inventory in one query (one transaction, qRetag),
// which re-checks each file and its claim. A file written after the
// query's snapshot (completed meanwhile) makes it fail with a write-write
// conflict, one deleted meanwhile (forgotten) with "document not found"
// (1202): it runs again on a fresh snapshot, where the condition is
// evaluated anew.
func (s *Store) Retag(ctx context.Context, keys []string, version string) (int, error) {
	if version == "" {
		return 0, nil
	}
	return s.updateEach(ctx, qRetag, "retag", keys, alsoGone, map[string]any{"version": version})
}

// ForgetMissing implements store.Inventory, in one stream transaction: the
// files first, then the tags, vectors, infos and claims of those it deleted.
func (s *Store) ForgetMissing(ctx context.Context, keys []string) (int, error) {
	valid := fileKeys(keys)
	if len(valid) == 0 {
		return 0, nil
	}
	var n int
	err := s.write(ctx, conflictsOnly, func(ctx context.Context) error {
		return s.withTx(ctx, []string{colFiles, colTags, colClaims, colVectors, colInfo}, func(ctx context.Context, tx arangodb.Transaction) error {
			gone, err := queryAll[string](ctx, tx, qForgetFiles, map[string]any{"keys": valid})
			if err != nil {
				return err
			}
			n = len(gone)
			if n == 0 {
				return nil
			}
			if _, err := queryAll[int](ctx, tx, qForgetTags, map[string]any{"keys": gone}); err != nil {
				return err
			}
			if _, err := queryAll[int](ctx, tx, qForgetVectors, map[string]any{"keys": gone}); err != nil {
				return err
			}
			if _, err := queryAll[int](ctx, tx, qForgetInfo, map[string]any{"keys": gone}); err != nil {
				return err
			}
			claims := make([]string, len(gone))
			for i, k := range gone {
				claims[i] = claimPrefix + k
			}
			_, err = queryAll[int](ctx, tx, qForgetClaims, map[string]any{"keys": claims})
			return err
		})
	})
	if err != nil {
		return 0, s.fail("forget missing", fmt.Sprintf("(%d files)", len(keys)), err)
	}
	return n, nil
}

// fileKeys returns the keys that can name a file, each once, sorted.
func fileKeys(keys []string) []string {
	valid := make([]string, 0, len(keys))
	for _, k := range keys {
		if validFileKey(k) { // no other key can name a file
			valid = append(valid, k)
		}
	}
	slices.Sort(valid)
	return slices.Compact(valid) // a statement would count a repeat again
}

// updateEach runs q, a statement over the files of @keys that returns how
// many it changed, with each valid key once and the other bind parameters
// of bind, and returns that count; it runs q again after a conflict or an
// error that also names.
func (s *Store) updateEach(ctx context.Context, q, op string, keys []string, also retryAlso, bind map[string]any) (int, error) {
	valid := fileKeys(keys)
	if len(valid) == 0 {
		return 0, nil
	}
	params := map[string]any{"keys": valid}
	for k, v := range bind {
		params[k] = v
	}
	var n int
	err := s.write(ctx, also, func(ctx context.Context) error {
		var err error
		n, err = queryCount(ctx, s.db, q, params)
		return err
	})
	if err != nil {
		return 0, s.fail(op, fmt.Sprintf("(%d files)", len(keys)), err)
	}
	return n, nil
}

// Counts implements store.Library (one query, one snapshot; a scan of the
// library, meant for status displays rather than hot paths).
func (s *Store) Counts(ctx context.Context) (store.Counts, error) {
	type result struct {
		Classes []struct {
			Cls string `json:"cls"`
			N   num64  `json:"n"`
		} `json:"classes"`
		Claimed num64 `json:"claimed"`
	}
	var rows []result
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		rows, err = queryAll[result](ctx, s.db, qCounts, nil)
		return err
	})
	if err != nil {
		return store.Counts{}, s.fail("counts", "", err)
	}
	var c store.Counts
	if len(rows) != 1 {
		return c, s.fail("counts", "", fmt.Errorf("counts query returned %d rows", len(rows)))
	}
	for _, cl := range rows[0].Classes {
		c.AddClass(cl.Cls, int(cl.N))
	}
	c.Claimed = int(rows[0].Claimed)
	return c, nil
}

// GetMeta implements store.Meta.
func (s *Store) GetMeta(ctx context.Context, key string) (string, bool, error) {
	dk, err := docKey(key)
	if err != nil {
		return "", false, nil // no such key can have been stored
	}
	var rows []string
	err = s.read(ctx, func(ctx context.Context) error {
		var err error
		rows, err = queryAll[string](ctx, s.db, qGetMeta, map[string]any{"key": dk})
		return err
	})
	if err != nil {
		return "", false, s.fail("get meta", key, err)
	}
	if len(rows) == 0 {
		return "", false, nil
	}
	return rows[0], true, nil
}

// SetMeta implements store.Meta.
func (s *Store) SetMeta(ctx context.Context, key, value string) error {
	dk, err := docKey(key)
	if err != nil {
		return s.fail("set meta", key, err)
	}
	err = s.write(ctx, alsoUnique, func(ctx context.Context) error {
		_, err := queryAll[int](ctx, s.db, qSetMeta, map[string]any{"key": dk, "name": key, "value": value})
		return err
	})
	if err != nil {
		return s.fail("set meta", key, err)
	}
	return nil
}

// SwapMeta implements store.Meta. The insert is not run again on a
// unique-constraint violation: that is the answer (the key exists).
func (s *Store) SwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	dk, err := docKey(key)
	if err != nil {
		return false, s.fail("swap meta", key, err)
	}
	var rows []int
	err = s.write(ctx, conflictsOnly, func(ctx context.Context) error {
		var err error
		if old == "" {
			rows, err = queryAll[int](ctx, s.db, qInsertMeta, map[string]any{"key": dk, "name": key, "value": value})
		} else {
			rows, err = queryAll[int](ctx, s.db, qSwapMeta, map[string]any{"key": dk, "old": old, "value": value})
		}
		return err
	})
	if old == "" && hasErrorNum(err, errUniqueViolate) {
		return false, nil
	}
	if err != nil {
		return false, s.fail("swap meta", key, err)
	}
	return len(rows) == 1, nil
}

// restartDoc is a worker_restart_policy document.
type restartDoc struct {
	Key               string  `json:"_key"`
	Name              string  `json:"name"`
	Component         string  `json:"component"`
	RestartCount      num64   `json:"restart_count"`
	Consecutive       num64   `json:"consecutive"`
	Recent            []num64 `json:"recent"`
	LastRestartWallMs num64   `json:"last_restart_wall_ms"`
	FailedAtWallMs    num64   `json:"failed_at_wall_ms"`
	FailureReason     string  `json:"failure_reason"`
	UpdatedAtWallMs   num64   `json:"updated_at_wall_ms"`
}

// LoadRestart implements store.RestartStates.
func (s *Store) LoadRestart(ctx context.Context, key string) (restart.State, bool, error) {
	dk, err := docKey(key)
	if err != nil {
		return restart.State{}, false, nil
	}
	var rows []restartDoc
	err = s.read(ctx, func(ctx context.Context) error {
		var err error
		rows, err = queryAll[restartDoc](ctx, s.db, qLoadRestart, map[string]any{"key": dk})
		return err
	})
	if err != nil {
		return restart.State{}, false, s.fail("load restart", key, err)
	}
	if len(rows) == 0 {
		return restart.State{}, false, nil
	}
	d := rows[0]
	var recent []int64
	for _, r := range d.Recent {
		recent = append(recent, int64(r))
	}
	return restart.State{
		Component: d.Component, RestartCount: int(d.RestartCount), Consecutive: int(d.Consecutive), Recent: recent,
		LastRestartWallMs: int64(d.LastRestartWallMs), FailedAtWallMs: int64(d.FailedAtWallMs), FailureReason: d.FailureReason,
		UpdatedAtWallMs: int64(d.UpdatedAtWallMs),
	}, true, nil
}

// SaveRestart implements store.RestartStates (the whole document replaced).
func (s *Store) SaveRestart(ctx context.Context, key string, st restart.State) error {
	dk, err := docKey(key)
	if err != nil {
		return s.fail("save restart", key, err)
	}
	recent := make([]num64, len(st.Recent))
	for i, r := range st.Recent {
		recent[i] = num64(r)
	}
	doc := restartDoc{
		Key: dk, Name: key, Component: st.Component, RestartCount: num64(st.RestartCount), Consecutive: num64(st.Consecutive),
		Recent: recent, LastRestartWallMs: num64(st.LastRestartWallMs), FailedAtWallMs: num64(st.FailedAtWallMs),
		FailureReason: st.FailureReason, UpdatedAtWallMs: num64(st.UpdatedAtWallMs),
	}
	err = s.write(ctx, alsoUnique, func(ctx context.Context) error {
		_, err := queryAll[int](ctx, s.db, qSaveRestart, map[string]any{"key": dk, "doc": doc})
		return err
	})
	if err != nil {
		return s.fail("save restart", key, err)
	}
	return nil
}

// historyDoc is a health_history document, keyed by its identity
// (historyKey).
type historyDoc struct {
	Key       string `json:"_key"`
	AtMs      num64  `json:"at_ms"`
	Instance  string `json:"instance"`
	Component string `json:"component"`
	Status    string `json:"status"`
}

// historyKey is the _key of a history row: its identity (store.HistoryRow)
// in the key alphabet — instance and component escaped (every byte outside
// the alphabet, and '%' and '!', as %XX), then the time in milliseconds,
// joined by '!', which no escaped part holds: distinct identities have
// distinct keys. A key that would pass the 254-byte limit is '!' and the
// SHA-256 of that spelling in hex (one '!', where the others have two).
// Keys made by the collection's padded generator (rows written before
// history keys were derived) are hex digits only and meet neither form.
func historyKey(r store.HistoryRow) string {
	var b strings.Builder
	part := func(s string) {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c != '%' && c != '!' && keyByteOK(c) {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		b.WriteByte('!')
	}
	part(r.Instance)
	part(r.Component)
	b.WriteString(strconv.FormatInt(ms(r.At), 10))
	if b.Len() > maxKeyLen {
		sum := sha256.Sum256([]byte(b.String()))
		return "!" + hex.EncodeToString(sum[:])
	}
	return b.String()
}

// AppendHistory implements store.History: the batch is one INSERT statement
// of documents keyed by their identity (historyKey), which leaves a key
// that exists, or came earlier in the batch, as it is.
func (s *Store) AppendHistory(ctx context.Context, rows []store.HistoryRow) error {
	if len(rows) == 0 {
		return nil
	}
	docs := make([]historyDoc, len(rows))
	for i, r := range rows {
		docs[i] = historyDoc{Key: historyKey(r), AtMs: num64(ms(r.At)), Instance: r.Instance, Component: r.Component, Status: r.Status}
	}
	err := s.write(ctx, conflictsOnly, func(ctx context.Context) error {
		_, err := queryAll[any](ctx, s.db, qAppendHistory, map[string]any{"rows": docs})
		return err
	})
	if err != nil {
		return s.fail("append history", fmt.Sprintf("(%d rows)", len(rows)), err)
	}
	return nil
}

// pruneBatch is the most history rows one PruneHistory query deletes.
const pruneBatch = 10000

// PruneHistory implements store.HistoryRetention, in queries of at most
// pruneBatch rows. Rows deleted by a concurrent PruneHistory (another host)
// may fail a query with "document not found": it had no effect and runs
// again on a fresh snapshot, so the count is of the rows this call deleted.
func (s *Store) PruneHistory(ctx context.Context, before time.Time) (int, error) {
	total := 0
	for {
		var n int
		err := s.write(ctx, alsoGone, func(ctx context.Context) error {
			var err error
			n, err = queryCount(ctx, s.db, qPruneHistory, map[string]any{"before": ms(before), "limit": pruneBatch})
			return err
		})
		if err != nil {
			return total, s.fail("prune history", fmt.Sprintf("(before %s, %d rows deleted)", before.UTC().Format(time.RFC3339), total), err)
		}
		total += n
		if n < pruneBatch {
			return total, nil
		}
	}
}

// Tags returns the tags stored by the file's last completion (empty when it
// was never completed). It is not part of the port (the contract suite's
// storetest.TagReader).
func (s *Store) Tags(ctx context.Context, key string) (map[string]string, error) {
	if !validFileKey(key) {
		return map[string]string{}, nil
	}
	var rows []map[string]string
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		rows, err = queryAll[map[string]string](ctx, s.db, qTags, map[string]any{"key": key})
		return err
	})
	if err != nil {
		return nil, s.fail("tags", key, err)
	}
	if len(rows) == 0 || rows[0] == nil {
		return map[string]string{}, nil
	}
	return rows[0], nil
}

// RecentHistory returns the newest limit health-history rows, oldest first
// (storetest.HistoryReader; for the history API).
func (s *Store) RecentHistory(ctx context.Context, limit int) ([]store.HistoryRow, error) {
	if limit <= 0 {
		return []store.HistoryRow{}, nil
	}
	var docs []historyDoc
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		docs, err = queryAll[historyDoc](ctx, s.db, qRecentHistory, map[string]any{"limit": limit})
		return err
	})
	if err != nil {
		return nil, s.fail("history", "", err)
	}
	out := make([]store.HistoryRow, len(docs))
	for i, d := range docs {
		out[len(docs)-1-i] = store.HistoryRow{At: tm(int64(d.AtMs)), Instance: d.Instance, Component: d.Component, Status: d.Status}
	}
	return out, nil
}
