package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/nomarr/nomarr/core/store"
)

// schema is the layout of schema version 1 (docs/design.md §10); a new database
// gets it and then every upgrade (version2, version3), so that a new
// database and an upgraded one are laid out alike. Booleans are 0/1, times Unix
// milliseconds (0: none).
var schema = []string{
	// The work queue: one row per audio file, keyed by the file key.
	`CREATE TABLE IF NOT EXISTS library_files (
		key            TEXT    NOT NULL PRIMARY KEY,
		path           TEXT    NOT NULL DEFAULT '',
		size           INTEGER NOT NULL DEFAULT 0,
		mtime_ms       INTEGER NOT NULL DEFAULT 0,
		needs_tagging  INTEGER NOT NULL DEFAULT 0,
		is_valid       INTEGER NOT NULL DEFAULT 0,
		tagged         INTEGER NOT NULL DEFAULT 0,
		tagged_version TEXT    NOT NULL DEFAULT '',
		last_tagged_at INTEGER NOT NULL DEFAULT 0,
		attempts       INTEGER NOT NULL DEFAULT 0,
		next_retry_at  INTEGER NOT NULL DEFAULT 0,
		skip_until     INTEGER NOT NULL DEFAULT 0,
		crash_count    INTEGER NOT NULL DEFAULT 0,
		failed         INTEGER NOT NULL DEFAULT 0,
		last_error     TEXT    NOT NULL DEFAULT '',
		checkpoint     TEXT    NOT NULL DEFAULT ''
	) WITHOUT ROWID`,
	// Discovery in version 1: the pending files in key order (version 2
	// replaces it, see version2).
	`CREATE INDEX IF NOT EXISTS library_files_pending ON library_files (key)
		WHERE needs_tagging = 1 AND is_valid = 1 AND failed = 0`,

	// Claims: the primary key on file_key is the unique key `claim_<file_key>`
	// that makes exactly one claim win.
	`CREATE TABLE IF NOT EXISTS worker_claims (
		file_key    TEXT    NOT NULL PRIMARY KEY,
		worker_id   TEXT    NOT NULL,
		claimed_at  INTEGER NOT NULL,
		lease_until INTEGER NOT NULL
	) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS worker_claims_lease ON worker_claims (lease_until)`,
	`CREATE INDEX IF NOT EXISTS worker_claims_worker ON worker_claims (worker_id)`,

	// Tags of the last completion, one document per file; writes counts
	// completions (a safety check: exactly one per tagging).
	`CREATE TABLE IF NOT EXISTS file_tags (
		file_key   TEXT    NOT NULL PRIMARY KEY,
		tags       TEXT    NOT NULL,
		version    TEXT    NOT NULL DEFAULT '',
		written_at INTEGER NOT NULL DEFAULT 0,
		writes     INTEGER NOT NULL DEFAULT 1
	)`,

	// Restart policy state per component key (restart.State).
	`CREATE TABLE IF NOT EXISTS worker_restart_policy (
		key                  TEXT    NOT NULL PRIMARY KEY,
		component            TEXT    NOT NULL DEFAULT '',
		restart_count        INTEGER NOT NULL DEFAULT 0,
		consecutive          INTEGER NOT NULL DEFAULT 0,
		recent               TEXT    NOT NULL DEFAULT '[]',
		last_restart_wall_ms INTEGER NOT NULL DEFAULT 0,
		failed_at_wall_ms    INTEGER NOT NULL DEFAULT 0,
		failure_reason       TEXT    NOT NULL DEFAULT '',
		updated_at_wall_ms   INTEGER NOT NULL DEFAULT 0
	) WITHOUT ROWID`,

	// Health history (write-mostly).
	`CREATE TABLE IF NOT EXISTS health_history (
		id        INTEGER PRIMARY KEY,
		at_ms     INTEGER NOT NULL,
		instance  TEXT    NOT NULL DEFAULT '',
		component TEXT    NOT NULL DEFAULT '',
		status    TEXT    NOT NULL DEFAULT ''
	)`,
	`CREATE INDEX IF NOT EXISTS health_history_at ON health_history (at_ms)`,

	// Cluster-wide flags and the schema version.
	`CREATE TABLE IF NOT EXISTS meta (
		key   TEXT NOT NULL PRIMARY KEY,
		value TEXT NOT NULL
	) WITHOUT ROWID`,
}

