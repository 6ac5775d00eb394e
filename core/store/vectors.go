package store

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// TrackVector is a file's track vector (similar.TrackVector) with the
// model-set version whose backbone made it. Coordinates of two model sets
// mean different things: a reader asks for one model set's vectors and
// gets no other's.
type TrackVector struct {
	FileKey  string
	ModelSet string
	Vector   []float32
}

// FileTags is what a file's last completion stored: its tags and the
// model-set version that made them.
type FileTags struct {
	FileKey string
	Version string
	Tags    map[string]string
}

// Vectors keeps one track vector per file and reads back the stored tags,
// for similarity searches and playlists.
//
// Invariants: a file holds at most one vector (the last put, whatever its
// model set); its vector and its tags go with it when the file is
// forgotten (ForgetMissing). A vector outlives a change of the file's
// content until the next completion's vector replaces it.
type Vectors interface {
	// PutTrackVector stores vec as fileKey's track vector made by
	// modelSet, replacing the one the file had. ErrNotFound: no such
	// file. A vector that CheckTrackVector refuses, or an empty modelSet,
	// is an error and nothing is stored.
	PutTrackVector(ctx context.Context, fileKey, modelSet string, vec []float32) error
	// TrackVectors returns up to limit vectors of modelSet whose file keys
	// are greater than after, in key order (limit <= 0: no limit); never a
	// vector of another model set.
	TrackVectors(ctx context.Context, modelSet, after string, limit int) ([]TrackVector, error)
	// ListTags returns up to limit stored tag sets whose file keys are
	// greater than after, in key order (limit <= 0: no limit); a file no
	// completion tagged has none.
	ListTags(ctx context.Context, after string, limit int) ([]FileTags, error)
}

// MaxVectorDims bounds a track vector's width (MusiCNN's is 200).
const MaxVectorDims = 4096

// CheckTrackVector reports why a store refuses vec with modelSet: no
// model set, no coordinate, too many, or one not finite.
func CheckTrackVector(modelSet string, vec []float32) error {
	switch {
	case modelSet == "":
		return errors.New("store: track vector without a model set")
	case len(vec) == 0:
		return errors.New("store: empty track vector")
	case len(vec) > MaxVectorDims:
		return fmt.Errorf("store: track vector of %d dimensions, more than %d", len(vec), MaxVectorDims)
	}
	for i, x := range vec {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("store: track vector coordinate %d is %v", i, x)
		}
	}
	return nil
}
