package inference

import "github.com/nomarr/nomarr/core/tags"

// minChunk is the fewest patches ChunkPatches asks for: a Predict call's
// fixed costs (the split front end's run edges, tensor views) spread over
// about 45 s of audio.
const minChunk = 32

// ChunkPatches is ChunkPatches of m's configuration.
func (m *Models) ChunkPatches() int { return ChunkPatches(m.cfg) }

// ChunkPatches is the number of patches to hand Predict at a time when a
// track is predicted in chunks: a whole number of batches (so each Run
// sees the batches a single Predict over the track would), at least
// minChunk. Every patch's scores are those of a single call over the
// track (the split front end's invariant holds per patch), so chunking
// bounds the memory of the patches without changing a score beyond float
// rounding.
func ChunkPatches(cfg Config) int {
	b := cfg.withDefaults().BatchSize
	return b * max(1, (minChunk+b-1)/b)
}

// AppendPredictions appends p's rows (patches) to dst's and adds p's
// embedding sum to dst's (dst keeps none once a p without one came).
func AppendPredictions(dst *tags.Predictions, p tags.Predictions) {
	switch {
	case p.EmbeddingSum == nil || len(dst.MSD) > 0 && dst.EmbeddingSum == nil:
		dst.EmbeddingSum = nil
	case dst.EmbeddingSum == nil:
		dst.EmbeddingSum = append([]float64(nil), p.EmbeddingSum...)
	default:
		for j, x := range p.EmbeddingSum {
			dst.EmbeddingSum[j] += x
		}
	}
	dst.MSD = append(dst.MSD, p.MSD...)
	if dst.Heads == nil {
		dst.Heads = make(map[string][][]float32, len(p.Heads))
	}
	for h, rows := range p.Heads {
		dst.Heads[h] = append(dst.Heads[h], rows...)
	}
}