// fileClass is the class store.Counts puts a file row in (R: NEW or OLD),
// by store.ClassOf's rule: invalid (not valid), tagged, failed, pending
// (needs tagging), invalid (none of these).
func fileClass(r string) string {
	return `(CASE WHEN ` + r + `.is_valid <> 1 THEN '` + store.ClassInvalid + `'
		WHEN ` + r + `.tagged = 1 THEN '` + store.ClassTagged + `' WHEN ` + r + `.failed = 1 THEN '` + store.ClassFailed + `'
		WHEN ` + r + `.needs_tagging = 1 THEN '` + store.ClassPending + `' ELSE '` + store.ClassInvalid + `' END)`
}

// countsRule numbers the rule countsDDL's triggers count by; countsDDL
// writes it to meta (metaCountsRule) in the transaction that builds them.
// Rule 2 counts a file gone as invalid whatever its tags; rule 1 (tagged
// first: a tagged or failed file gone stayed tagged or failed) was built
// before the number existed, so a file without one is judged by its
// triggers' text (countsStale). A program that changes what the triggers
// count raises the number; one that only rewrites their text keeps it.
const countsRule = 2

// metaCountsRule is the meta key holding the countsRule the file's
// library_counts triggers were built by.
const metaCountsRule = "counts_rule"

