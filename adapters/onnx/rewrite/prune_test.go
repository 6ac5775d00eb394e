package rewrite

import (
	"slices"
	"testing"

	"github.com/nomarr/nomarr/adapters/onnx/graph"
)

// backboneThrough is the backbone as exported, parsed, with the rewrites
// steps applied in order (those before the one under test, in
// Backbone's order).
func backboneThrough(t *testing.T, steps ...func(*graph.Graph) int) *graph.Model {
	t.Helper()
	m, err := graph.Parse(readBackbone(t))
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
func convRows(g *graph.Graph, name string) int64 {
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
	m := backboneThrough(t, foldGatherConv, pool, fullWidthToConv1D)
	g := m.Graph
	mid := "Conv__137:0/conv1d"
	var w, bias []float32
	for _, n := range g.Nodes {
		if n.Name == mid {
			w, bias = g.InitializerFloats(n.Inputs[1]), g.InitializerFloats(n.Inputs[2])
		}
	}
	if n := prune(g); n != 1 {
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
		kernel, kbias := g.InitializerFloats(n.Inputs[1]), g.InitializerFloats(n.Inputs[2])
		place := single(g, n.Outputs[0])
		add := single(g, place.Outputs[0])
		index, constant := g.InitializerInt64s(place.Inputs[1]), g.InitializerFloats(add.Inputs[1])
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
			if idx := g.InitializerInt64s(n.Inputs[1]); len(idx) == 204 || len(idx) == 64 || len(idx) == 51 {
				places++
			}
		}
	}
	if places != 6 {
		t.Errorf("%d channel placements, want 6 (five pooled branches and the mid-end)", places)
	}
	sp, err := splitFrontEnd(m, patchFrames, melBands)
	if err != nil || sp == nil {
		t.Fatalf("split: %v, %v", sp, err)
	}
	if sp.Channels[0] != 204 || sp.Channels[1] != 204 {
		t.Fatalf("front end's outputs have %v channels, want 204 each", sp.Channels)
	}
}

// The temporal branch with a kernel of 128 frames runs as a product with a
// banded matrix (temporalAsMatMul), the two shorter ones stay Convs (the
// scores are those of the Conv within float32 rounding: adapters/inference,
// TestTemporalProductMatchesConv).
func TestTemporalAsMatMul(t *testing.T) {
	g := backboneThrough(t, foldGatherConv, pool, fullWidthToConv1D, prune).Graph
	convs := opCount(g, "Conv")
	if n := temporalAsMatMul(g, patchFrames, melBands); n != 1 {
		t.Fatalf("rewrote %d temporal branches, want 1 (kernel 128)", n)
	}
	if opCount(g, "Conv") != convs-1 || convRows(g, "model/conv2d_2/BiasAdd") != -1 {
		t.Fatalf("%d Conv left of %d, the 128-frame one among them: %v", opCount(g, "Conv"), convs, convRows(g, "model/conv2d_2/BiasAdd") != -1)
	}
	for _, n := range g.Nodes {
		if n.OpType == "MatMul" && n.Name == "model/conv2d_2/BiasAdd:0/product" {
			// Four filters of 187 frames: the three live ones and the zero one.
			if d := g.Initializer(n.Inputs[0]).Dims; d[0] != 4*patchFrames || d[1] != patchFrames {
				t.Fatalf("banded matrix %v, want [%d %d]", d, 4*patchFrames, patchFrames)
			}
		}
	}
}

// A temporal branch whose pool thins out the frames (a stride over time)
// is not a banded product of the whole patch: it stays a Conv.
func TestTemporalAsMatMulNeedsEveryFrame(t *testing.T) {
	g := backboneThrough(t, foldGatherConv, pool, fullWidthToConv1D, prune).Graph
	for _, n := range g.Nodes {
		if n.OpType == "MaxPool" && n.Inputs[0] == "model/conv2d_2/BiasAdd:0" {
			n.Attrs = slices.DeleteFunc(n.Attrs, func(a *graph.Attr) bool { return a.Name == "strides" })
			n.Attrs = append(n.Attrs, graph.IntsAttr("strides", []int64{2, 1}))
		}
	}
	if n := temporalAsMatMul(g, patchFrames, melBands); n != 0 {
		t.Fatalf("rewrote %d temporal branches, want 0", n)
	}
}
