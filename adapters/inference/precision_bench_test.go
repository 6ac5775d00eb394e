//go:build cgo

package inference

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/nomarr/nomarr/adapters/audio"
	"github.com/nomarr/nomarr/adapters/features"
	"github.com/nomarr/nomarr/adapters/onnx/graph"
	"github.com/nomarr/nomarr/adapters/onnx/rewrite"
	"github.com/nomarr/nomarr/core/tags"
)

// BenchmarkInt8FrontEnd is the measurement behind not using int8: the two
// front-end convolutions (90 % of the front end's time) quantized the way
// ONNX Runtime's QDQ format does — a uint8 input over the whole range of
// normalized log-mel values, per-channel symmetric int8 weights — against
// the float graph, on the patches of 12 s of generated audio (a chord over
// noise). It reports patches/s of both and the largest change of a
// prediction (limit: 1e-3 against the reference pipeline).
func BenchmarkInt8FrontEnd(b *testing.B) {
	patches, n := benchAudioPatches(b)
	cfg := testConfig(b)
	cfg.BatchSize, cfg.CPUArena = 8, true
	float := loaded(b, cfg)
	want, err := float.Predict(patches, n)
	if err != nil {
		b.Fatal(err)
	}
	q := loaded(b, cfg)
	if q.split == nil {
		b.Fatal("backbone not split")
	}
	// The input normalization of the backbone maps log-mel values in
	// [0, 6] (louder than any test audio) into [lo, hi].
	lo, hi := inputNorm(b, q.split.sp, 0), inputNorm(b, q.split.sp, 6)
	quantizeConvs(b, q.split.sp.Front, lo, hi)
	opts, err := q.sessionOptions(ProviderCPU)
	if err != nil {
		b.Fatal(err)
	}
	defer opts.Destroy()
	q.split.front.Destroy()
	q.split.front, err = openFront(q.split.sp, q.split.sp.Front, opts)
	if err != nil {
		b.Fatal(err)
	}
	got, err := q.Predict(patches, n)
	if err != nil {
		b.Fatal(err)
	}
	d := predDiff(b, got, want)
	for _, v := range []struct {
		name string
		m    *Models
	}{{"float", float}, {"int8", q}} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := v.m.Predict(patches, n); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "patches/s")
			if v.name == "int8" {
				b.ReportMetric(d, "max-Δpred")
			}
		})
	}
}

// floatBaseline returns the patches of benchAudioPatches, the CPU
// configuration the precision benchmarks use (batch 8, arena on) and the
// float graph's predictions for the patches, which the variants are
// compared with.
func floatBaseline(b *testing.B) ([]float32, int, Config, tags.Predictions) {
	b.Helper()
	patches, n := benchAudioPatches(b)
	cfg := testConfig(b)
	cfg.BatchSize, cfg.CPUArena = 8, true
	want, err := loaded(b, cfg).Predict(patches, n)
	if err != nil {
		b.Fatal(err)
	}
	return patches, n, cfg, want
}

// benchAudioPatches decodes 12 s of a chord over noise made by ffmpeg and
// returns its patches.
func benchAudioPatches(b *testing.B) ([]float32, int) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "chord-noise.wav")
	out, err := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i",
		"sine=f=220:d=12,volume=0.3[a];sine=f=277:d=12,volume=0.3[b];sine=f=330:d=12,volume=0.3[c];anoisesrc=d=12:a=0.05[d];[a][b][c][d]amix=inputs=4",
		"-ar", "44100", path).CombinedOutput()
	if err != nil {
		b.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	samples, err := audio.Decode(context.Background(), path, audio.Options{})
	if err != nil {
		b.Fatal(err)
	}
	patches, n := features.NewExtractor().AppendPatches(nil, samples)
	return patches, n
}

