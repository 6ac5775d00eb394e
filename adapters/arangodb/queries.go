package arangodb

import (
	"strings"

	"github.com/nomarr/nomarr/core/store"
)

// The AQL of every operation. Each query is one server-side transaction;
// none reads a collection after writing it (an AQL restriction), and every
// collection a query touches is named in it (no dynamic DOCUMENT() access,
// which a cluster would want declared with WITH). Bind parameters: @name.
//
// Key order (Discover, ListFiles): in each query the cursor (_key > @after)
// and the order (SORT _key) agree with each other, as the index serving it
// orders keys: ListFiles is served by the primary index, which compares
// keys byte by byte; Discover by nomarr_discovery, a persistent index that
// orders strings by the server's ICU collation (its language, set when its
// database directory was initialized: --icu-language; by default en_US up
// to 3.11, en_US_POSIX from 3.12). For keys made only of [0-9a-f] — the
// scanner's keys are lower-case hex — all of these agree with byte order,
// the order of Go's string comparison and of the SQLite store.
// validFileKey accepts any key ArangoDB does (upper case, punctuation); for
// those the two queries may order keys differently from each other and
// from byte order (en_US puts "a" before "B").

// qUpsertFiles inserts new files and resets the tagging state of files
// whose size or mtime changed; an unchanged file whose validity differs
// (marked missing, now back) gets the new validity only; other unchanged
// files are not written at all (no new revision, no conflict with a
// concurrent completion). A stored file whose stat is as new as the
// given one or newer (store.StatNewer: a stat_seq of 0 is none, of which
// any number is newer; a document from before stat_seq has none) is not
// written either; a file written takes the higher stat_seq. The condition
// is read in the query's snapshot: a completion that commits after it
// makes the UPSERT fail with a write-write conflict, and UpsertFiles runs
// the query again on a fresh snapshot. A given stat_seq above the stat
// sequence's value, read from meta in the query's snapshot, counts as that
// value (store.ClampStatSeq: a number from another store; one this store
// handed out committed before the query began, and is never above it).
// Reading library_files in the subquery before the UPSERT writes it is
// allowed; meta is only read.
//
// Each file written answers its outcome (store.UpsertOutcome), from the
// same prev and changed that chose what was written: "inserted",
// "changed" or "returned" (the validity alone); a file not written is
// unchanged, so is not answered. A chunk of at most upsertChunk files
// answers within the first batch, which comes with the commit.
const qUpsertFiles = `LET seq = ` + statSeqNow + `
FOR g IN @docs
  LET d = MERGE(g, { stat_seq: MIN([g.stat_seq, seq]) })
  LET prev = FIRST(FOR p IN library_files FILTER p._key == d._key
    RETURN { size: p.size, mtime_ms: p.mtime_ms, is_valid: p.is_valid, stat_seq: NOT_NULL(p.stat_seq, 0) })
  LET changed = prev != null AND (prev.size != d.size OR prev.mtime_ms != d.mtime_ms)
  FILTER prev == null OR ((changed OR prev.is_valid != d.is_valid) AND (d.stat_seq == 0 OR prev.stat_seq < d.stat_seq))
  UPSERT { _key: d._key }
    INSERT d
    UPDATE changed ? { path: d.path, path_raw: d.path_raw, size: d.size, mtime_ms: d.mtime_ms, is_valid: d.is_valid,
             needs_tagging: true, tagged: false, failed: false, attempts: 0, next_retry_at: 0,
             skip_until: 0, crash_count: 0, last_error: "", checkpoint: "", stat_seq: MAX([prev.stat_seq, d.stat_seq]) }
      : { is_valid: d.is_valid, stat_seq: MAX([prev.stat_seq, d.stat_seq]) }
    IN library_files
  RETURN prev == null ? "inserted" : (changed ? "changed" : "returned")`

// statSeqNow is the stat sequence's value (meta store.MetaStatSeq; 0
// while no scan took a number), an AQL expression.
const statSeqNow = `NOT_NULL(FIRST(FOR m IN meta FILTER m._key == "` + store.MetaStatSeq + `" RETURN TO_NUMBER(m.value)), 0)`

// qNextStatSeq advances the stat sequence (meta store.MetaStatSeq, a
// decimal string as every meta value) by one and returns it. Two at once:
// one meets a write-write conflict, or a unique-constraint violation when
// both insert, and runs again.
const qNextStatSeq = `UPSERT { _key: "` + store.MetaStatSeq + `" }
  INSERT { _key: "` + store.MetaStatSeq + `", name: "` + store.MetaStatSeq + `", value: "1" }
  UPDATE { value: TO_STRING(TO_NUMBER(OLD.value) + 1) }
  IN meta
  RETURN TO_NUMBER(NEW.value)`

