//go:build cgo

package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nomarr/nomarr/adapters/gpu/onnxgraph"
	ort "github.com/yalue/onnxruntime_go"
)

// constantInputsModel is x [1,2,T] → Conv1D A (20 filters, 16 of them
// dead, with biases of both signs) → Relu → BatchNormalization → Conv1D B
// (5 filters over A's 20 channels) → y [1,5,T], with weights and
// normalization far from zero, so that the dead channels' constants and
// the taps at the patch's edges show in y. It borrows a head model's
// header (IR version, opset imports).
func constantInputsModel(t *testing.T, frames int64) *onnxgraph.Model {
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
	g.Inputs = []*onnxgraph.ValueInfo{onnxgraph.FloatInput("x", []int64{1, in, frames})}
	g.Outputs = []*onnxgraph.ValueInfo{onnxgraph.FloatInput("y", []int64{1, out, frames})}
	g.Initializers = []*onnxgraph.Tensor{
		onnxgraph.FloatTensor("wa", []int64{mid, in, taps}, wa),
		onnxgraph.FloatTensor("ba", []int64{mid}, uniform(mid, -1, 1)),
		onnxgraph.FloatTensor("gamma", []int64{mid}, uniform(mid, -2, 2)),
		onnxgraph.FloatTensor("beta", []int64{mid}, uniform(mid, -1, 1)),
		onnxgraph.FloatTensor("mean", []int64{mid}, uniform(mid, -0.5, 0.5)),
		onnxgraph.FloatTensor("var", []int64{mid}, uniform(mid, 0.2, 2)),
		onnxgraph.FloatTensor("wb", []int64{out, mid, taps}, uniform(out*mid*taps, -1, 1)),
		onnxgraph.FloatTensor("bb", []int64{out}, uniform(out, -1, 1)),
	}
	conv := func(x, w, b, y string) *onnxgraph.Node {
		return &onnxgraph.Node{Inputs: []string{x, w, b}, Outputs: []string{y}, Name: y, OpType: "Conv",
			Attrs: []*onnxgraph.Attr{onnxgraph.IntsAttr("kernel_shape", []int64{taps}), onnxgraph.IntsAttr("pads", []int64{1, 1})}}
	}
	g.Nodes = []*onnxgraph.Node{
		conv("x", "wa", "ba", "a"),
		{Inputs: []string{"a"}, Outputs: []string{"r"}, Name: "r", OpType: "Relu"},
		{Inputs: []string{"r", "gamma", "beta", "mean", "var"}, Outputs: []string{"n"}, Name: "n", OpType: "BatchNormalization",
			Attrs: []*onnxgraph.Attr{onnxgraph.FloatAttr("epsilon", 0.01)}},
		conv("n", "wb", "bb", "y"),
	}
	return model
}

// runModel runs a model of one input x and one output y on the CPU.
func runModel(t *testing.T, data []byte, x []float32, xShape, yShape []int64) []float32 {
	t.Helper()
	opts, err := ort.NewSessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	defer opts.Destroy()
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(data, []string{"x"}, []string{"y"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	in, err := ort.NewTensor(ort.NewShape(xShape...), x)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Destroy()
	out, err := ort.NewEmptyTensor[float32](ort.NewShape(yShape...))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Destroy()
	if err := s.Run([]ort.Value{in}, []ort.Value{out}); err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), out.GetData()...)
}

// The constant channels of dead filters, taken out of the next 1-D
// convolution and added back as a constant of the patch, give that
// convolution's output within float32 rounding: the constants through Relu
// and BatchNormalization, and the taps that read the zero padding at the
// patch's edges.
func TestFoldConstantInputs(t *testing.T) {
	cfg := testConfig(t)
	if err := Init(cfg.LibraryPath); err != nil {
		t.Fatal(err)
	}
	const frames = 12
	plain := constantInputsModel(t, frames)
	folded := constantInputsModel(t, frames)
	if n := foldConstantInputs(folded.Graph, frames); n != 1 {
		t.Fatalf("folded %d convolutions, want 1", n)
	}
	if k := floats(folded.Graph, "y/varying_kernel"); len(k) != 5*4*3 {
		t.Fatalf("folded kernel has %d weights, want 5 filters × 4 varying channels × 3 taps", len(k))
	}
	x := make([]float32, 2*frames)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	shape, yShape := []int64{1, 2, frames}, []int64{1, 5, frames}
	want := runModel(t, plain.Marshal(), x, shape, yShape)
	got := runModel(t, folded.Marshal(), x, shape, yShape)
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("y[%d] = %g folded, %g as built (difference %.3g)", i, got[i], want[i], d)
		}
	}
}

// Channels are taken for constants only through ops known to act per
// channel: an Add whose constant is [C] lines up with the frames, not the
// channels, of a [n,C,T] tensor (with T = C it even broadcasts).
func TestFoldConstantInputsRefusesOtherShapes(t *testing.T) {
	const frames = 20 // = the 20 channels of A: a [20] Add broadcasts
	for name, change := range map[string]func(g *onnxgraph.Graph){
		"add of [C]": func(g *onnxgraph.Graph) {
			g.Initializers = append(g.Initializers, onnxgraph.FloatTensor("c", []int64{20}, make([]float32, 20)))
			g.Nodes[3].Inputs[0] = "nc"
			g.Nodes = append(g.Nodes[:3], append([]*onnxgraph.Node{{Inputs: []string{"n", "c"}, Outputs: []string{"nc"}, Name: "nc", OpType: "Add"}}, g.Nodes[3:]...)...)
		},
	} {
		m := constantInputsModel(t, frames)
		if n := foldConstantInputs(m.Graph, frames); n != 1 {
			t.Fatalf("%s: the model as built: folded %d, want 1", name, n)
		}
		m = constantInputsModel(t, frames)
		change(m.Graph)
		if n := foldConstantInputs(m.Graph, frames); n != 0 {
			t.Errorf("%s: folded %d convolutions, want 0", name, n)
		}
	}
}