// countsDDL (re)builds the library_counts triggers, recounts the rows
// from the files and numbers the rule (metaCountsRule), in the
// transaction it runs in; every statement is safe on a database that has
// library_counts, with or without triggers. A new or upgraded database
// gets it with version2; a version 3 database whose rule is older than
// this program's gets it at its next open for writing (ensureCounts). The
// rule changes no schema version: the triggers live in the file, so a
// program of this schema version counts by the rule the file holds, and
// none has to refuse the file. Only a newer rule replaces the file's: a
// program with an older rule leaves a newer one as it is, so programs of
// two rules opening one file do not rebuild it back and forth.
var countsDDL = []string{
	`DROP TRIGGER IF EXISTS library_counts_insert`,
	`DROP TRIGGER IF EXISTS library_counts_delete`,
	`DROP TRIGGER IF EXISTS library_counts_update`,
	`CREATE TRIGGER library_counts_insert AFTER INSERT ON library_files BEGIN
		UPDATE library_counts SET n = n + 1 WHERE class = ` + fileClass("NEW") + `;
	END`,
	`CREATE TRIGGER library_counts_delete AFTER DELETE ON library_files BEGIN
		UPDATE library_counts SET n = n - 1 WHERE class = ` + fileClass("OLD") + `;
	END`,
	`CREATE TRIGGER library_counts_update
		AFTER UPDATE OF tagged, failed, needs_tagging, is_valid ON library_files
		WHEN ` + fileClass("OLD") + ` <> ` + fileClass("NEW") + ` BEGIN
		UPDATE library_counts SET n = n - 1 WHERE class = ` + fileClass("OLD") + `;
		UPDATE library_counts SET n = n + 1 WHERE class = ` + fileClass("NEW") + `;
	END`,
	// The rows start from a recount: zero on a new database, the files
	// already there when a database is upgraded or its rule rebuilt.
	`DELETE FROM library_counts`,
	`INSERT INTO library_counts (class, n) VALUES ('` + store.ClassTagged + `', 0), ('` + store.ClassFailed + `', 0),
		('` + store.ClassPending + `', 0), ('` + store.ClassInvalid + `', 0)`,
	`INSERT INTO library_counts (class, n)
		SELECT ` + fileClass("f") + `, count(*) FROM library_files f WHERE true GROUP BY 1
		ON CONFLICT (class) DO UPDATE SET n = excluded.n`,
	`INSERT INTO meta (key, value) VALUES ('` + metaCountsRule + `', '` + strconv.Itoa(countsRule) + `')
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
}

// version2 upgrades schema version 1 to 2. Every statement is safe on a
// database at version 1, new or not; they run in one transaction.
//
// Counts: library_counts keeps the number of files per class, one row per
// class, so that Counts reads four rows instead of every file: the progress
// of `nomarr tag` and the dashboard poll it, and a count over a million
// files took 0.55 s. Triggers change the rows in the transaction that
// changes a file, whatever the statement (an upsert taking its update path
// fires the update trigger only), so the rows equal a recount after every
// commit. Invariant: for each class, n = the number of library_files rows
// of that class (TestCountsEqualARecount).
//
// Discovery: version 1's index held every pending file, and a discovery
// read and dropped each one waiting for its retry or skip time ahead of the
// first eligible file in key order. Workers claim in key order, so the
// files that failed transiently pile up just there: 137 ms a discovery
// with the first 10 % of a million files waiting, 1.46 s with all of them
// (BenchmarkDiscoverWaiting). The private
// column waiting now splits the pending files: waiting = 0 in
// library_files_ready (key order), waiting = 1 in library_files_waiting
// (order of the time the wait ends). A statement that sets a retry or skip
// time sets waiting; settleWaits clears it once the time has passed.
// Discovery reads both indexes and applies the whole eligibility test to
// each, so a wrong flag only costs time, never a file (TestDiscoverPastWaitingFiles).
var version2 = slices.Concat([]string{
	`CREATE TABLE IF NOT EXISTS library_counts (
		class TEXT    NOT NULL PRIMARY KEY,
		n     INTEGER NOT NULL
	) WITHOUT ROWID`,
}, countsDDL, []string{
	`ALTER TABLE library_files ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0`,
	// ?1: now, by the wall clock; a wait that has ended is not waiting.
	`UPDATE library_files SET waiting = 1 WHERE max(next_retry_at, skip_until) > ?1`,
	`DROP INDEX IF EXISTS library_files_pending`,
	`CREATE INDEX library_files_ready ON library_files (key)
		WHERE needs_tagging = 1 AND is_valid = 1 AND failed = 0 AND waiting = 0`,
	`CREATE INDEX library_files_waiting ON library_files (max(next_retry_at, skip_until))
		WHERE needs_tagging = 1 AND is_valid = 1 AND failed = 0 AND waiting = 1`,
})

// version3 upgrades schema version 2 to 3: stat_seq orders the
// observations of a file's size and mtime (core/store/statseq.go). A scan's
// upsert changes a row only when its number is higher than the row's, and
// a completion that rewrote the file stamps it with the sequence's value,
// kept in meta under store.MetaStatSeq. The files already there start at
// 0, below any number a scan takes.
var version3 = []string{
	`ALTER TABLE library_files ADD COLUMN stat_seq INTEGER NOT NULL DEFAULT 0`,
}

// version4 upgrades schema version 3 to 4: track_vectors holds one track
// vector per file (store.Vectors) as little-endian float32s, with the
// model-set version that made it; its index serves a read of one model
// set's vectors in key order. A new schema version rather than an extra:
// a program of version 3 would forget files and leave their vectors
// behind. A rowid table: a 200-dimension vector is 800 bytes, too wide
// for WITHOUT ROWID's page layout.
var version4 = []string{
	`CREATE TABLE IF NOT EXISTS track_vectors (
		file_key  TEXT NOT NULL PRIMARY KEY,
		model_set TEXT NOT NULL,
		vector    BLOB NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS track_vectors_model_set ON track_vectors (model_set, file_key)`,
}

// version5 upgrades schema version 4 to 5: the work other than tagging
// (store.Jobs). needs_retag marks a tagged file for a retag, with a partial
// index for its discovery; a claim names its kind (store.JobKind, empty for
// tagging), which its cleanup re-checks; library_files_tagged serves the
// discovery of the files that need a vector of a model set (tagged by
// it, in key order, with the retry and skip times, so that a file is
// passed over without reading its row). A new schema version: a program of version 4 would
// take a retag or vector claim on a tagged file for a stale one and
// delete it.
var version5 = []string{
	`ALTER TABLE library_files ADD COLUMN needs_retag INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE worker_claims ADD COLUMN kind TEXT NOT NULL DEFAULT ''`,
	`CREATE INDEX IF NOT EXISTS library_files_retag ON library_files (key) WHERE needs_retag = 1`,
	`CREATE INDEX IF NOT EXISTS library_files_tagged ON library_files (tagged_version, key, next_retry_at, skip_until)
		WHERE tagged = 1 AND is_valid = 1 AND failed = 0`,
}

// extras are indexes added since schema version 2 that change no
// semantics (a program of this version is right with or without them), so
// they need no new schema version, which would make the programs already
// deployed refuse the file: a new or upgraded database gets them with its
// schema, a version 2 database made before them at its next open for
// writing (ensureExtras). Each is a plain CREATE INDEX IF NOT EXISTS, which
// builds on any such file.
var extras = []struct{ name, ddl string }{
	// A history row's identity (store.HistoryRow), for AppendHistory's
	// NOT EXISTS probe. Not UNIQUE: a file written before appends were
	// idempotent may hold duplicate rows, and must open all the same.
	{"health_history_identity", `CREATE INDEX IF NOT EXISTS health_history_identity ON health_history (instance, component, at_ms)`},
}

// extrasDDL is the statements of extras.
func extrasDDL() []string {
	out := make([]string, len(extras))
	for i, x := range extras {
		out[i] = x.ddl
	}
	return out
}

// changedFile: in an upsert, the stored file's size or mtime differs from
// the scanned one.
const changedFile = `(library_files.size <> excluded.size OR library_files.mtime_ms <> excluded.mtime_ms)`

// newerStat: in an upsert, the scanned stat is newer than the stored one
// (store.StatNewer): no number, or a higher one.
const newerStat = `(excluded.stat_seq = 0 OR library_files.stat_seq < excluded.stat_seq)`

// statSeqNow is the stat sequence's current value (store.MetaStatSeq; 0
// while no scan took a number).
const statSeqNow = `coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = '` + store.MetaStatSeq + `'), 0)`

const fileCols = `key, path, size, mtime_ms, needs_tagging, is_valid, tagged, tagged_version,
	last_tagged_at, attempts, next_retry_at, skip_until, crash_count, failed, last_error, checkpoint, stat_seq`

// Statement ids.
const (
	// writes (writer connection)
	sUpsertFile = iota
	sUpsertStored
	sUpsertStoredKey
	sNextStatSeq
	sStatSeqNow
	sClaimInsert
	sClaimExists
	sClaimedFile
	sDeleteHeld
	sKeepHeld
	sComplete
	sPutTags
	sReleaseUpdate
	sReleaseWorker
	sCrashInc
	sCrashGet
	sQuarantine
	sCleanupExpired
	sCleanupIneligible
	sSettleWaits
	sSetMeta
	sInsertMeta
	sSwapMeta
	sSaveRestart
	sAppendHistory
	sPruneHistory
	sMarkMissing
	sRetryFailed
	sRetag
	sForgetFile
	sForgetTags
	sForgetClaim
	sForgetVector
	sPutVector
	sClaimInsertRetag
	sClaimInsertVector
	sMarkRetag
	// reads (query-only connections)
	sDiscover
	sFile
	sClaimExistsR
	sCounts
	sClaimCount
	sGetMeta
	sLoadRestart
	sTags
	sHistory
	sListFiles
	sTrackVectors
	sListTags
	sDiscoverRetag
	sNeedsVector
	sCountRetag
	sCountVector
	nStmts
)

var writeSQL = map[int]string{
	// Insert a new file as given; a known file whose size or mtime changed
	// needs tagging again and forgets its attempts, failure, retry/skip times,
	// crash count, error and checkpoint. An unchanged file whose validity
	// differs (marked missing, now back) takes the new validity only. Any
	// other unchanged file is not touched, and neither is a file whose
	// stored stat is as new as the scanned one or newer (newerStat); a row
	// written takes the higher stat_seq. (The SET expressions read the
	// stored row, so every CASE sees the old size and mtime.)
	sUpsertFile: `INSERT INTO library_files (` + fileCols + `, waiting)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?11 <> 0 OR ?12 <> 0)
		ON CONFLICT (key) DO UPDATE SET
			stat_seq = max(stat_seq, excluded.stat_seq),
			path = CASE WHEN ` + changedFile + ` THEN excluded.path ELSE path END,
			size = excluded.size, mtime_ms = excluded.mtime_ms,
			is_valid = excluded.is_valid,
			needs_tagging = CASE WHEN ` + changedFile + ` THEN 1 ELSE needs_tagging END,
			tagged = CASE WHEN ` + changedFile + ` THEN 0 ELSE tagged END,
			failed = CASE WHEN ` + changedFile + ` THEN 0 ELSE failed END,
			attempts = CASE WHEN ` + changedFile + ` THEN 0 ELSE attempts END,
			next_retry_at = CASE WHEN ` + changedFile + ` THEN 0 ELSE next_retry_at END,
			skip_until = CASE WHEN ` + changedFile + ` THEN 0 ELSE skip_until END,
			waiting = CASE WHEN ` + changedFile + ` THEN 0 ELSE waiting END,
			crash_count = CASE WHEN ` + changedFile + ` THEN 0 ELSE crash_count END,
			last_error = CASE WHEN ` + changedFile + ` THEN '' ELSE last_error END,
			checkpoint = CASE WHEN ` + changedFile + ` THEN '' ELSE checkpoint END
		WHERE (` + changedFile + ` OR library_files.is_valid <> excluded.is_valid) AND ` + newerStat + ``,
	// The stored files among the keys of ?1 (a JSON array), read in an
	// upsert's transaction before it writes: what it needs to tell what
	// becomes of each (store.UpsertOutcomeOf), each row naming its key by
	// its index in the array (json_each's key). One primary-key probe per
	// key.
	sUpsertStored: `SELECT k.key, f.size, f.mtime_ms, f.is_valid, f.stat_seq
		FROM json_each(?1) AS k JOIN library_files AS f ON f.key = k.value`,
	// The same, for one key that a JSON array cannot carry (jsonSafe).
	sUpsertStoredKey: `SELECT size, mtime_ms, is_valid, stat_seq FROM library_files WHERE key = ?1`,
	// The stat sequence's value, read in an upsert's transaction: a number
	// above it is written as it (store.ClampStatSeq).
	sStatSeqNow: `SELECT ` + statSeqNow,
	// The stat sequence, advanced by one (store.Library.NextStatSeq).
	sNextStatSeq: `INSERT INTO meta (key, value) VALUES ('` + store.MetaStatSeq + `', '1')
		ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1
		RETURNING CAST(value AS INTEGER)`,
	// Only valid files change, so the count is of files newly missing.
	sMarkMissing: `UPDATE library_files SET is_valid = 0 WHERE key = ? AND is_valid = 1`,
	sRetryFailed: `UPDATE library_files SET failed = 0, attempts = 0, crash_count = 0, next_retry_at = 0,
			skip_until = 0, waiting = 0, last_error = '' WHERE key = ? AND failed = 1`,
	// A file tagged by another model set (?2: the current one) becomes
	// pending, re-checked here: still tagged, valid, not failed, of another
	// version, unclaimed. Its version, tagging time, tags and checkpoint
	// stay. A row changes at most once (tagged = 1 no longer holds), so a
	// repeated key counts once.
	sRetag: `UPDATE library_files SET tagged = 0, needs_tagging = 1, attempts = 0, crash_count = 0,
			next_retry_at = 0, skip_until = 0, waiting = 0
		WHERE key = ?1 AND tagged = 1 AND is_valid = 1 AND failed = 0 AND tagged_version <> ?2
			AND NOT EXISTS (SELECT 1 FROM worker_claims WHERE file_key = ?1)`,
	// A file is forgotten only while it is not valid; its tags and claim go
	// with it (ForgetMissing runs the last two only after the first).
	sForgetFile:   `DELETE FROM library_files WHERE key = ? AND is_valid = 0`,
	sForgetTags:   `DELETE FROM file_tags WHERE file_key = ?`,
	sForgetClaim:  `DELETE FROM worker_claims WHERE file_key = ?`,
	sForgetVector: `DELETE FROM track_vectors WHERE file_key = ?`,
	// A file's vector, replacing the one it had, only for a stored file.
	sPutVector: `INSERT INTO track_vectors (file_key, model_set, vector)
		SELECT key, ?2, ?3 FROM library_files WHERE key = ?1
		ON CONFLICT (file_key) DO UPDATE SET model_set = excluded.model_set, vector = excluded.vector`,
	// Claim = insert, only if the file is eligible at claimed_at; the primary
	// key refuses a second claim.
	sClaimInsert: `INSERT INTO worker_claims (file_key, worker_id, claimed_at, lease_until)
		SELECT ?1, ?2, ?3, ?4 FROM library_files
		WHERE key = ?1 AND needs_tagging = 1 AND is_valid = 1 AND failed = 0
			AND next_retry_at <= ?3 AND skip_until <= ?3
		ON CONFLICT (file_key) DO NOTHING`,
	// A retag claim: only a file marked for a retag, tagged, valid, not
	// failed, its retry and skip times passed.
	sClaimInsertRetag: `INSERT INTO worker_claims (file_key, worker_id, claimed_at, lease_until, kind)
		SELECT ?1, ?2, ?3, ?4, '` + string(store.JobRetag) + `' FROM library_files
		WHERE key = ?1 AND needs_retag = 1 AND tagged = 1 AND is_valid = 1 AND failed = 0
			AND next_retry_at <= ?3 AND skip_until <= ?3
		ON CONFLICT (file_key) DO NOTHING`,
	// A vector claim (?5: the model set): only a file tagged by it, valid,
	// not failed, its retry and skip times passed, without its vector.
	sClaimInsertVector: `INSERT INTO worker_claims (file_key, worker_id, claimed_at, lease_until, kind)
		SELECT ?1, ?2, ?3, ?4, '` + string(store.JobVector) + `' FROM library_files
		WHERE key = ?1 AND tagged = 1 AND tagged_version = ?5 AND ?5 <> '' AND is_valid = 1 AND failed = 0
			AND next_retry_at <= ?3 AND skip_until <= ?3
			AND NOT EXISTS (SELECT 1 FROM track_vectors v INDEXED BY track_vectors_model_set WHERE v.file_key = ?1 AND v.model_set = ?5)
		ON CONFLICT (file_key) DO NOTHING`,
	// A retag mark on a file tagged by ?2, valid, not failed, not marked.
	sMarkRetag: `UPDATE library_files SET needs_retag = 1
		WHERE key = ?1 AND needs_retag = 0 AND tagged = 1 AND is_valid = 1 AND failed = 0 AND tagged_version = ?2`,
	sClaimExists: `SELECT 1 FROM worker_claims WHERE file_key = ?`,
	// The file as claimed, read in the claim's transaction.
	sClaimedFile: `SELECT ` + fileCols + ` FROM library_files WHERE key = ?`,
	// Conditional delete: only the holder's claim.
	sDeleteHeld: `DELETE FROM worker_claims WHERE file_key = ? AND worker_id = ?`,
	// Conditional lease extension: only the holder's claim, never shorter.
	// A row that matches counts as changed even when its lease stays.
	sKeepHeld: `UPDATE worker_claims SET lease_until = max(lease_until, ?3) WHERE file_key = ?1 AND worker_id = ?2`,
	// A file the job rewrote takes its new size and mtime (?4: rewritten),
	// stamped with the stat sequence's value; only a file still of the
	// content the job claimed (?7: checked, ?8, ?9) or rewrote is
	// completed.
	sComplete: `UPDATE library_files SET tagged = 1, needs_tagging = 0, needs_retag = 0, tagged_version = ?2,
			last_tagged_at = ?3, checkpoint = '', last_error = '',
			size = CASE WHEN ?4 THEN ?5 ELSE size END, mtime_ms = CASE WHEN ?4 THEN ?6 ELSE mtime_ms END,
			stat_seq = CASE WHEN ?4 THEN max(stat_seq, ` + statSeqNow + `) ELSE stat_seq END
		WHERE key = ?1 AND (NOT ?7 OR (size = ?8 AND mtime_ms = ?9) OR (?4 AND size = ?5 AND mtime_ms = ?6))`,
	sPutTags: `INSERT INTO file_tags (file_key, tags, version, written_at, writes) VALUES (?1, ?2, ?3, ?4, 1)
		ON CONFLICT (file_key) DO UPDATE SET tags = excluded.tags, version = excluded.version,
			written_at = excluded.written_at, writes = file_tags.writes + 1`,
	// A failed job's update, applied only to a file still of the content
	// the job claimed (?9: checked, ?10, ?11).
	sReleaseUpdate: `UPDATE library_files SET attempts = ?2, next_retry_at = ?3, skip_until = ?4, waiting = ?3 <> 0 OR ?4 <> 0,
			failed = ?5, last_error = ?6, checkpoint = ?7, is_valid = CASE WHEN ?8 THEN 0 ELSE is_valid END,
			tagged = CASE WHEN ?12 THEN 0 ELSE tagged END, needs_tagging = CASE WHEN ?12 THEN 1 ELSE needs_tagging END,
			needs_retag = CASE WHEN ?12 THEN 0 ELSE needs_retag END
		WHERE key = ?1 AND (NOT ?9 OR (size = ?10 AND mtime_ms = ?11))`,
	sReleaseWorker: `DELETE FROM worker_claims WHERE worker_id = ? RETURNING file_key`,
	// A crash counted, and the file quarantined (failed, ?3 its error) when
	// its new count reaches ?2; SET reads the stored row, RETURNING the new one.
	sCrashInc: `UPDATE library_files SET crash_count = crash_count + 1,
			failed = CASE WHEN crash_count + 1 >= ?2 THEN 1 ELSE failed END,
			last_error = CASE WHEN crash_count + 1 >= ?2 THEN ?3 ELSE last_error END
		WHERE key = ?1 RETURNING crash_count`,
	sCrashGet:   `SELECT crash_count FROM library_files WHERE key = ?`,
	sQuarantine: `UPDATE library_files SET failed = 1, last_error = ?2 WHERE key = ?1`,
	// Cleanup, condition re-checked in the delete itself: expired leases
	// (index on lease_until), then claims whose file is gone or no longer
	// pending (tagged, failed, invalid) — a scan of the claims, which number
	// about the workers, each with a primary-key probe of its file.
	// A claim is still work by its kind (store.KeepsClaim).
	sCleanupExpired: `DELETE FROM worker_claims WHERE lease_until < ?
		RETURNING file_key, worker_id, claimed_at, lease_until, kind`,
	sCleanupIneligible: `DELETE FROM worker_claims WHERE NOT EXISTS (
			SELECT 1 FROM library_files f WHERE f.key = worker_claims.file_key AND f.is_valid = 1 AND f.failed = 0
				AND CASE worker_claims.kind
					WHEN '` + string(store.JobTag) + `' THEN f.needs_tagging = 1
					WHEN '` + string(store.JobRetag) + `' THEN f.needs_retag = 1 AND f.tagged = 1
					WHEN '` + string(store.JobVector) + `' THEN f.tagged = 1
					ELSE 0 END)
		RETURNING file_key, worker_id, claimed_at, lease_until, kind`,
	// Files whose retry or skip time has passed leave the waiting index for
	// the ready one, at most ?2 a call (found through the waiting index by
	// their end time: the call costs what it moves).
	sSettleWaits: `UPDATE library_files SET waiting = 0 WHERE key IN (
			SELECT key FROM library_files INDEXED BY library_files_waiting
			WHERE needs_tagging = 1 AND is_valid = 1 AND failed = 0 AND waiting = 1
				AND max(next_retry_at, skip_until) <= ?1
			LIMIT ?2)`,
	sSetMeta: `INSERT INTO meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
	sInsertMeta: `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`,
	sSwapMeta:   `UPDATE meta SET value = ?3 WHERE key = ?1 AND value = ?2`,
	sSaveRestart: `INSERT INTO worker_restart_policy (key, component, restart_count, consecutive, recent,
			last_restart_wall_ms, failed_at_wall_ms, failure_reason, updated_at_wall_ms)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
		ON CONFLICT (key) DO UPDATE SET component = excluded.component,
			restart_count = excluded.restart_count, consecutive = excluded.consecutive,
			recent = excluded.recent, last_restart_wall_ms = excluded.last_restart_wall_ms,
			failed_at_wall_ms = excluded.failed_at_wall_ms, failure_reason = excluded.failure_reason,
			updated_at_wall_ms = excluded.updated_at_wall_ms`,
	// A row whose identity is stored already (a batch sent again after a
	// lost answer) is skipped: one probe of health_history_identity.
	sAppendHistory: `INSERT INTO health_history (at_ms, instance, component, status)
		SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS
			(SELECT 1 FROM health_history WHERE instance = ?2 AND component = ?3 AND at_ms = ?1)`,
	sPruneHistory: `DELETE FROM health_history WHERE id IN
			(SELECT id FROM health_history WHERE at_ms < ? ORDER BY at_ms LIMIT ?)`,
}