// qListFiles: every file after the cursor, in key order (primary index).
const qListFiles = `FOR f IN library_files
  FILTER f._key > @after
  SORT f._key
  LIMIT @limit
  RETURN f`

// qListFilesAll is qListFiles without a limit.
var qListFilesAll = strings.Replace(qListFiles, "\n  LIMIT @limit", "", 1)

// Write statements that change many documents answer with one row, their
// count: a statement's cursor is executed and committed before its first
// batch is sent, so one that answered a row per document could commit and
// then fail while its later batches are fetched, reported as a fault with
// its write done.

// qMarkMissing marks the valid files among @keys not valid and returns
// how many it changed (primary-index lookups). Each FILTER reads the
// query's snapshot, not its own writes: @keys must not repeat a key, or the
// file is counted twice (updateEach removes repeats).
const qMarkMissing = `LET n = (FOR k IN @keys
  FOR f IN library_files
    FILTER f._key == k AND f.is_valid == true
    UPDATE f WITH { is_valid: false } IN library_files
    RETURN 1)
RETURN LENGTH(n)`

// qRetryFailed makes the failed files among @keys work again and returns
// how many it changed (primary-index lookups; @keys as for qMarkMissing).
const qRetryFailed = `LET n = (FOR k IN @keys
  FOR f IN library_files
    FILTER f._key == k AND f.failed == true
    UPDATE f WITH { failed: false, attempts: 0, crash_count: 0, next_retry_at: 0, skip_until: 0, last_error: "" } IN library_files
    RETURN 1)
RETURN LENGTH(n)`

// qRetag makes the files among @keys that another model set tagged work
// again — each still tagged, valid, not failed, of a tagged_version other
// than @version and without a claim (one primary-index probe of
// worker_claims, as in qDiscover), checked in the UPDATE's own query — and
// returns how many it changed (primary-index lookups; @keys as for
// qMarkMissing). Version, tagging time, tags and checkpoint stay.
const qRetag = `LET n = (FOR k IN @keys
  FOR f IN library_files
    FILTER f._key == k AND f.tagged == true AND f.is_valid == true AND f.failed == false AND f.tagged_version != @version
    FILTER LENGTH(FOR c IN worker_claims FILTER c._key == CONCAT("claim_", k) LIMIT 1 RETURN 1) == 0
    UPDATE f WITH { tagged: false, needs_tagging: true, attempts: 0, crash_count: 0, next_retry_at: 0, skip_until: 0 } IN library_files
    RETURN 1)
RETURN LENGTH(n)`

// qForgetFiles deletes the files among @keys that are not valid and returns
// their keys (primary-index lookups; @keys as for qMarkMissing).
const qForgetFiles = `FOR k IN @keys
  FOR f IN library_files
    FILTER f._key == k AND f.is_valid == false
    REMOVE f IN library_files
    RETURN k`

// qForgetTags deletes the stored tags of @keys (files just forgotten).
const qForgetTags = `FOR k IN @keys
  FOR t IN file_tags
    FILTER t._key == k
    REMOVE t IN file_tags
    RETURN 1`

// qForgetClaims deletes the claims @keys (of files just forgotten).
const qForgetClaims = `FOR k IN @keys
  FOR c IN worker_claims
    FILTER c._key == k
    REMOVE c IN worker_claims
    RETURN 1`

// qDiscover: eligible, unclaimed files after the cursor, in key order.
//
// How the index backs it: nomarr_discovery is a persistent index on
// [needs_tagging, is_valid, failed, _key] with stored values [next_retry_at,
// skip_until]. The first FILTER is equality on the three leading fields and
// a range on _key, so the optimizer turns the loop into one index range scan
// starting just after @after, whose output is already in _key order
// (use-index-for-sort removes the SORT). The retry/skip condition is
// evaluated on the stored values, the claim check is one primary-index probe
// of worker_claims per candidate, and LIMIT ends the scan as soon as @limit
// files passed — the cost is proportional to the files looked at, not to
// the library. The index hint keeps the optimizer from preferring a scan
// of the primary index (also usable for "_key > @after"), which would walk
// tagged files too.
const qDiscover = `FOR f IN library_files OPTIONS { indexHint: "nomarr_discovery" }
  FILTER f.needs_tagging == true AND f.is_valid == true AND f.failed == false AND f._key > @after
  SORT f._key
  FILTER f.next_retry_at <= @now AND f.skip_until <= @now
  FILTER LENGTH(FOR c IN worker_claims FILTER c._key == CONCAT("claim_", f._key) LIMIT 1 RETURN 1) == 0
  LIMIT @limit
  RETURN f`

