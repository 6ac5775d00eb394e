package rewrite

import (
	"math/rand/v2"
	"testing"

	"github.com/nomarr/nomarr/adapters/onnx/graph"
)

// constantInputsModel is x [1,2,T] → Conv1D A (20 filters, 16 of them
// dead, with biases of both signs) → Relu → BatchNormalization → Conv1D B
// (5 filters over A's 20 channels) → y [1,5,T], with weights and
// normalization far from zero, so that the dead channels' constants and
// the taps at the patch's edges show in y. It borrows a head model's
// header (IR version, opset imports).
func constantInputsModel(t *testing.T, frames int64) *graph.Model {
	t.Helper()
	model := headHeader(t)
	r := rand.New(rand.NewPCG(3, 4))
	uniform := func(n int, lo, hi float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = lo + (hi-lo)*r.Float32()
		}
		return v
	}
	const in, mid, out, taps = 2, 20, 5, 3
	wa := uniform(mid*in*taps, -1, 1)
	for c := 4; c < mid; c++ { // dead: weights of 1e-30 or 0
		for i := c * in * taps; i < (c+1)*in*taps; i++ {
			wa[i] *= 1e-30 * float32(c%2)
		}
	}
	g := model.Graph
	g.DropValueInfo()
	g.Inputs = []*graph.ValueInfo{graph.FloatInput("x", []int64{1, in, frames})}
	g.Outputs = []*graph.ValueInfo{graph.FloatInput("y", []int64{1, out, frames})}
	g.Initializers = []*graph.Tensor{
		graph.FloatTensor("wa", []int64{mid, in, taps}, wa),
		graph.FloatTensor("ba", []int64{mid}, uniform(mid, -1, 1)),
		graph.FloatTensor("gamma", []int64{mid}, uniform(mid, -2, 2)),
		graph.FloatTensor("beta", []int64{mid}, uniform(mid, -1, 1)),
		graph.FloatTensor("mean", []int64{mid}, uniform(mid, -0.5, 0.5)),
		graph.FloatTensor("var", []int64{mid}, uniform(mid, 0.2, 2)),
		graph.FloatTensor("wb", []int64{out, mid, taps}, uniform(out*mid*taps, -1, 1)),
		graph.FloatTensor("bb", []int64{out}, uniform(out, -1, 1)),
	}
	conv := func(x, w, b, y string) *graph.Node {
		return &graph.Node{Inputs: []string{x, w, b}, Outputs: []string{y}, Name: y, OpType: "Conv",
			Attrs: []*graph.Attr{graph.IntsAttr("kernel_shape", []int64{taps}), graph.IntsAttr("pads", []int64{1, 1})}}
	}
	g.Nodes = []*graph.Node{
		conv("x", "wa", "ba", "a"),
		{Inputs: []string{"a"}, Outputs: []string{"r"}, Name: "r", OpType: "Relu"},
		{Inputs: []string{"r", "gamma", "beta", "mean", "var"}, Outputs: []string{"n"}, Name: "n", OpType: "BatchNormalization",
			Attrs: []*graph.Attr{graph.FloatAttr("epsilon", 0.01)}},
		conv("n", "wb", "bb", "y"),
	}
	return model
}

// Channels are taken for constants only through ops known to act per
// channel: an Add whose constant is [C] lines up with the frames, not the
// channels, of a [n,C,T] tensor (with T = C it even broadcasts).
func TestFoldConstantInputsRefusesOtherShapes(t *testing.T) {
	const frames = 20 // = the 20 channels of A: a [20] Add broadcasts
	for name, change := range map[string]func(g *graph.Graph){
		"add of [C]": func(g *graph.Graph) {
			g.Initializers = append(g.Initializers, graph.FloatTensor("c", []int64{20}, make([]float32, 20)))
			g.Nodes[3].Inputs[0] = "nc"
			g.Nodes = append(g.Nodes[:3], append([]*graph.Node{{Inputs: []string{"n", "c"}, Outputs: []string{"nc"}, Name: "nc", OpType: "Add"}}, g.Nodes[3:]...)...)
		},
	} {
		m := constantInputsModel(t, frames)
		if n := foldConstantInputs(m.Graph, frames, deadWeight); n != 1 {
			t.Fatalf("%s: the model as built: folded %d, want 1", name, n)
		}
		m = constantInputsModel(t, frames)
		change(m.Graph)
		if n := foldConstantInputs(m.Graph, frames, deadWeight); n != 0 {
			t.Errorf("%s: folded %d convolutions, want 0", name, n)
		}
	}
}

// headHeader is a head model, parsed, for its header (IR version and
// opset imports): tests replace its graph with their own.
func headHeader(tb testing.TB) *graph.Model {
	tb.Helper()
	model, err := graph.Parse(readModel(tb, headFile))
	if err != nil {
		tb.Fatal(err)
	}
	return model
}
