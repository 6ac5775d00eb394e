package arangodb

import (
	"context"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// MarkRetag implements store.Jobs in one query (qMarkRetag), which
// re-checks each file; a conflict or a file deleted meanwhile runs it
// again on a fresh snapshot.
func (s *Store) MarkRetag(ctx context.Context, keys []string, version string) (int, error) {
	if version == "" {
		return 0, nil
	}
	return s.updateEach(ctx, qMarkRetag, "mark retag", keys, alsoGone, map[string]any{"version": version})
}

// DiscoverRetag implements store.Jobs (qDiscoverRetag).
func (s *Store) DiscoverRetag(ctx context.Context, now time.Time, after string, limit int) ([]store.File, error) {
	return s.queryFiles(ctx, "discover retag", qDiscoverRetag, qDiscoverRetagAll, limit, map[string]any{"after": after, "now": ms(now)})
}

// NeedsVector implements store.Jobs (qNeedsVector).
func (s *Store) NeedsVector(ctx context.Context, now time.Time, modelSet, after string, limit int) ([]store.File, error) {
	if modelSet == "" {
		return nil, nil
	}
	return s.queryFiles(ctx, "needs vector", qNeedsVector, qNeedsVectorAll, limit,
		map[string]any{"after": after, "now": ms(now), "model_set": modelSet})
}

// CountJobs implements store.Jobs in one query (qCountJobs).
func (s *Store) CountJobs(ctx context.Context, modelSet string) (store.JobCounts, error) {
	type result struct {
		Retag  num64 `json:"retag"`
		Vector num64 `json:"vector"`
	}
	var r result
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		r, err = queryOne[result](ctx, s.db, qCountJobs, "job counts", map[string]any{"model_set": modelSet})
		return err
	})
	if err != nil {
		return store.JobCounts{}, s.fail("count jobs", "", err)
	}
	return store.JobCounts{Retag: int(r.Retag), Vector: int(r.Vector)}, nil
}
