package memstore

import (
	"context"
	"sort"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// hasVector reports whether the file holds a vector of modelSet.
func (s *Store) hasVector(key, modelSet string) bool {
	v, ok := s.vectors[key]
	return ok && v.ModelSet == modelSet
}

// claimable is store.ClaimableFor on f.
func (s *Store) claimable(kind store.JobKind, modelSet string, f *store.File, now time.Time) bool {
	return store.ClaimableFor(kind, modelSet, f, s.retag[f.Key], kind == store.JobVector && s.hasVector(f.Key, modelSet), now)
}

// MarkRetag implements store.Jobs.
func (s *Store) MarkRetag(_ context.Context, keys []string, version string) (int, error) {
	if err := s.op(); err != nil {
		return 0, err
	}
	if version == "" {
		return 0, nil
	}
	n := 0
	for _, k := range keys {
		pos, ok := s.index[k]
		if !ok || s.retag[k] {
			continue
		}
		if f := s.files[pos]; f.Tagged && f.IsValid && !f.Failed && f.TaggedVersion == version {
			s.retag[k] = true
			n++
		}
	}
	return n, nil
}

// discoverKind returns the unclaimed files of kind after the cursor, in key
// order.
func (s *Store) discoverKind(kind store.JobKind, modelSet string, now time.Time, after string, limit int) []store.File {
	from := 0
	if after != "" {
		from = sort.Search(len(s.files), func(i int) bool { return s.files[i].Key > after })
	}
	var out []store.File
	for _, f := range s.files[from:] {
		if limit > 0 && len(out) == limit {
			break
		}
		if _, claimed := s.claims[f.Key]; !claimed && s.claimable(kind, modelSet, f, now) {
			out = append(out, *f)
		}
	}
	return out
}

// DiscoverRetag implements store.Jobs.
func (s *Store) DiscoverRetag(_ context.Context, now time.Time, after string, limit int) ([]store.File, error) {
	if err := s.op(); err != nil {
		return nil, err
	}
	return s.discoverKind(store.JobRetag, "", now, after, limit), nil
}

// NeedsVector implements store.Jobs.
func (s *Store) NeedsVector(_ context.Context, now time.Time, modelSet, after string, limit int) ([]store.File, error) {
	if err := s.op(); err != nil {
		return nil, err
	}
	if modelSet == "" {
		return nil, nil
	}
	return s.discoverKind(store.JobVector, modelSet, now, after, limit), nil
}

// CountJobs implements store.Jobs.
func (s *Store) CountJobs(_ context.Context, modelSet string) (store.JobCounts, error) {
	if err := s.op(); err != nil {
		return store.JobCounts{}, err
	}
	var c store.JobCounts
	for _, f := range s.files {
		if !f.Tagged || !f.IsValid || f.Failed {
			continue
		}
		if s.retag[f.Key] {
			c.Retag++
		}
		if modelSet != "" && f.TaggedVersion == modelSet && !s.hasVector(f.Key, modelSet) {
			c.Vector++
		}
	}
	return c, nil
}
