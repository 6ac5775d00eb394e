// Package similar finds tracks that sound alike from the embeddings the
// models already compute, and orders them into playlists: exact nearest
// neighbours by cosine, mixes around seeds, paths from one track to
// another. It is pure: no I/O, no clock, no goroutines, no global
// randomness; every result is a function of its arguments.
package similar

import (
	"errors"
	"fmt"
	"math"
)

// Dims is the width of a track vector: the backbone's embedding width
// (msd-musicnn-1, embeddings [n,200]).
const Dims = 200

var (
	// ErrNoPatches: a track vector needs at least one patch embedding.
	ErrNoPatches = errors.New("no patch embeddings")
	// ErrZero: a vector of zero (or non-finite) length has no direction.
	ErrZero = errors.New("vector has no direction")
	// ErrDims: vectors of different widths were compared.
	ErrDims = errors.New("vector width mismatch")
	// ErrModelSet: vectors of different model sets were compared; their
	// coordinates mean different things.
	ErrModelSet = errors.New("vectors of different model sets")
)

// Vector is a track's unit vector and the model-set version whose
// backbone produced it. Invariant (for values made by NewVector): V has
// length 1 within float32 rounding, and ModelSet is not empty. Two
// Vectors are comparable only when their ModelSets are equal.
type Vector struct {
	ModelSet string
	V        []float32
}

// NewVector normalises v (a copy) into a Vector of modelSet.
func NewVector(modelSet string, v []float32) (Vector, error) {
	if modelSet == "" {
		return Vector{}, errors.New("vector without a model-set version")
	}
	u, err := Normalise(v)
	if err != nil {
		return Vector{}, err
	}
	return Vector{ModelSet: modelSet, V: u}, nil
}

// Comparable reports an error unless a and b come from the same model set
// and have the same width.
func Comparable(a, b Vector) error {
	if a.ModelSet != b.ModelSet {
		return fmt.Errorf("%w: %q and %q", ErrModelSet, a.ModelSet, b.ModelSet)
	}
	if len(a.V) != len(b.V) {
		return fmt.Errorf("%w: %d and %d", ErrDims, len(a.V), len(b.V))
	}
	return nil
}

// TrackVector is the unit mean of a track's patch embeddings: the
// direction the track's patches share. Every patch must have the width of
// the first; ErrNoPatches when there is none, ErrZero when the mean has no
// direction (all-zero or non-finite embeddings).
func TrackVector(patchEmbeddings [][]float32) ([]float32, error) {
	if len(patchEmbeddings) == 0 {
		return nil, ErrNoPatches
	}
	d := len(patchEmbeddings[0])
	if d == 0 {
		return nil, fmt.Errorf("track vector: %w", ErrZero)
	}
	sum := make([]float64, d)
	for i, p := range patchEmbeddings {
		if len(p) != d {
			return nil, fmt.Errorf("track vector: patch %d: %w: %d, want %d", i, ErrDims, len(p), d)
		}
		for j, x := range p {
			sum[j] += float64(x)
		}
	}
	mean := make([]float32, d)
	for j, s := range sum {
		mean[j] = float32(s / float64(len(patchEmbeddings)))
	}
	u, err := Normalise(mean)
	if err != nil {
		return nil, fmt.Errorf("track vector: %w", err)
	}
	return u, nil
}

// Normalise returns v scaled to unit length (a copy), or ErrZero when v
// has zero or non-finite length.
func Normalise(v []float32) ([]float32, error) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	n := math.Sqrt(ss)
	if n == 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return nil, ErrZero
	}
	u := make([]float32, len(v))
	for j, x := range v {
		u[j] = float32(float64(x) / n)
	}
	return u, nil
}

// Dot is the dot product of a and b, the cosine of unit vectors. The
// caller guarantees equal widths.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