// qDiscoverAll is qDiscover without a limit.
var qDiscoverAll = strings.Replace(qDiscover, "\n  LIMIT @limit", "", 1)

// qClaim inserts claim_<file> when no claim exists and the file is work of
// @kind at @at (store.ClaimableFor; a vector claim reads track_vectors for
// the file's vector of @model_set), and says which case applied. A claim inserted by someone else
// between the check and the INSERT makes the INSERT fail with a unique
// constraint violation (1210): the lost race.
const qClaim = `LET f = FIRST(FOR lf IN library_files FILTER lf._key == @file RETURN lf)
LET held = LENGTH(FOR wc IN worker_claims FILTER wc._key == @claim LIMIT 1 RETURN 1) > 0
LET vec = @kind == "vector" AND LENGTH(FOR v IN track_vectors FILTER v._key == @file AND v.model_set == @model_set LIMIT 1 RETURN 1) > 0
LET work = (@kind == "" ? f.needs_tagging == true :
  (@kind == "retag" ? (f.needs_retag == true AND f.tagged == true) :
  (@kind == "vector" ? (f.tagged == true AND @model_set != "" AND f.tagged_version == @model_set AND !vec) : false)))
LET ok = !held AND f != null AND f.is_valid == true AND f.failed == false
  AND f.next_retry_at <= @at AND f.skip_until <= @at AND work
LET ins = (
  FOR one IN (ok ? [1] : [])
    INSERT { _key: @claim, file_key: @file, worker_id: @worker, claimed_at: @at, lease_until: @until, kind: @kind } INTO worker_claims
    RETURN 1
)
RETURN held ? { status: "conflict" } : (LENGTH(ins) == 1 ? { status: "claimed", file: f } : { status: "not_eligible" })`

// qRemoveHeld deletes a claim only if the worker still holds it
// (conditional delete); the result is empty otherwise.
const qRemoveHeld = `FOR c IN worker_claims
  FILTER c._key == @claim AND c.worker_id == @worker
  REMOVE c IN worker_claims
  RETURN 1`

// qKeepHeld extends the lease of a claim (never shortening it) only if the
// worker still holds it; the result is empty otherwise.
const qKeepHeld = `FOR c IN worker_claims
  FILTER c._key == @claim AND c.worker_id == @worker
  UPDATE c WITH { lease_until: MAX([c.lease_until, @until]) } IN worker_claims
  RETURN 1`

// qCompleteFile records a completion on the file, if it is still the
// content the job claimed (@claimed: checked; @csize, @cmtime) or rewrote; a
// file the job rewrote takes its new size and mtime, stamped with the stat
// sequence's value (read from meta; Complete's transaction declares it).
// It returns "done", "changed" (nothing written) or "gone".
const qCompleteFile = `LET f = FIRST(FOR lf IN library_files FILTER lf._key == @file RETURN lf)
LET seq = ` + statSeqNow + `
LET same = f != null AND (!@claimed OR (f.size == @csize AND f.mtime_ms == @cmtime)
  OR (@rewritten AND f.size == @size AND f.mtime_ms == @mtime))
LET upd = (
  FOR x IN (same ? [f] : [])
    LET was = NOT_NULL(x.stat_seq, 0)
    UPDATE x WITH { tagged: true, needs_tagging: false, needs_retag: false, tagged_version: @version, last_tagged_at: @at,
                    checkpoint: "", last_error: "",
                    size: @rewritten ? @size : x.size, mtime_ms: @rewritten ? @mtime : x.mtime_ms,
                    stat_seq: @rewritten ? MAX([was, seq]) : was } IN library_files
    RETURN 1
)
RETURN f == null ? "gone" : (same ? "done" : "changed")`

