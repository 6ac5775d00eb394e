package rewrite

import (
	"slices"

	"github.com/nomarr/nomarr/adapters/onnx/graph"
)

// fullWidthToConv1D rewrites each Conv that spans the whole width of a
// one-channel image — input Reshape(x, [-1, 1, T, W]), kernel [O, 1, K, W],
// pads [p, 0, q, 0], stride and dilation 1, so its output is [n, O, T, 1] —
// into the 1-D convolution it is, over W channels:
//
//	Squeeze(axis 1) → Transpose [0,2,1] → Conv(kernel [O, W, K], pads [p, q]) → Unsqueeze(axis 3)
//
// The exporter's mid-end layers have this form; ONNX Runtime runs a
// one-channel NCHWc convolution with a 561-wide kernel at half the rate of
// the equivalent GEMM. When x is itself Unsqueeze(y, 3) → Transpose
// [0,2,1,3] of some y [n, W, T] (the concatenated front end), y is used
// directly and no transpose is added. It returns how many it rewrote.
func fullWidthToConv1D(g *graph.Graph) int {
	rewritten := 0
	for _, conv := range slices.Clone(g.Nodes) {
		if conv.OpType != "Conv" || len(conv.Inputs) != 3 || len(conv.Outputs) != 1 {
			continue
		}
		wt := g.Initializer(conv.Inputs[1])
		w := g.InitializerFloats(conv.Inputs[1])
		bias := g.InitializerFloats(conv.Inputs[2])
		ks := conv.Attr("kernel_shape").Ints()
		pads := conv.Attr("pads").Ints()
		if wt == nil || w == nil || len(wt.Dims) != 4 || wt.Dims[1] != 1 || len(ks) != 2 || len(pads) != 4 ||
			pads[1] != 0 || pads[3] != 0 || int64(len(bias)) != wt.Dims[0] || ks[0] != wt.Dims[2] || ks[1] != wt.Dims[3] {
			continue
		}
		if !plainConv2D(conv) {
			continue
		}
		reshape := g.Producer(conv.Inputs[0])
		if reshape == nil || reshape.OpType != "Reshape" || len(reshape.Inputs) != 2 {
			continue
		}
		shape := g.InitializerInt64s(reshape.Inputs[1])
		o, k, width := wt.Dims[0], wt.Dims[2], wt.Dims[3]
		if len(shape) != 4 || shape[1] != 1 || shape[3] != width || shape[2] <= 0 {
			continue
		}
		name := conv.Outputs[0]
		// kernel'[o][c][j] = kernel[o][0][j][c]
		kernel := make([]float32, len(w))
		for oi := range o {
			for j := range k {
				for c := range width {
					kernel[(oi*width+c)*k+j] = w[(oi*k+j)*width+c]
				}
			}
		}
		g.Initializers = append(g.Initializers,
			graph.FloatTensor(name+"/conv1d_kernel", []int64{o, width, k}, kernel),
			graph.Int64Tensor(name+"/axis1", []int64{1}, []int64{1}),
			graph.Int64Tensor(name+"/axis3", []int64{1}, []int64{3}))
		var chain []*graph.Node
		in := channelsFirst(g, reshape.Inputs[0])
		if in == "" {
			chain = append(chain,
				&graph.Node{Inputs: []string{conv.Inputs[0], name + "/axis1"}, Outputs: []string{name + "/rows"},
					Name: name + "/squeeze", OpType: "Squeeze"},
				&graph.Node{Inputs: []string{name + "/rows"}, Outputs: []string{name + "/channels"},
					Name: name + "/transpose", OpType: "Transpose",
					Attrs: []*graph.Attr{graph.IntsAttr("perm", []int64{0, 2, 1})}})
			in = name + "/channels"
		}
		chain = append(chain,
			&graph.Node{Inputs: []string{in, name + "/conv1d_kernel", conv.Inputs[2]}, Outputs: []string{name + "/conv1d"},
				Name: name + "/conv1d", OpType: "Conv", Attrs: []*graph.Attr{
					graph.IntsAttr("dilations", []int64{1}),
					graph.IntsAttr("strides", []int64{1}),
					graph.IntsAttr("kernel_shape", []int64{k}),
					graph.IntsAttr("pads", []int64{pads[0], pads[2]}),
					graph.IntAttr("group", 1),
				}},
			&graph.Node{Inputs: []string{name + "/conv1d", name + "/axis3"}, Outputs: []string{name},
				Name: name + "/unsqueeze", OpType: "Unsqueeze"})
		at := slices.Index(g.Nodes, conv)
		g.Nodes = slices.Delete(g.Nodes, at, at+1)
		g.Nodes = slices.Insert(g.Nodes, at, chain...)
		rewritten++
	}
	if rewritten > 0 {
		g.Prune()
	}
	return rewritten
}

// channelsFirst returns y when x = Transpose(Unsqueeze(y, [3]), [0,2,1,3])
// and y is a Concat along axis 1 — channels first, [n, W, T], as the
// Reshape of x to [-1, 1, T, W] then reads it; "" when x has another form.
// (A y of another width would make the Conv fail when the session opens,
// not compute something else.)
func channelsFirst(g *graph.Graph, x string) string {
	tp := g.Producer(x)
	if tp == nil || tp.OpType != "Transpose" || !slices.Equal(tp.Attr("perm").Ints(), []int64{0, 2, 1, 3}) {
		return ""
	}
	un := g.Producer(tp.Inputs[0])
	if un == nil || un.OpType != "Unsqueeze" || len(un.Inputs) != 2 || !slices.Equal(g.InitializerInt64s(un.Inputs[1]), []int64{3}) {
		return ""
	}
	cat := g.Producer(un.Inputs[0])
	if cat == nil || cat.OpType != "Concat" {
		return ""
	}
	if axis, ok := cat.Attr("axis").Int(); !ok || axis != 1 {
		return ""
	}
	return un.Inputs[0]
}