// inputNorm is the backbone's input BatchNormalization applied to v.
func inputNorm(b *testing.B, sp *rewrite.FrontEnd, v float32) float32 {
	b.Helper()
	for _, n := range sp.Front.Graph.Nodes {
		if n.OpType != "BatchNormalization" || !readsInput(sp.Front.Graph, n.Inputs[0], sp.FrontInput) {
			continue
		}
		p := make([]float32, 4)
		for i := range p {
			f := sp.Front.Graph.InitializerFloats(n.Inputs[i+1])
			if len(f) != 1 {
				b.Fatalf("input normalization parameter %d has %d values", i, len(f))
			}
			p[i] = f[0]
		}
		eps, ok := n.Attr("epsilon").Float()
		if !ok {
			eps = 1e-5
		}
		gamma, beta, mean, variance := p[0], p[1], p[2], p[3]
		return (v-mean)/float32(math.Sqrt(float64(variance+eps)))*gamma + beta
	}
	b.Fatal("no input normalization in the front end")
	return 0
}

// readsInput reports whether value is the graph's input through Unsqueeze,
// Reshape and BatchNormalization only (the patches as the first Conv
// layers see them).
func readsInput(g *graph.Graph, value, input string) bool {
	for value != input {
		n := g.Producer(value)
		if n == nil || len(n.Inputs) == 0 || n.OpType != "Unsqueeze" && n.OpType != "Reshape" && n.OpType != "BatchNormalization" {
			return false
		}
		value = n.Inputs[0]
	}
	return true
}

// quantizeConvs puts every Conv of m behind QuantizeLinear/DequantizeLinear
// on its input (uint8 over [lo, hi]) and gives it DequantizeLinear(int8
// weights, one scale per output channel).
func quantizeConvs(b *testing.B, m *graph.Model, lo, hi float32) {
	b.Helper()
	g := m.Graph
	eachConv(g, func(conv *graph.Node, wt *graph.Tensor, w []float32) {
		out := int(wt.Dims[0])
		per := len(w) / out
		wq := make([]int8, len(w))
		scales := channelScales(w, out, 127)
		for i, v := range w {
			wq[i] = int8(math.Round(float64(v / scales[i/per])))
		}
		xs := (hi - lo) / 255
		name := conv.Name
		g.Initializers = append(g.Initializers,
			graph.Int8Tensor(name+"/wq", wt.Dims, wq),
			graph.FloatTensor(name+"/ws", []int64{int64(out)}, scales),
			graph.Int8Tensor(name+"/wzp", []int64{int64(out)}, make([]int8, out)),
			graph.FloatTensor(name+"/xs", nil, []float32{xs}),
			graph.Uint8Tensor(name+"/xzp", nil, []uint8{uint8(math.Round(float64(-lo / xs)))}))
		nodes := []*graph.Node{
			{Inputs: []string{conv.Inputs[0], name + "/xs", name + "/xzp"}, Outputs: []string{name + "/xq"},
				Name: name + "/quantize", OpType: "QuantizeLinear"},
			{Inputs: []string{name + "/xq", name + "/xs", name + "/xzp"}, Outputs: []string{name + "/xdq"},
				Name: name + "/dequantize", OpType: "DequantizeLinear"},
			{Inputs: []string{name + "/wq", name + "/ws", name + "/wzp"}, Outputs: []string{name + "/wdq"},
				Name: name + "/dequantize_w", OpType: "DequantizeLinear", Attrs: []*graph.Attr{graph.IntAttr("axis", 0)}},
		}
		conv.Inputs[0], conv.Inputs[1] = name+"/xdq", name+"/wdq"
		g.Nodes = slices.Insert(g.Nodes, slices.Index(g.Nodes, conv), nodes...)
	})
	g.Prune()
	if _, err := graph.Parse(m.Marshal()); err != nil {
		b.Fatal(fmt.Errorf("quantized front end: %w", err))
	}
}

// eachConv calls fn with every Conv node of g (as the graph was before fn
// added any), its weight initializer and a copy of the weights.
func eachConv(g *graph.Graph, fn func(conv *graph.Node, wt *graph.Tensor, w []float32)) {
	for _, conv := range slices.Clone(g.Nodes) {
		if conv.OpType == "Conv" {
			fn(conv, g.Initializer(conv.Inputs[1]), g.InitializerFloats(conv.Inputs[1]))
		}
	}
}