// qPutTags stores the completion's tags, replacing earlier ones, with
// their labels (@labels: store.Labels of @tags, indexed by
// nomarr_tags_labels) and scores (@scores: store.Scores of @tags, indexed
// by scoreIndexes); writes counts completions (a safety check: one per
// tagging).
const qPutTags = `UPSERT { _key: @file }
  INSERT { _key: @file, tags: @tags, labels: @labels, scores: @scores, version: @version, written_at: @at, writes: 1 }
  REPLACE { _key: @file, tags: @tags, labels: @labels, scores: @scores, version: @version, written_at: @at, writes: OLD.writes + 1 }
  IN file_tags
  RETURN 1`

// qReleaseFile applies a failed job's update to its file (a file found
// missing becomes not valid; one to analyse again, @reanalyze, pending),
// if it is still the content the job claimed
// (@claimed: checked; @csize, @cmtime). It returns "done", "changed"
// (nothing written) or "gone".
const qReleaseFile = `LET f = FIRST(FOR lf IN library_files FILTER lf._key == @file RETURN lf)
LET same = f != null AND (!@claimed OR (f.size == @csize AND f.mtime_ms == @cmtime))
LET upd = (
  FOR x IN (same ? [f] : [])
    UPDATE x WITH { attempts: @attempts, next_retry_at: @retry, skip_until: @skip, failed: @failed,
                    last_error: @error, checkpoint: @checkpoint, is_valid: @missing ? false : x.is_valid,
                    tagged: @reanalyze ? false : x.tagged, needs_tagging: @reanalyze ? true : x.needs_tagging,
                    needs_retag: @reanalyze ? false : NOT_NULL(x.needs_retag, false) } IN library_files
    RETURN 1
)
RETURN f == null ? "gone" : (same ? "done" : "changed")`

// qRemoveWorkerClaims deletes every claim of a worker (index on worker_id).
const qRemoveWorkerClaims = `FOR c IN worker_claims
  FILTER c.worker_id == @worker
  REMOVE c IN worker_claims
  RETURN OLD.file_key`

// qCountCrashes increments the crash count of the released files and
// quarantines (failed, @reason its error) those whose new count reaches
// @quarantineAt, each in one UPDATE of its document.
const qCountCrashes = `FOR k IN @keys
  FOR f IN library_files
    FILTER f._key == k
    LET n = f.crash_count + 1
    LET q = n >= @quarantineAt
    UPDATE f WITH { crash_count: n, failed: q ? true : f.failed, last_error: q ? @reason : f.last_error } IN library_files
    RETURN { key: k, crash_count: n, quarantined: q }`

// qCrashCounts reads the crash count of the released files.
const qCrashCounts = `FOR k IN @keys
  FOR f IN library_files
    FILTER f._key == k
    RETURN { key: k, crash_count: f.crash_count }`

// qQuarantine marks a file failed (empty: no such file).
const qQuarantine = `FOR f IN library_files
  FILTER f._key == @file
  UPDATE f WITH { failed: true, last_error: @reason } IN library_files
  RETURN 1`

// qRenewLeases extends (never shortens) the leases of the given workers'
// claims in one statement (index on worker_id) and returns how many it
// extended, as one row: the whole answer comes in the first batch, which a
// write statement sends once committed (a row per claim, over several
// batches, could fail to arrive after the commit). A claim deleted by a
// concurrent transaction after this statement's snapshot makes it fail with
// a write-write conflict or "document not found" (1202); RenewLeases runs it
// again.
const qRenewLeases = `LET n = (FOR c IN worker_claims
  FILTER c.worker_id IN @ids AND c.lease_until < @until
  UPDATE c WITH { lease_until: @until } IN worker_claims
  RETURN 1)
RETURN LENGTH(n)`

// qCleanupClaims deletes the claims whose lease expired before @now or
// whose file is gone or no longer work of the claim's kind
// (store.KeepsClaim; a claim without a kind is a tagging's). The
// condition is evaluated and the claim removed in the same query, i.e. the
// same transaction: a claim renewed or completed concurrently makes this
// query fail with a write-write conflict, or with "document not found"
// (1202) when it was deleted, and CleanupClaims runs it again on a fresh
// snapshot; it never removes a live claim, and RETURN OLD names only claims
// it removed. Claims number about the workers, so the scan is small; each
// costs one primary-index probe of library_files. The removed claims come
// back as one row, an array (empty: none): the whole answer is in the
// first batch, which a write statement sends once committed.
const qCleanupClaims = `LET gone = (FOR c IN worker_claims
  LET f = FIRST(FOR lf IN library_files FILTER lf._key == c.file_key RETURN lf)
  LET k = NOT_NULL(c.kind, "")
  LET work = (k == "" ? f.needs_tagging == true :
    (k == "retag" ? (f.needs_retag == true AND f.tagged == true) : (k == "vector" ? f.tagged == true : false)))
  FILTER c.lease_until < @now OR f == null OR f.is_valid != true OR f.failed == true OR !work
  REMOVE c IN worker_claims
  RETURN OLD)
RETURN gone`

