package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
)

// vector_missing lists the files that need a vector (store.Jobs): each
// file tagged (valid, not failed) by a model set, tagged_version not
// empty, without a track_vectors row of that set, under that set.
// Triggers on library_files and track_vectors keep it equal to that
// definition in the transaction that changes either, whichever program
// writes (TestVectorMissingEqualsTheRule), so NeedsVector and CountJobs
// read the files missing a vector instead of every file of the model set.
// Each trigger recomputes the rows of the keys it touches from the
// tables (vectorResync), so a REPLACE, whose implicit delete fires no
// trigger, leaves it right as well. No schema version: a program of this
// version is right with or without it; it is built, filled from the
// tables, at the first open for writing that finds its last trigger
// missing (ensureVectorMissing), and a store that finds none walks the
// tagged files as before.
var vectorMissingDDL = slices.Concat(dropTriggers("vector_missing_file_insert", "vector_missing_file_delete",
	"vector_missing_file_update", "vector_missing_vector_insert", "vector_missing_vector_delete",
	vectorMissingTrigger), []string{
	`CREATE TABLE IF NOT EXISTS vector_missing (
		file_key  TEXT NOT NULL PRIMARY KEY,
		model_set TEXT NOT NULL
	) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS vector_missing_model_set ON vector_missing (model_set, file_key)`,
	`DELETE FROM vector_missing`,
	`INSERT INTO vector_missing (file_key, model_set) SELECT f.key, f.tagged_version FROM library_files f
		WHERE ` + vectorMissingCond("f"),
	`CREATE TRIGGER vector_missing_file_insert AFTER INSERT ON library_files WHEN NEW.tagged = 1 BEGIN
		` + vectorResync("NEW.key") + `
	END`,
	`CREATE TRIGGER vector_missing_file_delete AFTER DELETE ON library_files WHEN OLD.tagged = 1 BEGIN
		DELETE FROM vector_missing WHERE file_key = OLD.key;
	END`,
	`CREATE TRIGGER vector_missing_file_update AFTER UPDATE OF key, tagged, is_valid, failed, tagged_version ON library_files
		WHEN OLD.key IS NOT NEW.key OR OLD.tagged IS NOT NEW.tagged OR OLD.is_valid IS NOT NEW.is_valid
			OR OLD.failed IS NOT NEW.failed OR OLD.tagged_version IS NOT NEW.tagged_version BEGIN
		DELETE FROM vector_missing WHERE file_key = OLD.key;
		` + vectorResync("NEW.key") + `
	END`,
	`CREATE TRIGGER vector_missing_vector_insert AFTER INSERT ON track_vectors BEGIN
		` + vectorResync("NEW.file_key") + `
	END`,
	`CREATE TRIGGER vector_missing_vector_delete AFTER DELETE ON track_vectors BEGIN
		` + vectorResync("OLD.file_key") + `
	END`,
	`CREATE TRIGGER ` + vectorMissingTrigger + ` AFTER UPDATE OF file_key, model_set ON track_vectors
		WHEN OLD.file_key IS NOT NEW.file_key OR OLD.model_set IS NOT NEW.model_set BEGIN
		` + vectorResync("OLD.file_key") + `
		` + vectorResync("NEW.file_key") + `
	END`,
})

// vectorMissingTrigger is the name ensureVectorMissing looks for: the
// last built.
const vectorMissingTrigger = "vector_missing_vector_update"

// vectorMissingCond holds when row f of library_files needs a vector of
// the model set that tagged it.
func vectorMissingCond(f string) string {
	return f + `.tagged = 1 AND ` + f + `.is_valid = 1 AND ` + f + `.failed = 0 AND ` + f + `.tagged_version <> ''
		AND NOT EXISTS (SELECT 1 FROM track_vectors v WHERE v.file_key = ` + f + `.key AND v.model_set = ` + f + `.tagged_version)`
}

// vectorResync recomputes the vector_missing row of the file key k.
func vectorResync(k string) string {
	return `DELETE FROM vector_missing WHERE file_key = ` + k + `;
		INSERT INTO vector_missing (file_key, model_set) SELECT f.key, f.tagged_version FROM library_files f
			WHERE f.key = ` + k + ` AND ` + vectorMissingCond("f") + `;`
}

// The discovery and the count of the files that need a vector of ?1 read
// from vector_missing; the discovery re-checks each file as
// sNeedsVector does (a stale row costs a probe, never a wrong claim).
const (
	qNeedsVectorMissing = `SELECT ` + fileCols + ` FROM vector_missing m CROSS JOIN library_files ON library_files.key = m.file_key
		WHERE m.model_set = ?1 AND m.file_key > ?2 AND tagged = 1 AND is_valid = 1 AND failed = 0 AND tagged_version = ?1
			AND next_retry_at <= ?3 AND skip_until <= ?3
			AND NOT EXISTS (SELECT 1 FROM track_vectors v INDEXED BY track_vectors_model_set WHERE v.file_key = library_files.key AND v.model_set = ?1)
			AND NOT EXISTS (SELECT 1 FROM worker_claims c WHERE c.file_key = library_files.key)
		ORDER BY m.file_key LIMIT ?4`
	qCountVectorMissing = `SELECT count(*) FROM vector_missing WHERE model_set = ?1`
)

// vectorMissingStmts are the statements that read vector_missing,
// prepared on the readers.
type vectorMissingStmts struct{ needs, count *sql.Stmt }

// ensureVectorMissing builds vector_missing and its triggers
// (vectorMissingDDL) when the file lacks them, best effort as
// ensureExtras (a read-only open never builds them), and prepares the
// statements that read it where the file has them (s.vectorMissing).
func (s *Store) ensureVectorMissing(ctx context.Context) error {
	if !s.cfg.readOnly && !haveTrigger(ctx, s.r, vectorMissingTrigger) {
		_ = s.withTx(ctx, func(tx *sql.Tx) error {
			if haveTrigger(ctx, tx, vectorMissingTrigger) {
				return nil
			}
			return execSchema(ctx, tx, vectorMissingDDL)
		})
	}
	if !haveTrigger(ctx, s.r, vectorMissingTrigger) {
		return nil
	}
	needs, err := s.r.PrepareContext(ctx, qNeedsVectorMissing)
	if err != nil {
		return fmt.Errorf("prepare the look for missing vectors: %w", err)
	}
	count, err := s.r.PrepareContext(ctx, qCountVectorMissing)
	if err != nil {
		return errors.Join(fmt.Errorf("prepare the count of missing vectors: %w", err), needs.Close())
	}
	s.vectorMissing = &vectorMissingStmts{needs: needs, count: count}
	return nil
}

// haveTrigger reports whether the file holds the named trigger.
func haveTrigger(ctx context.Context, q querier, name string) bool {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name = ?`, name).Scan(&n)
	return err == nil && n > 0
}
