package sqlite

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/nomarr/nomarr/core/store"
)

// encodeVector lays vec out as little-endian float32s.
func encodeVector(vec []float32) []byte {
	b := make([]byte, 4*len(vec))
	for i, x := range vec {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// decodeVector reads encodeVector's layout.
func decodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("vector of %d bytes, not a multiple of 4", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// PutTrackVector implements store.Vectors: one upsert that writes only
// for a stored file.
func (s *Store) PutTrackVector(ctx context.Context, fileKey, modelSet string, vec []float32) error {
	if err := store.CheckTrackVector(modelSet, vec); err != nil {
		return s.fail("put track vector", fileKey, err)
	}
	res, err := s.exec(ctx, sPutVector, fileKey, modelSet, encodeVector(vec))
	if err != nil {
		return s.fail("put track vector", fileKey, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.fail("put track vector", fileKey, err)
	}
	if n == 0 {
		return s.fail("put track vector", fileKey, store.ErrNotFound)
	}
	return nil
}

// TrackVectors implements store.Vectors (index track_vectors_model_set).
func (s *Store) TrackVectors(ctx context.Context, modelSet, after string, limit int) ([]store.TrackVector, error) {
	rows, err := s.rs[sTrackVectors].QueryContext(ctx, modelSet, after, sqlLimit(limit))
	if err != nil {
		return nil, s.fail("track vectors", modelSet, err)
	}
	defer rows.Close()
	out := []store.TrackVector{}
	for rows.Next() {
		var key string
		var blob []byte
		if err := rows.Scan(&key, &blob); err != nil {
			return nil, s.fail("track vectors", modelSet, err)
		}
		v, err := decodeVector(blob)
		if err != nil {
			return nil, s.fail("track vectors", key, err)
		}
		out = append(out, store.TrackVector{FileKey: key, ModelSet: modelSet, Vector: v})
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("track vectors", modelSet, err)
	}
	return out, nil
}

// ListTags implements store.Vectors.
func (s *Store) ListTags(ctx context.Context, after string, limit int) ([]store.FileTags, error) {
	rows, err := s.rs[sListTags].QueryContext(ctx, after, sqlLimit(limit))
	if err != nil {
		return nil, s.fail("list tags", after, err)
	}
	defer rows.Close()
	out := []store.FileTags{}
	for rows.Next() {
		var t store.FileTags
		var doc string
		if err := rows.Scan(&t.FileKey, &t.Version, &doc); err != nil {
			return nil, s.fail("list tags", after, err)
		}
		t.Tags = map[string]string{}
		if err := json.Unmarshal([]byte(doc), &t.Tags); err != nil {
			return nil, s.fail("list tags", t.FileKey, fmt.Errorf("bad tags document: %w", err))
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list tags", after, err)
	}
	return out, nil
}
