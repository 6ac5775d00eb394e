package gpu

import (
	"math"
	"slices"

	"github.com/nomarr/nomarr/adapters/gpu/onnxgraph"
)

// foldConstants turns foldConstantInputs on (tests compare without).
var foldConstants = true

// foldConstantInputs takes the constant channels out of the mid-end's 1-D
// convolutions. A dead filter's channel (liveFilters) is the same value at
// every frame of every patch (its bias through the per-channel ops after
// it: channelConstants), and the front end ends in 496 of them out of the
// 561 channels the mid-end's first convolution reads. Their contribution
// to output o at frame t is a constant of the patch length T:
//
//	E[o,t] = Σ_c k_c · Σ_j W[o,c,j]   over the constant channels c and the
//	                                  taps j that read a frame inside the
//	                                  patch (the zero padding reads 0)
//
// so the Conv reads only the other channels (a Gather) and E is added to
// its output. Each output is the same sum in another order (E summed in
// float64): equal within float32 rounding. It applies only to 1-D Convs
// with at least minPruned constant input channels, in a graph whose time
// axis is frames long (the patch; not the front graph, which has none of
// these), and returns how many it rewrote.
func foldConstantInputs(g *onnxgraph.Graph, frames int64) int {
	folded := 0
	memo := map[string][]float64{}
	for _, conv := range slices.Clone(g.Nodes) {
		if conv.OpType != "Conv" || len(conv.Inputs) != 3 || len(conv.Outputs) != 1 {
			continue
		}
		if grp, ok := conv.Attr("group").Int(); ok && grp != 1 {
			continue
		}
		wt := g.Initializer(conv.Inputs[1])
		ks, pads := conv.Attr("kernel_shape").Ints(), conv.Attr("pads").Ints()
		if wt == nil || len(wt.Dims) != 3 || len(ks) != 1 || ks[0] != wt.Dims[2] || len(pads) != 2 || pads[0]+pads[1] != ks[0]-1 ||
			conv.Attr("auto_pad") != nil {
			continue
		}
		if s := conv.Attr("strides").Ints(); s != nil && !slices.Equal(s, []int64{1}) {
			continue
		}
		if d := conv.Attr("dilations").Ints(); d != nil && !slices.Equal(d, []int64{1}) {
			continue
		}
		k := channelConstants(g, conv.Inputs[0], memo)
		rows, in, taps := wt.Dims[0], wt.Dims[1], wt.Dims[2]
		if int64(len(k)) != in {
			continue
		}
		var live []int64
		for c, v := range k {
			if math.IsNaN(v) {
				live = append(live, int64(c))
			}
		}
		if len(live) == 0 || in-int64(len(live)) < minPruned {
			continue
		}
		w := floats(g, conv.Inputs[1])
		kernel := make([]float32, 0, rows*int64(len(live))*taps)
		extra := make([]float32, rows*frames)
		for o := range rows {
			for _, c := range live {
				kernel = append(kernel, w[(o*in+c)*taps:(o*in+c+1)*taps]...)
			}
			for t := range frames {
				sum := 0.0
				for c, v := range k {
					if math.IsNaN(v) {
						continue
					}
					for j := range taps {
						if s := t + j - pads[0]; s >= 0 && s < frames {
							sum += v * float64(w[(o*in+int64(c))*taps+j])
						}
					}
				}
				extra[o*frames+t] = float32(sum)
			}
		}
		out := conv.Outputs[0]
		dims := []int64{rows, int64(len(live)), taps}
		g.Initializers = append(g.Initializers,
			onnxgraph.Int64Tensor(out+"/varying_index", []int64{int64(len(live))}, live),
			onnxgraph.FloatTensor(out+"/varying_kernel", dims, kernel),
			onnxgraph.FloatTensor(out+"/constant_part", []int64{rows, frames}, extra))
		gather := &onnxgraph.Node{Inputs: []string{conv.Inputs[0], out + "/varying_index"}, Outputs: []string{out + "/varying"},
			Name: out + "/varying", OpType: "Gather", Attrs: []*onnxgraph.Attr{onnxgraph.IntAttr("axis", 1)}}
		add := &onnxgraph.Node{Inputs: []string{out + "/partial", out + "/constant_part"}, Outputs: []string{out},
			Name: out + "/constant_part_add", OpType: "Add"}
		conv.Inputs[0], conv.Inputs[1] = out+"/varying", out+"/varying_kernel"
		conv.Outputs[0] = out + "/partial"
		at := slices.Index(g.Nodes, conv)
		g.Nodes = slices.Insert(g.Nodes, at+1, add)
		g.Nodes = slices.Insert(g.Nodes, at, gather)
		folded++
	}
	if folded > 0 {
		g.Prune()
	}
	return folded
}

