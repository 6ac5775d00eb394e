//go:build cgo

package inference

import (
	"testing"

	"github.com/nomarr/nomarr/adapters/onnx/rewrite"
)

// The rewrites of adapters/onnx/rewrite change no prediction beyond
// float32 rounding: each step, left out and applied, on the real models.
// (The structure of the rewritten graphs is tested there.)

// Leaving the dead filters out changes no prediction beyond float32
// rounding: the rewritten backbone with and without the pruning (and
// without the constant inputs' folding, which sums in another order:
// TestFoldedMatchesUnfolded), on a track's overlapping patches and on
// unrelated ones.
func TestPrunedMatchesUnpruned(t *testing.T) {
	rewritesAgree(t, "pruned vs all filters", 1e-7, func(s *rewrite.Options, on bool) {
		s.KeepConstantInputs = true
		s.KeepDeadFilters = !on
	})
}

// The temporal branch with a kernel of 128 frames as a product with a
// banded matrix scores the patches as the Conv does, within float32
// rounding.
func TestTemporalProductMatchesConv(t *testing.T) {
	rewritesAgree(t, "banded product vs Conv", 4e-6, func(s *rewrite.Options, on bool) { s.KeepTemporalConvs = !on })
}

// The mid-end's first convolution without the front end's constant
// channels scores the patches as with them, within float32 rounding.
func TestFoldedMatchesUnfolded(t *testing.T) {
	rewritesAgree(t, "folded vs all channels", 4e-6, func(s *rewrite.Options, on bool) { s.KeepConstantInputs = !on })
}

// rewritesAgree loads the models twice, with the rewrite steps set(false)
// and set(true) choose, and fails when their scores differ by more than
// limit on a track's overlapping patches or on unrelated ones, or when
// either runs the backbone as exported (a rewrite that does not open).
func rewritesAgree(t *testing.T, what string, limit float64, set func(s *rewrite.Options, on bool)) {
	t.Helper()
	cfg := testConfig(t)
	cfg.BatchSize = 8
	load := func(on bool) *Models {
		m := New(cfg)
		set(&m.steps, on)
		if err := m.Load(t.Context()); err != nil {
			t.Fatalf("Load: %v", err)
		}
		t.Cleanup(m.Unload)
		return m
	}
	off, on := load(false), load(true)
	if off.split == nil || on.split == nil {
		t.Fatal("the rewritten backbone did not open (see the warning): running as exported")
	}
	for name, c := range map[string]struct {
		p []float32
		n int
	}{"track": {trackPatches(9, 5), 9}, "independent": {testPatches(6, 8), 6}} {
		want, err := off.Predict(c.p, c.n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := on.Predict(c.p, c.n)
		if err != nil {
			t.Fatal(err)
		}
		d := predDiff(t, got, want)
		t.Logf("%s: max abs difference %.3g", name, d)
		if d > limit {
			t.Errorf("%s: %s: max abs difference %.3g > %.0e", name, what, d, limit)
		}
	}
}
