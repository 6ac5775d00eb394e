package inference

import (
	"math"
	"testing"

	"github.com/nomarr/nomarr/core/tags"
)

// TestEmbeddingSumChunks: Predict returns the sum of its patches'
// embeddings, EmbeddingSize wide, finite and not all zero; the sums of two chunks appended
// (AppendPredictions) are the sum of one call over both, within float
// rounding, so a streamed track's vector is the whole track's.
func TestEmbeddingSumChunks(t *testing.T) {
	cfg := testConfig(t)
	cfg.BatchSize = 7
	const n = 20
	patches := testPatches(n, 3)
	m := loaded(t, cfg)
	whole, err := m.Predict(patches, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.EmbeddingSum) != EmbeddingSize {
		t.Fatalf("embedding sum of %d values, want %d", len(whole.EmbeddingSum), EmbeddingSize)
	}
	norm := 0.0
	for j, x := range whole.EmbeddingSum {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			t.Fatalf("embedding sum[%d] = %v", j, x)
		}
		norm += x * x
	}
	if norm == 0 {
		t.Fatal("embedding sum is zero")
	}
	var chunked tags.Predictions
	for _, r := range [][2]int{{0, 9}, {9, n}} {
		p, err := m.Predict(patches[r[0]*PatchSize:r[1]*PatchSize], r[1]-r[0])
		if err != nil {
			t.Fatal(err)
		}
		AppendPredictions(&chunked, p)
	}
	for j := range whole.EmbeddingSum {
		if d := math.Abs(whole.EmbeddingSum[j] - chunked.EmbeddingSum[j]); d > 1e-4*(1+math.Abs(whole.EmbeddingSum[j])) {
			t.Fatalf("sum[%d]: whole %v, chunked %v", j, whole.EmbeddingSum[j], chunked.EmbeddingSum[j])
		}
	}
	v, err := tags.TrackVector(chunked)
	if err != nil || len(v) != EmbeddingSize {
		t.Fatalf("track vector: %d values, %v", len(v), err)
	}
}

// TestAppendPredictionsDropsPartialSum: a chunk without an embedding sum
// leaves the track with none, not with a sum of part of its patches.
func TestAppendPredictionsDropsPartialSum(t *testing.T) {
	var dst tags.Predictions
	AppendPredictions(&dst, tags.Predictions{MSD: make([][]float32, 2), EmbeddingSum: []float64{1, 2}})
	AppendPredictions(&dst, tags.Predictions{MSD: make([][]float32, 1), EmbeddingSum: []float64{3, 4}})
	if dst.EmbeddingSum[0] != 4 || dst.EmbeddingSum[1] != 6 {
		t.Fatalf("sum %v, want [4 6]", dst.EmbeddingSum)
	}
	AppendPredictions(&dst, tags.Predictions{MSD: make([][]float32, 1)})
	AppendPredictions(&dst, tags.Predictions{MSD: make([][]float32, 1), EmbeddingSum: []float64{3, 4}})
	if dst.EmbeddingSum != nil || len(dst.MSD) != 5 {
		t.Fatalf("sum %v over %d patches, want none", dst.EmbeddingSum, len(dst.MSD))
	}
}
