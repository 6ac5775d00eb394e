package tags

import (
	"errors"
	"math"
	"testing"

	"github.com/nomarr/nomarr/core/similar"
)

// TestTrackVectorFromSum checks that the vector from a running sum is
// similar.TrackVector of the rows summed.
func TestTrackVectorFromSum(t *testing.T) {
	rows := [][]float32{{1, 0, 2}, {3, 1, 0}, {0.5, 0.25, 4}}
	sum := make([]float64, 3)
	for _, r := range rows {
		for j, x := range r {
			sum[j] += float64(x)
		}
	}
	p := Predictions{MSD: make([][]float32, len(rows)), EmbeddingSum: sum}
	got, err := TrackVector(p)
	if err != nil {
		t.Fatal(err)
	}
	want, err := similar.TrackVector(rows)
	if err != nil {
		t.Fatal(err)
	}
	for j := range want {
		if math.Abs(float64(got[j]-want[j])) > 1e-6 {
			t.Fatalf("coordinate %d: %v, want %v", j, got[j], want[j])
		}
	}
}

func TestTrackVectorErrors(t *testing.T) {
	if _, err := TrackVector(Predictions{MSD: make([][]float32, 2)}); !errors.Is(err, ErrNoEmbeddings) {
		t.Errorf("no sum: %v, want ErrNoEmbeddings", err)
	}
	if _, err := TrackVector(Predictions{EmbeddingSum: []float64{1, 2}}); !errors.Is(err, similar.ErrNoPatches) {
		t.Errorf("no patch: %v, want ErrNoPatches", err)
	}
	if _, err := TrackVector(Predictions{MSD: make([][]float32, 2), EmbeddingSum: []float64{0, 0}}); !errors.Is(err, similar.ErrZero) {
		t.Errorf("zero sum: %v, want ErrZero", err)
	}
}