// channelScales is the symmetric quantization step of each of the out
// output channels of the weights w: the channel's largest magnitude over
// top (a zero filter, such as channel padding, gets a tiny step and stays
// zero).
func channelScales(w []float32, out int, top float32) []float32 {
	per := len(w) / out
	scales := make([]float32, out)
	for c := range out {
		m := float32(0)
		for _, v := range w[c*per : (c+1)*per] {
			m = max(m, float32(math.Abs(float64(v))))
		}
		scales[c] = max(m, 1e-12) / top
	}
	return scales
}

// BenchmarkBF16Convolutions is the measurement behind not using bfloat16
// (the format of this CPU generation's matrix units, AMX, which ONNX
// Runtime's CPU kernels do not use for a float model on x86): every
// convolution's weights and inputs rounded to bfloat16, products summed in
// float32 — what such a kernel computes — emulated in float32 graphs. It
// reports the largest change of a prediction against the float graph for
// the front end alone and for every convolution of the backbone (limit:
// 1e-3 against the reference pipeline); ns/op is the emulation's, not a
// bfloat16 kernel's.
func BenchmarkBF16Convolutions(b *testing.B) {
	patches, n, cfg, want := floatBaseline(b)
	for _, v := range []struct {
		name string
		rest bool
	}{{"front-end", false}, {"all", true}} {
		b.Run(v.name, func(b *testing.B) {
			benchEditedGraphs(b, cfg, patches, n, want, func(sp *rewrite.FrontEnd) {
				for _, g := range []*graph.Model{sp.Front, sp.StartEdge, sp.EndEdge} {
					bf16Convs(b, g)
				}
				if v.rest {
					bf16Convs(b, sp.Rest)
				}
			})
		})
	}
}

