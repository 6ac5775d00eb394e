package arangodb

import (
	"context"

	"github.com/nomarr/nomarr/core/store"
)

// PutTrackVector implements store.Vectors in one query (qPutVector).
func (s *Store) PutTrackVector(ctx context.Context, fileKey, modelSet string, vec []float32) error {
	if err := store.CheckTrackVector(modelSet, vec); err != nil {
		return s.fail("put track vector", fileKey, err)
	}
	if !validFileKey(fileKey) {
		return s.fail("put track vector", fileKey, store.ErrNotFound)
	}
	err := s.write(ctx, conflictsOnly, func(ctx context.Context) error {
		n, err := queryAll[int](ctx, s.db, qPutVector, map[string]any{"key": fileKey, "model_set": modelSet, "vector": vec})
		if err == nil && len(n) == 0 {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return s.fail("put track vector", fileKey, err)
	}
	return nil
}

// vectorDoc is a row of qTrackVectors.
type vectorDoc struct {
	Key    string    `json:"key"`
	Vector []float32 `json:"vector"`
}

// TrackVectors implements store.Vectors.
func (s *Store) TrackVectors(ctx context.Context, modelSet, after string, limit int) ([]store.TrackVector, error) {
	q, bind := qTrackVectorsAll, map[string]any{"after": after, "model_set": modelSet}
	if limit > 0 {
		q, bind["limit"] = qTrackVectors, limit
	}
	var docs []vectorDoc
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		docs, err = queryAll[vectorDoc](ctx, s.db, q, bind)
		return err
	})
	if err != nil {
		return nil, s.fail("track vectors", modelSet, err)
	}
	out := make([]store.TrackVector, len(docs))
	for i, d := range docs {
		out[i] = store.TrackVector{FileKey: d.Key, ModelSet: modelSet, Vector: d.Vector}
	}
	return out, nil
}

// tagsDoc is a row of qListTags.
type tagsDoc struct {
	Key     string            `json:"key"`
	Version string            `json:"version"`
	Tags    map[string]string `json:"tags"`
}

// ListTags implements store.Vectors.
func (s *Store) ListTags(ctx context.Context, after string, limit int) ([]store.FileTags, error) {
	q, bind := qListTagsAll, map[string]any{"after": after}
	if limit > 0 {
		q, bind["limit"] = qListTags, limit
	}
	var docs []tagsDoc
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		docs, err = queryAll[tagsDoc](ctx, s.db, q, bind)
		return err
	})
	if err != nil {
		return nil, s.fail("list tags", after, err)
	}
	out := make([]store.FileTags, len(docs))
	for i, d := range docs {
		if d.Tags == nil {
			d.Tags = map[string]string{}
		}
		out[i] = store.FileTags{FileKey: d.Key, Version: d.Version, Tags: d.Tags}
	}
	return out, nil
}
