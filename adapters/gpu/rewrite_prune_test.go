//go:build cgo

package gpu

import (
	"slices"
	"testing"

	"github.com/nomarr/nomarr/adapters/gpu/onnxgraph"
)

// backboneThrough is the backbone as exported, parsed, with the rewrites
// steps applied in order (those before the one under test, in
// rewriteBackbone's order).
func backboneThrough(t *testing.T, steps ...func(*onnxgraph.Graph) int) *onnxgraph.Model {
	t.Helper()
	m, err := onnxgraph.Parse(readBackbone(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range steps {
		step(m.Graph)
	}
	return m
}

// convRows is the number of filters of the Conv named name (its kernel's
// first dimension), or -1 when there is none.
func convRows(g *onnxgraph.Graph, name string) int64 {
	for _, n := range g.Nodes {
		if n.OpType == "Conv" && n.Name == name {
			return g.Initializer(n.Inputs[1]).Dims[0]
		}
	}
	return -1
}

// The backbone's dead filters are left out of its convolutions: the two
// timbral ones (204 filters each) keep 25 and 14 live ones, padded to a
// channel block; the three temporal ones keep theirs; the mid-end's first
// (64 filters) keeps 20 plus a zero filter. Every channel is put back by a
// Gather, so the graph's tensors keep their shapes.
func TestPruneDeadFiltersStructure(t *testing.T) {
	m := backboneThrough(t, foldGatherConv, poolBeforeNorm, fullWidthToConv1D)
	g := m.Graph
	mid := "Conv__137:0/conv1d"
	var w, bias []float32
	for _, n := range g.Nodes {
		if n.Name == mid {
			w, bias = floats(g, n.Inputs[1]), floats(g, n.Inputs[2])
		}
	}
	if n := pruneDeadFilters(g); n != 1 {
		t.Fatalf("pruned %d convolutions after pooling, want 1 (the mid-end's first)", n)
	}
	for name, want := range map[string]int64{"Conv__134": 32, "Conv__123": 16, "Conv__137:0/conv1d": 21} {
		if got := convRows(g, name); got != want {
			t.Errorf("%s has %d filters, want %d", name, got, want)
		}
	}
	// The mid-end's channels: a live one computed by its own filter, a dead
	// one read from the zero filter and given its bias.
	for _, n := range g.Nodes {
		if n.Name != mid {
			continue
		}
		kernel, kbias := floats(g, n.Inputs[1]), floats(g, n.Inputs[2])
		place := single(g, n.Outputs[0])
		add := single(g, place.Outputs[0])
		index, constant := ints(g, place.Inputs[1]), floats(g, add.Inputs[1])
		per, live := len(w)/len(bias), int64(len(kbias)-1)
		if len(index) != len(bias) || len(constant) != len(bias) || slices.ContainsFunc(kernel[live*int64(per):], func(v float32) bool { return v != 0 }) || kbias[live] != 0 {
			t.Fatalf("mid-end: %d indices, %d constants, last filter not zero", len(index), len(constant))
		}
		for c, r := range index {
			row := w[c*per : (c+1)*per]
			switch {
			case r < live && (!slices.Equal(kernel[r*int64(per):(r+1)*int64(per)], row) || kbias[r] != bias[c] || constant[c] != 0):
				t.Errorf("mid-end channel %d: filter %d or its bias differs", c, r)
			case r == live && (constant[c] != bias[c] || slices.ContainsFunc(row, func(v float32) bool { return v >= deadWeight || v <= -deadWeight })):
				t.Errorf("mid-end channel %d: left out but live, or given %g for its bias %g", c, constant[c], bias[c])
			case r > live:
				t.Errorf("mid-end channel %d reads filter %d of %d", c, r, live+1)
			}
		}
	}
	places := 0
	for _, n := range g.Nodes {
		if n.OpType == "Gather" {
			if idx := ints(g, n.Inputs[1]); len(idx) == 204 || len(idx) == 64 || len(idx) == 51 {
				places++
			}
		}
	}
	if places != 6 {
		t.Errorf("%d channel placements, want 6 (five pooled branches and the mid-end)", places)
	}
	sp, err := splitFrontEnd(m, PatchFrames)
	if err != nil || sp == nil {
		t.Fatalf("split: %v, %v", sp, err)
	}
	if sp.channels[0] != 204 || sp.channels[1] != 204 {
		t.Fatalf("front end's outputs have %v channels, want 204 each", sp.channels)
	}
}

// Leaving the dead filters out changes no prediction beyond float32
// rounding: the rewritten backbone with and without the pruning (and
// without foldConstantInputs, which sums in another order:
// TestFoldConstantInputs, TestFoldedMatchesUnfolded), on a track's
// overlapping patches and on unrelated ones.
func TestPrunedMatchesUnpruned(t *testing.T) {
	keep, fold := deadWeight, foldConstants
	t.Cleanup(func() { deadWeight, foldConstants = keep, fold })
	foldConstants = false
	rewritesAgree(t, "pruned vs all filters", 1e-7, func(on bool) {
		deadWeight = 0 // every filter live
		if on {
			deadWeight = keep
		}
	})
}

// rewritesAgree loads the models twice, after set(false) and after
// set(true), and fails when their scores differ by more than limit on a
// track's overlapping patches or on unrelated ones, or when either runs
// the backbone as exported (a rewrite that does not open).
func rewritesAgree(t *testing.T, what string, limit float64, set func(on bool)) {
	t.Helper()
	cfg := testConfig(t)
	cfg.BatchSize = 8
	set(false)
	off := loaded(t, cfg)
	set(true)
	on := loaded(t, cfg)
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

// The temporal branch with a kernel of 128 frames runs as a product with a
// banded matrix (temporalAsMatMul), the two shorter ones stay Convs; the
// scores are those of the Conv within float32 rounding.
func TestTemporalAsMatMul(t *testing.T) {
	g := backboneThrough(t, foldGatherConv, poolBeforeNorm, fullWidthToConv1D, pruneDeadFilters).Graph
	convs := opCount(g, "Conv")
	if n := temporalAsMatMul(g, PatchFrames, MelBands); n != 1 {
		t.Fatalf("rewrote %d temporal branches, want 1 (kernel 128)", n)
	}
	if opCount(g, "Conv") != convs-1 || convRows(g, "model/conv2d_2/BiasAdd") != -1 {
		t.Fatalf("%d Conv left of %d, the 128-frame one among them: %v", opCount(g, "Conv"), convs, convRows(g, "model/conv2d_2/BiasAdd") != -1)
	}
	for _, n := range g.Nodes {
		if n.OpType == "MatMul" && n.Name == "model/conv2d_2/BiasAdd:0/product" {
			// Four filters of 187 frames: the three live ones and the zero one.
			if d := g.Initializer(n.Inputs[0]).Dims; d[0] != 4*PatchFrames || d[1] != PatchFrames {
				t.Fatalf("banded matrix %v, want [%d %d]", d, 4*PatchFrames, PatchFrames)
			}
		}
	}

	keep := temporalProducts
	t.Cleanup(func() { temporalProducts = keep })
	rewritesAgree(t, "banded product vs Conv", 4e-6, func(on bool) { temporalProducts = on })
}

// The mid-end's first convolution without the front end's constant
// channels (foldConstantInputs) scores the patches as with them, within
// float32 rounding.
func TestFoldedMatchesUnfolded(t *testing.T) {
	keep := foldConstants
	t.Cleanup(func() { foldConstants = keep })
	rewritesAgree(t, "folded vs all channels", 4e-6, func(on bool) { foldConstants = on })
}

// A temporal branch whose pool thins out the frames (a stride over time)
// is not a banded product of the whole patch: it stays a Conv.
func TestTemporalAsMatMulNeedsEveryFrame(t *testing.T) {
	g := backboneThrough(t, foldGatherConv, poolBeforeNorm, fullWidthToConv1D, pruneDeadFilters).Graph
	for _, n := range g.Nodes {
		if n.OpType == "MaxPool" && n.Inputs[0] == "model/conv2d_2/BiasAdd:0" {
			n.Attrs = slices.DeleteFunc(n.Attrs, func(a *onnxgraph.Attr) bool { return a.Name == "strides" })
			n.Attrs = append(n.Attrs, onnxgraph.IntsAttr("strides", []int64{2, 1}))
		}
	}
	if n := temporalAsMatMul(g, PatchFrames, MelBands); n != 0 {
		t.Fatalf("rewrote %d temporal branches, want 0", n)
	}
}
