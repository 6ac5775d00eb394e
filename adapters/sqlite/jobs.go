package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// MarkRetag implements store.Jobs, in one transaction: one conditional
// UPDATE per key (sMarkRetag), which re-checks the file.
func (s *Store) MarkRetag(ctx context.Context, keys []string, version string) (int, error) {
	if version == "" {
		return 0, nil
	}
	return s.updateEach(ctx, sMarkRetag, "mark retag", keys, version)
}

// DiscoverRetag implements store.Jobs through the partial index of the
// marked files. A limit <= 0 means no limit.
func (s *Store) DiscoverRetag(ctx context.Context, now time.Time, after string, limit int) ([]store.File, error) {
	return s.queryFiles(ctx, "discover retag", sDiscoverRetag, limit, after, ms(now), sqlLimit(limit))
}

// NeedsVector implements store.Jobs from vector_missing where the file
// keeps it, else through the index of the tagged files by version and
// key, probing each file's vector. A limit <= 0 means no limit.
func (s *Store) NeedsVector(ctx context.Context, now time.Time, modelSet, after string, limit int) ([]store.File, error) {
	if modelSet == "" {
		return nil, nil
	}
	args := []any{modelSet, after, ms(now), sqlLimit(limit)}
	if vm := s.vectorMissing; vm != nil {
		rows, err := vm.needs.QueryContext(ctx, args...)
		return s.scanFiles(rows, err, "needs vector", limit)
	}
	return s.queryFiles(ctx, "needs vector", sNeedsVector, limit, args...)
}

// CountJobs implements store.Jobs: two counts over the indexes of
// DiscoverRetag and NeedsVector (without vector_missing, the second reads
// every file tagged by modelSet).
func (s *Store) CountJobs(ctx context.Context, modelSet string) (store.JobCounts, error) {
	var c store.JobCounts
	if err := s.rs[sCountRetag].QueryRowContext(ctx).Scan(&c.Retag); err != nil {
		return store.JobCounts{}, s.fail("count jobs", "", err)
	}
	if modelSet == "" {
		return c, nil
	}
	var row *sql.Row
	if vm := s.vectorMissing; vm != nil {
		row = vm.count.QueryRowContext(ctx, modelSet)
	} else {
		row = s.rs[sCountVector].QueryRowContext(ctx, modelSet)
	}
	if err := row.Scan(&c.Vector); err != nil {
		return store.JobCounts{}, s.fail("count jobs", "", err)
	}
	return c, nil
}