// qFile reads one file.
const qFile = `FOR f IN library_files FILTER f._key == @key RETURN f`

// qCounts summarises the library in one scan (grouped by class,
// store.ClassOf) plus the number of claims, in one snapshot.
const qCounts = `LET classes = (
  FOR f IN library_files
    COLLECT cls = (f.is_valid != true ? "invalid" : (f.tagged == true ? "tagged" :
      (f.failed == true ? "failed" : (f.needs_tagging == true ? "pending" : "invalid")))) WITH COUNT INTO n
    RETURN { cls: cls, n: n }
)
LET claimed = LENGTH(FOR c IN worker_claims RETURN 1)
RETURN { classes: classes, claimed: claimed }`

// qGetMeta / qSetMeta: meta documents are {_key, name, value}.
const qGetMeta = `FOR m IN meta FILTER m._key == @key RETURN m.value`

const qSetMeta = `UPSERT { _key: @key }
  INSERT { _key: @key, name: @name, value: @value }
  UPDATE { value: @value }
  IN meta
  RETURN 1`

// qInsertMeta inserts a meta value; an existing key fails the insert with
// a unique-constraint violation (1210), which SwapMeta reads as "not
// swapped". qSwapMeta updates a meta value only if it is still @old; the
// result is empty otherwise.
const qInsertMeta = `INSERT { _key: @key, name: @name, value: @value } INTO meta RETURN 1`

const qSwapMeta = `FOR m IN meta FILTER m._key == @key AND m.value == @old
  UPDATE m WITH { value: @value } IN meta
  RETURN 1`

// qRaiseSchema records the schema version @value (@n as a number) unless
// meta holds a higher one: another process of a newer program may have
// upgraded the database meanwhile.
const qRaiseSchema = `UPSERT { _key: @key }
  INSERT { _key: @key, name: @key, value: @value }
  UPDATE { value: TO_NUMBER(OLD.value) < @n ? @value : OLD.value }
  IN meta`

// qLoadRestart / qSaveRestart: one document per component key.
const qLoadRestart = `FOR r IN worker_restart_policy FILTER r._key == @key RETURN r`

const qSaveRestart = `UPSERT { _key: @key }
  INSERT @doc
  REPLACE @doc
  IN worker_restart_policy
  RETURN 1`

// qAppendHistory inserts a whole snapshot in one statement. Each row
// carries its identity as _key (historyKey): a row stored already, by an
// earlier call whose answer was lost or earlier in @rows, is left as it
// is (overwriteMode "ignore": no write, no error).
const qAppendHistory = `FOR r IN @rows INSERT r INTO health_history OPTIONS { overwriteMode: "ignore" }`

// qPruneHistory deletes up to @limit rows older than @before (index on
// at_ms) and returns how many it deleted.
const qPruneHistory = `LET n = (FOR h IN health_history
  FILTER h.at_ms < @before
  SORT h.at_ms
  LIMIT @limit
  REMOVE h IN health_history
  RETURN 1)
RETURN LENGTH(n)`

// qRecentHistory returns the newest rows, newest first (index on at_ms,
// _key): rows of one instant in the order of their keys, i.e. by instance
// and component.
const qRecentHistory = `FOR h IN health_history
  SORT h.at_ms DESC, h._key DESC
  LIMIT @limit
  RETURN h`

// qTags reads a file's tags.
const qTags = `FOR t IN file_tags FILTER t._key == @key RETURN t.tags`

// qForgetVectors deletes the track vectors of @keys (files just forgotten).
const qForgetVectors = `FOR k IN @keys
  FOR v IN track_vectors
    FILTER v._key == k
    REMOVE v IN track_vectors
    RETURN 1`

// qPutVector stores a file's track vector, replacing the one it had, only
// for a stored file (reads library_files, writes track_vectors); no row:
// no such file.
const qPutVector = `FOR f IN library_files
  FILTER f._key == @key
  UPSERT { _key: @key }
    INSERT { _key: @key, model_set: @model_set, vector: @vector }
    REPLACE { _key: @key, model_set: @model_set, vector: @vector }
    IN track_vectors
  RETURN 1`

