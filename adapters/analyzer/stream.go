package analyzer

import (
	"context"
	"errors"

	"github.com/nomarr/nomarr/adapters/audio"
	"github.com/nomarr/nomarr/adapters/features"
	"github.com/nomarr/nomarr/adapters/inference"
	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/core/worker"
)

// progressSamples is how much decoded audio (8.2 s) earns a progress
// report while a file is decoded: a long file keeps showing progress, so
// only a decode that stands still looks stalled.
const progressSamples = 1 << 17

// stopped carries a result that ends a streamed analysis before the end
// of the file (an inference failure, a file whose tags cannot be written).
type stopped struct{ r worker.Result }

func (s *stopped) Error() string { return s.r.Reason }

// streamed is the outcome of a streamed analysis.
type streamed struct {
	pred    tags.Predictions // every patch's scores; empty when gated
	patches int              // patches of the whole decoded audio
	samples int              // samples decoded (audio.SampleRate a second)
	gated   map[string]string
}

// analyzeStream decodes the file at path and predicts its patches as the
// audio arrives, chunk by chunk (docs/design.md §9): decode → frames →
// patches → batched inference. What it holds at once is bounded by
// inference.ChunkPatches patches and the decoder's block, not by the
// file's length; only the scores (68 values per patch, 183 bytes per
// second of audio) grow with it.
//
// gate runs once, when the first patches are ready and before any
// inference: a non-nil map skips the models (the file's tags are reused),
// and the rest of the file is still decoded so that a damaged file fails
// as it would; a non-nil result stops the analysis with it. A failed
// decode is returned as the decode error, whatever was predicted before.
func (m *MusiCNN) analyzeStream(ctx context.Context, path string, progress func(int64), step *int64,
	gate func() (map[string]string, *worker.Result)) (streamed, error) {
	if m.ext == nil {
		m.ext = features.NewExtractor()
	}
	if m.patcher == nil {
		m.patcher = features.NewPatcher(m.ext)
	}
	p := m.patcher
	p.Reset()
	chunk := m.Models.ChunkPatches()
	var out streamed
	gated := false
	flush := func(all bool) error {
		for p.Ready() >= chunk || all && p.Ready() > 0 {
			if !gated {
				gated = true
				reuse, stop := gate()
				if stop != nil {
					return &stopped{*stop}
				}
				out.gated = reuse
			}
			var n int
			m.buf, n = p.AppendReady(m.buf[:0], chunk)
			out.patches += n
			if out.gated != nil {
				continue
			}
			pred, err := m.Models.Predict(m.buf, n)
			if err != nil {
				class, dep := inference.Classify(err)
				return &stopped{worker.Result{Class: class, Dependency: dep, Reason: "inference: " + err.Error()}}
			}
			inference.AppendPredictions(&out.pred, pred)
		}
		return nil
	}
	next := progressSamples
	var err error
	out.samples, err = audio.Stream(ctx, path, m.Audio, func(block []float32) error {
		p.Feed(block)
		if p.Samples() >= next {
			next += progressSamples
			*step++
			progress(*step)
		}
		return flush(false)
	})
	if err == nil {
		p.End()
		err = flush(true)
	}
	return out, err
}

// streamResult is the worker's result for a failed analyzeStream.
func streamResult(err error) worker.Result {
	var s *stopped
	if errors.As(err, &s) {
		return s.r
	}
	return classify(err, worker.DepDecoder)
}
