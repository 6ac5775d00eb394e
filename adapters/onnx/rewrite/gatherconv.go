package rewrite

import (
	"slices"

	"github.com/nomarr/nomarr/adapters/onnx/graph"
)

// foldGatherConv replaces every im2col chain
//
//	Pad(x, [0,0,pb,0, 0,0,pa,0]) → Reshape [0,Tp,F] → Gather(axis 1, idx[t·K+k] = t+k)
//	→ Reshape [0,T,K,F] → Transpose [0,3,1,2] → MatMul W[K,O] → Add b[O]
//	→ Transpose [0,3,2,1]
//
// by Conv(x, W'[O,1,K,1], b, pads [pb,0,pa,0]). It returns how many it
// folded.
func foldGatherConv(g *graph.Graph) int {
	folded := 0
	for _, pad := range slices.Clone(g.Nodes) {
		if pad.OpType != "Pad" || len(pad.Inputs) < 2 || pad.Attr("mode") != nil {
			continue
		}
		if len(pad.Inputs) > 2 && pad.Inputs[2] != "" {
			if cv := g.InitializerFloats(pad.Inputs[2]); len(cv) != 1 || cv[0] != 0 {
				continue
			}
		}
		p := g.InitializerInt64s(pad.Inputs[1])
		if len(p) != 8 || p[0] != 0 || p[1] != 0 || p[3] != 0 || p[4] != 0 || p[5] != 0 || p[7] != 0 {
			continue
		}
		pb, pa := p[2], p[6]
		r0 := single(g, pad.Outputs[0])
		if r0 == nil || r0.OpType != "Reshape" || len(r0.Inputs) != 2 {
			continue
		}
		s0 := g.InitializerInt64s(r0.Inputs[1])
		if len(s0) != 3 || s0[0] != 0 {
			continue
		}
		tp, f := s0[1], s0[2]
		gather := single(g, r0.Outputs[0])
		if gather == nil || gather.OpType != "Gather" || len(gather.Inputs) != 2 || gather.Inputs[0] != r0.Outputs[0] {
			continue
		}
		if axis, _ := gather.Attr("axis").Int(); axis != 1 {
			continue
		}
		idx := g.InitializerInt64s(gather.Inputs[1])
		r1 := single(g, gather.Outputs[0])
		if r1 == nil || r1.OpType != "Reshape" || len(r1.Inputs) != 2 {
			continue
		}
		s1 := g.InitializerInt64s(r1.Inputs[1])
		if len(s1) != 4 || s1[0] != 0 || s1[3] != f {
			continue
		}
		t, k := s1[1], s1[2]
		if t+k-1 != tp || tp != t+pb+pa || int64(len(idx)) != t*k || !im2col(idx, t, k) {
			continue
		}
		tp1 := single(g, r1.Outputs[0])
		if tp1 == nil || tp1.OpType != "Transpose" || !slices.Equal(tp1.Attr("perm").Ints(), []int64{0, 3, 1, 2}) {
			continue
		}
		mm := single(g, tp1.Outputs[0])
		if mm == nil || mm.OpType != "MatMul" || len(mm.Inputs) != 2 || mm.Inputs[0] != tp1.Outputs[0] {
			continue
		}
		wt := g.Initializer(mm.Inputs[1])
		w := g.InitializerFloats(mm.Inputs[1])
		if wt == nil || w == nil || len(wt.Dims) != 2 || wt.Dims[0] != k {
			continue
		}
		o := wt.Dims[1]
		add := single(g, mm.Outputs[0])
		if add == nil || add.OpType != "Add" || len(add.Inputs) != 2 {
			continue
		}
		biasName := add.Inputs[1]
		if biasName == mm.Outputs[0] {
			biasName = add.Inputs[0]
		}
		bias := g.InitializerFloats(biasName)
		if int64(len(bias)) != o {
			continue
		}
		tp2 := single(g, add.Outputs[0])
		if tp2 == nil || tp2.OpType != "Transpose" || !slices.Equal(tp2.Attr("perm").Ints(), []int64{0, 3, 2, 1}) {
			continue
		}
		// W'[o][0][k][0] = W[k][o].
		kernel := make([]float32, o*k)
		for ki := range k {
			for oi := range o {
				kernel[oi*k+ki] = w[ki*o+oi]
			}
		}
		name := tp2.Outputs[0]
		g.Initializers = append(g.Initializers,
			graph.FloatTensor(name+"/folded_kernel", []int64{o, 1, k, 1}, kernel),
			graph.FloatTensor(name+"/folded_bias", []int64{o}, bias))
		conv := &graph.Node{
			Inputs:  []string{pad.Inputs[0], name + "/folded_kernel", name + "/folded_bias"},
			Outputs: []string{name},
			Name:    name + "/folded_conv",
			OpType:  "Conv",
			Attrs: []*graph.Attr{
				graph.IntsAttr("dilations", []int64{1, 1}),
				graph.IntsAttr("strides", []int64{1, 1}),
				graph.IntsAttr("kernel_shape", []int64{k, 1}),
				graph.IntsAttr("pads", []int64{pb, 0, pa, 0}),
				graph.IntAttr("group", 1),
			},
		}
		chain := []*graph.Node{pad, r0, gather, r1, tp1, mm, add, tp2}
		at := slices.Index(g.Nodes, tp2)
		g.Nodes[at] = conv
		g.Nodes = slices.DeleteFunc(g.Nodes, func(n *graph.Node) bool { return slices.Contains(chain, n) })
		folded++
	}
	if folded > 0 {
		g.Prune() // the chain's constants
	}
	return folded
}

// im2col reports whether idx[t·k+j] = t+j for every t < T, j < k.
func im2col(idx []int64, t, k int64) bool {
	for ti := range t {
		for j := range k {
			if idx[ti*k+j] != ti+j {
				return false
			}
		}
	}
	return true
}