// qTrackVectors: one model set's vectors after the cursor, in key order
// (primary index; the model set filtered per document).
const qTrackVectors = `FOR v IN track_vectors
  FILTER v._key > @after AND v.model_set == @model_set
  SORT v._key
  LIMIT @limit
  RETURN { key: v._key, vector: v.vector }`

// qTrackVectorsAll is qTrackVectors without a limit.
var qTrackVectorsAll = strings.Replace(qTrackVectors, "\n  LIMIT @limit", "", 1)

// qListTags: the stored tags after the cursor, in key order (primary
// index).
const qListTags = `FOR t IN file_tags
  FILTER t._key > @after
  SORT t._key
  LIMIT @limit
  RETURN { key: t._key, version: t.version, tags: t.tags }`

// qListTagsAll is qListTags without a limit.
var qListTagsAll = strings.Replace(qListTags, "\n  LIMIT @limit", "", 1)

// qMarkRetag marks for a retag the files among @keys tagged by @version,
// valid, not failed and not marked, and returns how many it marked
// (primary-index lookups; @keys as for qMarkMissing).
const qMarkRetag = `LET n = (FOR k IN @keys
  FOR f IN library_files
    FILTER f._key == k AND f.tagged == true AND f.is_valid == true AND f.failed == false
      AND f.tagged_version == @version AND f.needs_retag != true
    UPDATE f WITH { needs_retag: true } IN library_files
    RETURN 1)
RETURN LENGTH(n)`

// qDiscoverRetag: files marked for a retag, claimable at @now, unclaimed,
// after the cursor in key order: an index range scan of nomarr_retag
// (equality on its four flags, a range on _key), as qDiscover's.
const qDiscoverRetag = `FOR f IN library_files OPTIONS { indexHint: "nomarr_retag" }
  FILTER f.needs_retag == true AND f.tagged == true AND f.is_valid == true AND f.failed == false AND f._key > @after
  SORT f._key
  FILTER f.next_retry_at <= @now AND f.skip_until <= @now
  FILTER LENGTH(FOR c IN worker_claims FILTER c._key == CONCAT("claim_", f._key) LIMIT 1 RETURN 1) == 0
  LIMIT @limit
  RETURN f`

// qDiscoverRetagAll is qDiscoverRetag without a limit.
var qDiscoverRetagAll = strings.Replace(qDiscoverRetag, "\n  LIMIT @limit", "", 1)

// qNeedsVector: files tagged by @model_set without a vector of it,
// claimable at @now, unclaimed, after the cursor in key order: an index
// range scan of nomarr_tagged (equality on its flags and the version, a
// range on _key), with one primary-index probe of track_vectors and of
// worker_claims per file.
const qNeedsVector = `FOR f IN library_files OPTIONS { indexHint: "nomarr_tagged" }
  FILTER f.tagged == true AND f.is_valid == true AND f.failed == false AND f.tagged_version == @model_set AND f._key > @after
  SORT f._key
  FILTER f.next_retry_at <= @now AND f.skip_until <= @now
  FILTER LENGTH(FOR v IN track_vectors FILTER v._key == f._key AND v.model_set == @model_set LIMIT 1 RETURN 1) == 0
  FILTER LENGTH(FOR c IN worker_claims FILTER c._key == CONCAT("claim_", f._key) LIMIT 1 RETURN 1) == 0
  LIMIT @limit
  RETURN f`

// qNeedsVectorAll is qNeedsVector without a limit.
var qNeedsVectorAll = strings.Replace(qNeedsVector, "\n  LIMIT @limit", "", 1)

// qCountJobs counts the marked files and the files of @model_set without
// its vector (store.JobCounts), in one snapshot, as one row.
const qCountJobs = `LET retag = LENGTH(FOR f IN library_files OPTIONS { indexHint: "nomarr_retag" }
  FILTER f.needs_retag == true AND f.tagged == true AND f.is_valid == true AND f.failed == false
  RETURN 1)
LET vector = @model_set == "" ? 0 : LENGTH(FOR f IN library_files OPTIONS { indexHint: "nomarr_tagged" }
  FILTER f.tagged == true AND f.is_valid == true AND f.failed == false AND f.tagged_version == @model_set
  FILTER LENGTH(FOR v IN track_vectors FILTER v._key == f._key AND v.model_set == @model_set LIMIT 1 RETURN 1) == 0
  RETURN 1)
RETURN { retag: retag, vector: vector }`