// channelConstants returns, for each channel (axis 1) of value, the value
// it has at every position for every input, or NaN when it is not known to
// be constant; nil when not even the channels are known. Constants start
// at dead filters (a Conv's output channel whose weights are all below
// deadWeight is its bias) and go through the per-channel ops that follow
// them: MaxPool, a Slice or Gather of channels, Add and Mul of per-channel
// constants, Relu, BatchNormalization, Squeeze and Unsqueeze of other axes,
// and Concat of channels. memo holds the answers by value.
func channelConstants(g *onnxgraph.Graph, value string, memo map[string][]float64) []float64 {
	if k, ok := memo[value]; ok {
		return k
	}
	memo[value] = nil // a cycle, or an answer not known yet, is "unknown"
	k := channelConstantsOf(g, g.Producer(value), memo)
	memo[value] = k
	return k
}

func channelConstantsOf(g *onnxgraph.Graph, n *onnxgraph.Node, memo map[string][]float64) []float64 {
	if n == nil || len(n.Outputs) != 1 || len(n.Inputs) == 0 {
		return nil
	}
	perChannel := func(name string, channels int) []float32 {
		t := g.Initializer(name)
		if t == nil || len(t.Dims) == 0 || t.Dims[0] != int64(channels) || t.Len() != channels {
			return nil
		}
		return floats(g, name)
	}
	in := func() []float64 { return channelConstants(g, n.Inputs[0], memo) }
	switch n.OpType {
	case "Conv":
		w, bias := floats(g, n.Inputs[1]), []float32(nil)
		if len(n.Inputs) == 3 {
			bias = floats(g, n.Inputs[2])
		}
		if len(bias) == 0 || len(w)%len(bias) != 0 {
			return nil
		}
		live := liveFilters(w, len(bias))
		k := make([]float64, len(bias))
		for c := range k {
			k[c] = float64(bias[c])
			if slices.Contains(live, c) {
				k[c] = math.NaN()
			}
		}
		return k
	case "MaxPool", "Relu":
		k := slices.Clone(in())
		if n.OpType == "Relu" {
			for c, v := range k {
				if v < 0 {
					k[c] = 0
				}
			}
		}
		return k
	case "Squeeze", "Unsqueeze":
		axes := n.Attr("axes").Ints()
		if len(n.Inputs) == 2 {
			axes = ints(g, n.Inputs[1])
		}
		if len(axes) == 0 || slices.ContainsFunc(axes, func(a int64) bool { return a < 2 }) {
			return nil
		}
		return in()
	case "Slice":
		k := in()
		starts, ends, axes := ints(g, n.Inputs[1]), ints(g, n.Inputs[2]), []int64(nil)
		if len(n.Inputs) >= 4 {
			axes = ints(g, n.Inputs[3])
		}
		if k == nil || len(n.Inputs) > 4 || !slices.Equal(axes, []int64{1}) || !slices.Equal(starts, []int64{0}) ||
			len(ends) != 1 || ends[0] < 0 || ends[0] > int64(len(k)) {
			return nil
		}
		return k[:ends[0]]
	case "Gather":
		k := in()
		idx := ints(g, n.Inputs[1])
		if axis, _ := n.Attr("axis").Int(); k == nil || axis != 1 || len(idx) == 0 {
			return nil
		}
		out := make([]float64, len(idx))
		for c, i := range idx {
			if i < 0 || i >= int64(len(k)) {
				return nil
			}
			out[c] = k[i]
		}
		return out
	case "Add", "Mul":
		k := in()
		if k == nil || len(n.Inputs) != 2 {
			return nil
		}
		b := perChannel(n.Inputs[1], len(k))
		if b == nil {
			return nil
		}
		out := make([]float64, len(k))
		for c, v := range k {
			if n.OpType == "Add" {
				out[c] = float64(float32(v) + b[c])
			} else {
				out[c] = float64(float32(v) * b[c])
			}
		}
		return out
	case "BatchNormalization":
		k := in()
		if k == nil || len(n.Inputs) != 5 {
			return nil
		}
		gamma, beta, mean, vari := perChannel(n.Inputs[1], len(k)), perChannel(n.Inputs[2], len(k)),
			perChannel(n.Inputs[3], len(k)), perChannel(n.Inputs[4], len(k))
		if gamma == nil || beta == nil || mean == nil || vari == nil {
			return nil
		}
		eps := float32(1e-5)
		if e, ok := n.Attr("epsilon").Float(); ok {
			eps = e
		}
		out := make([]float64, len(k))
		for c, v := range k {
			scale := gamma[c] / float32(math.Sqrt(float64(vari[c]+eps)))
			out[c] = float64((float32(v)-mean[c])*scale + beta[c])
		}
		return out
	case "Concat":
		if axis, _ := n.Attr("axis").Int(); axis != 1 {
			return nil
		}
		var out []float64
		for _, v := range n.Inputs {
			k := channelConstants(g, v, memo)
			if k == nil {
				return nil
			}
			out = append(out, k...)
		}
		return out
	}
	return nil
}