// benchEditedGraphs loads the models of cfg, lets edit change the split
// backbone's graphs, reopens them, and reports the largest change of a
// prediction of patches against want (ns/op: Predict on the edited graphs).
func benchEditedGraphs(b *testing.B, cfg Config, patches []float32, n int, want tags.Predictions, edit func(sp *rewrite.FrontEnd)) {
	b.Helper()
	m := loaded(b, cfg)
	if m.split == nil {
		b.Fatal("backbone not split")
	}
	edit(m.split.sp)
	opts, err := m.sessionOptions(ProviderCPU)
	if err != nil {
		b.Fatal(err)
	}
	defer opts.Destroy()
	sp, names := m.split.sp, m.split.names
	m.split.destroy()
	if m.split, err = openSplit(sp, names, opts); err != nil {
		b.Fatal(err)
	}
	var got tags.Predictions
	for b.Loop() {
		if got, err = m.Predict(patches, n); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(predDiff(b, got, want), "max-Δpred")
}

// bf16Convs rounds every Conv's weights of m to bfloat16 and puts its input
// through a Cast to bfloat16 and back.
func bf16Convs(b *testing.B, m *graph.Model) {
	b.Helper()
	g := m.Graph
	rounded := map[string]string{} // input → its rounded value
	eachConv(g, func(conv *graph.Node, wt *graph.Tensor, w []float32) {
		for i, v := range w {
			w[i] = toBF16(v)
		}
		g.Initializers = append(g.Initializers, graph.FloatTensor(conv.Name+"/bf16_kernel", wt.Dims, w))
		conv.Inputs[1] = conv.Name + "/bf16_kernel"
		x := conv.Inputs[0]
		if r, ok := rounded[x]; ok {
			conv.Inputs[0] = r
			return
		}
		r := x + "/bf16"
		g.Nodes = slices.Insert(g.Nodes, slices.Index(g.Nodes, conv),
			&graph.Node{Inputs: []string{x}, Outputs: []string{r + "/cast"}, Name: r + "/cast", OpType: "Cast",
				Attrs: []*graph.Attr{graph.IntAttr("to", 16)}}, // BFLOAT16
			&graph.Node{Inputs: []string{r + "/cast"}, Outputs: []string{r}, Name: r, OpType: "Cast",
				Attrs: []*graph.Attr{graph.IntAttr("to", 1)}}) // FLOAT
		rounded[x], conv.Inputs[0] = r, r
	})
	g.Prune()
}

// toBF16 rounds v to the nearest bfloat16 (ties to even), as float32.
func toBF16(v float32) float32 {
	u := math.Float32bits(v)
	u += 0x7fff + (u>>16)&1
	return math.Float32frombits(u &^ 0xffff)
}

// BenchmarkFixedPointFrontEnd is the measurement behind how many int8
// products a fixed-point front end would need: the front end's
// convolutions with inputs rounded to x bits over the range of normalized
// log-mel values (0: left in float) and weights to w bits per output
// channel (symmetric), emulated in float32 graphs. It reports the largest
// change of a prediction against the float graph (limit: 1e-3); ns/op is
// the emulation's. Two int8 pieces per operand (16 bits) need three int8
// products (high·high, high·low, low·high).
func BenchmarkFixedPointFrontEnd(b *testing.B) {
	patches, n, cfg, want := floatBaseline(b)
	for _, bits := range [][2]int{{0, 8}, {8, 8}, {16, 8}, {8, 16}, {0, 16}, {16, 16}} {
		b.Run(fmt.Sprintf("x=%d/w=%d", bits[0], bits[1]), func(b *testing.B) {
			benchEditedGraphs(b, cfg, patches, n, want, func(sp *rewrite.FrontEnd) {
				lo, hi := inputNorm(b, sp, 0), inputNorm(b, sp, 6)
				for _, g := range []*graph.Model{sp.Front, sp.StartEdge, sp.EndEdge} {
					fixedPointConvs(b, g, lo, hi, bits[0], bits[1])
				}
			})
		})
	}
}

// fixedPointConvs rounds every Conv's weights of m to wbits per output
// channel and, unless xbits is 0, its input to xbits over [lo, hi]
// (Clip, then round((x−lo)/s)·s + lo in float ops).
func fixedPointConvs(b *testing.B, m *graph.Model, lo, hi float32, xbits, wbits int) {
	b.Helper()
	g := m.Graph
	eachConv(g, func(conv *graph.Node, wt *graph.Tensor, w []float32) {
		out := int(wt.Dims[0])
		per := len(w) / out
		scales := channelScales(w, out, float32(int(1)<<(wbits-1)-1))
		for i, v := range w {
			s := float64(scales[i/per])
			w[i] = float32(math.Round(float64(v)/s) * s)
		}
		name := conv.Name
		g.Initializers = append(g.Initializers, graph.FloatTensor(name+"/fixed_kernel", wt.Dims, w))
		conv.Inputs[1] = name + "/fixed_kernel"
		if xbits == 0 {
			return
		}
		g.Initializers = append(g.Initializers,
			graph.FloatTensor(name+"/xs", nil, []float32{(hi - lo) / float32(int(1)<<xbits-1)}),
			graph.FloatTensor(name+"/xlo", nil, []float32{lo}),
			graph.FloatTensor(name+"/xhi", nil, []float32{hi}))
		step := func(op, in string, args ...string) *graph.Node {
			return &graph.Node{Inputs: append([]string{in}, args...), Outputs: []string{name + "/" + op},
				Name: name + "/" + op, OpType: op}
		}
		g.Nodes = slices.Insert(g.Nodes, slices.Index(g.Nodes, conv),
			step("Clip", conv.Inputs[0], name+"/xlo", name+"/xhi"),
			step("Sub", name+"/Clip", name+"/xlo"),
			step("Div", name+"/Sub", name+"/xs"),
			step("Round", name+"/Div"),
			step("Mul", name+"/Round", name+"/xs"),
			step("Add", name+"/Mul", name+"/xlo"))
		conv.Inputs[0] = name + "/Add"
	})
	g.Prune()
}

// BenchmarkInt8MatMul is the measurement behind not computing the front
// end with int8 products on this CPU's matrix units (ONNX Runtime's int8
// GEMM uses AMX where the CPU has it): float MatMul against
// DynamicQuantizeLinear → MatMulInteger → Cast, one thread, in
// GOP/s (2 per multiply-add). "square" (2048³) shows the int8 kernel's
// reach; "front-end" is the front end's 7×38 convolution over one patch
// hop (93 frames × 59 positions) as one GEMM with the three int8 products
// of 16-bit operands stacked (K = 2 × 266, N = 2 × 204), which must run
// 4× the float rate to gain anything.
func BenchmarkInt8MatMul(b *testing.B) {
	cfg := testConfig(b)
	if err := Init(cfg.LibraryPath); err != nil {
		b.Fatal(err)
	}
	for _, shape := range []struct {
		name    string
		m, k, n int
	}{{"square", 2048, 2048, 2048}, {"front-end", 93 * 59, 2 * 266, 2 * 204}} {
		for _, quantized := range []bool{false, true} {
			kind := "float"
			if quantized {
				kind = "int8"
			}
			b.Run(shape.name+"/"+kind, func(b *testing.B) {
				data := matMulModel(b, quantized, shape.m, shape.k, shape.n)
				opts, err := ort.NewSessionOptions()
				if err != nil {
					b.Fatal(err)
				}
				defer opts.Destroy()
				if err := opts.SetIntraOpNumThreads(1); err != nil {
					b.Fatal(err)
				}
				s, err := ort.NewDynamicAdvancedSessionWithONNXData(data, []string{"x"}, []string{"y"}, opts)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Destroy()
				x := make([]float32, shape.m*shape.k)
				for i := range x {
					x[i] = float32(i%97) / 97
				}
				in, err := ort.NewTensor(ort.NewShape(int64(shape.m), int64(shape.k)), x)
				if err != nil {
					b.Fatal(err)
				}
				defer in.Destroy()
				out, err := ort.NewEmptyTensor[float32](ort.NewShape(int64(shape.m), int64(shape.n)))
				if err != nil {
					b.Fatal(err)
				}
				defer out.Destroy()
				for b.Loop() {
					if err := s.Run([]ort.Value{in}, []ort.Value{out}); err != nil {
						b.Fatal(err)
					}
				}
				ops := 2 * float64(shape.m) * float64(shape.k) * float64(shape.n)
				b.ReportMetric(ops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
			})
		}
	}
}

// matMulModel is a model computing y = x·W for a float x of [m, k] and
// fixed random W of [k, n]: in float, or with x quantized dynamically to
// uint8 and W in int8. It borrows a head model's header (IR version and
// opset imports) and replaces its graph.
func matMulModel(b *testing.B, quantized bool, m, k, n int) []byte {
	b.Helper()
	model := headHeader(b)
	g := model.Graph
	g.DropValueInfo()
	g.Inputs = []*graph.ValueInfo{graph.FloatInput("x", []int64{int64(m), int64(k)})}
	g.Outputs = []*graph.ValueInfo{graph.FloatInput("y", []int64{int64(m), int64(n)})}
	r := rand.New(rand.NewPCG(1, 2))
	dims := []int64{int64(k), int64(n)}
	if !quantized {
		w := make([]float32, k*n)
		for i := range w {
			w[i] = r.Float32() - 0.5
		}
		g.Initializers = []*graph.Tensor{graph.FloatTensor("w", dims, w)}
		g.Nodes = []*graph.Node{{Inputs: []string{"x", "w"}, Outputs: []string{"y"}, Name: "matmul", OpType: "MatMul"}}
		return model.Marshal()
	}
	w := make([]int8, k*n)
	for i := range w {
		w[i] = int8(r.IntN(255) - 127)
	}
	g.Initializers = []*graph.Tensor{graph.Int8Tensor("w", dims, w), graph.Int8Tensor("wzp", nil, []int8{0})}
	g.Nodes = []*graph.Node{
		{Inputs: []string{"x"}, Outputs: []string{"xq", "xs", "xzp"}, Name: "quantize", OpType: "DynamicQuantizeLinear"},
		{Inputs: []string{"xq", "w", "xzp", "wzp"}, Outputs: []string{"yi"}, Name: "matmul", OpType: "MatMulInteger"},
		{Inputs: []string{"yi"}, Outputs: []string{"y"}, Name: "float", OpType: "Cast",
			Attrs: []*graph.Attr{graph.IntAttr("to", 1)}},
	}
	return model.Marshal()
}

// headHeader is a head model, parsed, for its header (IR version and
// opset imports): tests replace its graph with their own.
func headHeader(tb testing.TB) *graph.Model {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(testModels, HeadFile(tags.Heads[0])))
	if err != nil {
		tb.Fatal(err)
	}
	model, err := graph.Parse(raw)
	if err != nil {
		tb.Fatal(err)
	}
	return model
}