var readSQL = map[int]string{
	// Discovery: pending files (partial index, key order) past the cursor,
	// retry/skip time reached, no claim (primary-key probe).
	// Discovery: the first eligible files in key order from the files not
	// waiting (key order in their index) and from those whose wait has
	// ended (found by the end time in theirs, then sorted: few, since
	// settleWaits moves them over), each with the whole eligibility test.
	sDiscover: `SELECT ` + fileCols + ` FROM (
			SELECT * FROM (SELECT ` + fileCols + ` FROM library_files INDEXED BY library_files_ready
				WHERE needs_tagging = 1 AND is_valid = 1 AND failed = 0 AND waiting = 0 AND key > ?1
					AND next_retry_at <= ?2 AND skip_until <= ?2
					AND NOT EXISTS (SELECT 1 FROM worker_claims c WHERE c.file_key = library_files.key)
				ORDER BY key LIMIT ?3)
			UNION ALL
			SELECT * FROM (SELECT ` + fileCols + ` FROM library_files INDEXED BY library_files_waiting
				WHERE needs_tagging = 1 AND is_valid = 1 AND failed = 0 AND waiting = 1
					AND max(next_retry_at, skip_until) <= ?2 AND key > ?1
					AND NOT EXISTS (SELECT 1 FROM worker_claims c WHERE c.file_key = library_files.key)
				ORDER BY key LIMIT ?3))
		ORDER BY key LIMIT ?3`,
	sFile:         `SELECT ` + fileCols + ` FROM library_files WHERE key = ?`,
	sClaimExistsR: `SELECT 1 FROM worker_claims WHERE file_key = ?`,
	sCounts:       `SELECT class, n FROM library_counts`,
	sClaimCount:   `SELECT count(*) FROM worker_claims`,
	sGetMeta:      `SELECT value FROM meta WHERE key = ?`,
	sLoadRestart: `SELECT component, restart_count, consecutive, recent, last_restart_wall_ms,
			failed_at_wall_ms, failure_reason, updated_at_wall_ms
		FROM worker_restart_policy WHERE key = ?`,
	sTags:      `SELECT tags FROM file_tags WHERE file_key = ?`,
	sListFiles: `SELECT ` + fileCols + ` FROM library_files WHERE key > ?1 ORDER BY key LIMIT ?2`,
	sTrackVectors: `SELECT file_key, vector FROM track_vectors INDEXED BY track_vectors_model_set
		WHERE model_set = ?1 AND file_key > ?2 ORDER BY file_key LIMIT ?3`,
	sListTags: `SELECT file_key, version, tags FROM file_tags WHERE file_key > ?1 ORDER BY file_key LIMIT ?2`,
	// The files marked for a retag (partial index, key order) past the
	// cursor, claimable at ?2, unclaimed.
	sDiscoverRetag: `SELECT ` + fileCols + ` FROM library_files INDEXED BY library_files_retag
		WHERE needs_retag = 1 AND tagged = 1 AND is_valid = 1 AND failed = 0 AND key > ?1
			AND next_retry_at <= ?2 AND skip_until <= ?2
			AND NOT EXISTS (SELECT 1 FROM worker_claims c WHERE c.file_key = library_files.key)
		ORDER BY key LIMIT ?3`,
	// The files tagged by ?1 (index on version and key) past the cursor
	// without a vector of ?1 (primary-key probe), claimable at ?3,
	// unclaimed.
	sNeedsVector: `SELECT ` + fileCols + ` FROM library_files INDEXED BY library_files_tagged
		WHERE tagged = 1 AND is_valid = 1 AND failed = 0 AND tagged_version = ?1 AND key > ?2
			AND next_retry_at <= ?3 AND skip_until <= ?3
			AND NOT EXISTS (SELECT 1 FROM track_vectors v INDEXED BY track_vectors_model_set WHERE v.file_key = library_files.key AND v.model_set = ?1)
			AND NOT EXISTS (SELECT 1 FROM worker_claims c WHERE c.file_key = library_files.key)
		ORDER BY key LIMIT ?4`,
	sCountRetag: `SELECT count(*) FROM library_files INDEXED BY library_files_retag
		WHERE needs_retag = 1 AND tagged = 1 AND is_valid = 1 AND failed = 0`,
	sCountVector: `SELECT count(*) FROM library_files INDEXED BY library_files_tagged
		WHERE tagged = 1 AND is_valid = 1 AND failed = 0 AND tagged_version = ?1
			AND NOT EXISTS (SELECT 1 FROM track_vectors v INDEXED BY track_vectors_model_set WHERE v.file_key = library_files.key AND v.model_set = ?1)`,
	sHistory: `SELECT at_ms, instance, component, status FROM
			(SELECT id, at_ms, instance, component, status FROM health_history ORDER BY id DESC LIMIT ?)
		ORDER BY id`,
}

// stmts holds statements prepared on one pool.
type stmts [nStmts]*sql.Stmt

func (st *stmts) prepare(ctx context.Context, db *sql.DB, src map[int]string) error {
	for id, q := range src {
		p, err := db.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %.40q: %w", q, err)
		}
		st[id] = p
	}
	return nil
}

// close closes the statements; they stay in place, so that a call after
// Close gets "statement is closed" rather than a nil dereference.
func (st *stmts) close() error {
	var errs []error
	for _, p := range st {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	return errors.Join(errs...)
}
