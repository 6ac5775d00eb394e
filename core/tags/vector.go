package tags

import (
	"errors"

	"github.com/nomarr/nomarr/core/similar"
)

// ErrNoEmbeddings: the predictions kept no patch embeddings (EmbeddingSum
// is nil), so they give no track vector.
var ErrNoEmbeddings = errors.New("tags: predictions without patch embeddings")

// TrackVector is the track vector of p (similar.TrackVector): the unit
// mean of its patch embeddings, from their sum and the patch count.
// ErrNoEmbeddings when p kept none; similar.ErrNoPatches without a patch;
// similar.ErrZero when the mean has no direction.
func TrackVector(p Predictions) ([]float32, error) {
	if p.EmbeddingSum == nil {
		return nil, ErrNoEmbeddings
	}
	n := len(p.MSD)
	if n == 0 {
		return nil, similar.ErrNoPatches
	}
	mean := make([]float32, len(p.EmbeddingSum))
	for j, s := range p.EmbeddingSum {
		mean[j] = float32(s / float64(n))
	}
	// The mean of one row is that row: similar.TrackVector normalises it.
	return similar.TrackVector([][]float32{mean})
}
