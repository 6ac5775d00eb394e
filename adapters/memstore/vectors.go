package memstore

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/nomarr/nomarr/core/store"
)

// PutTrackVector implements store.Vectors.
func (s *Store) PutTrackVector(_ context.Context, fileKey, modelSet string, vec []float32) error {
	if err := store.CheckTrackVector(modelSet, vec); err != nil {
		return err
	}
	if err := s.op(); err != nil {
		return err
	}
	if _, ok := s.index[fileKey]; !ok {
		return fmt.Errorf("track vector of %q: %w", fileKey, store.ErrNotFound)
	}
	s.vectors[fileKey] = store.TrackVector{FileKey: fileKey, ModelSet: modelSet, Vector: slices.Clone(vec)}
	return nil
}

// TrackVectors implements store.Vectors.
func (s *Store) TrackVectors(_ context.Context, modelSet, after string, limit int) ([]store.TrackVector, error) {
	if err := s.op(); err != nil {
		return nil, err
	}
	out := []store.TrackVector{}
	for _, k := range slices.Sorted(maps.Keys(s.vectors)) {
		v := s.vectors[k]
		if k <= after || v.ModelSet != modelSet {
			continue
		}
		if limit > 0 && len(out) == limit {
			break
		}
		v.Vector = slices.Clone(v.Vector)
		out = append(out, v)
	}
	return out, nil
}

// ListTags implements store.Vectors.
func (s *Store) ListTags(_ context.Context, after string, limit int) ([]store.FileTags, error) {
	if err := s.op(); err != nil {
		return nil, err
	}
	out := []store.FileTags{}
	for _, k := range slices.Sorted(maps.Keys(s.tags)) {
		if k <= after {
			continue
		}
		if limit > 0 && len(out) == limit {
			break
		}
		tags := maps.Clone(s.tags[k])
		if tags == nil {
			tags = map[string]string{}
		}
		out = append(out, store.FileTags{FileKey: k, Version: s.tagVersions[k], Tags: tags})
	}
	return out, nil
}
