package rewrite

import (
	"math"
	"slices"

	"github.com/nomarr/nomarr/adapters/onnx/graph"
)

// foldConstantInputs takes the constant channels out of the mid-end's 1-D
// convolutions. A dead filter's channel (liveFilters, by dead) is the same value at
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
func foldConstantInputs(g *graph.Graph, frames int64, dead float32) int {
	folded := 0
	memo := map[string]channels{}
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
		known, ok := channelConstants(g, conv.Inputs[0], memo, dead)
		k := known.k
		rows, in, taps := wt.Dims[0], wt.Dims[1], wt.Dims[2]
		if !ok || known.rank != 3 || int64(len(k)) != in {
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
		w := g.InitializerFloats(conv.Inputs[1])
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
			graph.Int64Tensor(out+"/varying_index", []int64{int64(len(live))}, live),
			graph.FloatTensor(out+"/varying_kernel", dims, kernel),
			graph.FloatTensor(out+"/constant_part", []int64{rows, frames}, extra))
		gather := &graph.Node{Inputs: []string{conv.Inputs[0], out + "/varying_index"}, Outputs: []string{out + "/varying"},
			Name: out + "/varying", OpType: "Gather", Attrs: []*graph.Attr{graph.IntAttr("axis", 1)}}
		add := &graph.Node{Inputs: []string{out + "/partial", out + "/constant_part"}, Outputs: []string{out},
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

// channels is what channelConstants knows of a tensor: its rank, and for
// each channel (axis 1) the value it has at every position for every
// input, or NaN when it is not known to be constant.
type channels struct {
	k    []float64
	rank int
}

// channelConstants returns what is known of the channels of value; ok is
// false when not even their number is known. Constants start at dead
// filters (a Conv's output channel whose weights, an initializer, are all
// below dead is its bias) and go through the per-channel ops that
// follow them: MaxPool, a Slice or Gather of channels, Add and Mul of
// per-channel constants ([C,1,…,1]), Relu, BatchNormalization, Squeeze
// and Unsqueeze of other axes, and Concat of channels. memo holds the
// answers by value.
func channelConstants(g *graph.Graph, value string, memo map[string]channels, dead float32) (channels, bool) {
	if c, ok := memo[value]; ok {
		return c, c.k != nil
	}
	memo[value] = channels{} // a cycle, or an answer not known yet, is "unknown"
	c := channelConstantsOf(g, g.Producer(value), memo, dead)
	memo[value] = c
	return c, c.k != nil
}

func channelConstantsOf(g *graph.Graph, n *graph.Node, memo map[string]channels, dead float32) channels {
	var none channels
	if n == nil || len(n.Outputs) != 1 || len(n.Inputs) == 0 {
		return none
	}
	in, inOK := channelConstants(g, n.Inputs[0], memo, dead)
	switch n.OpType {
	case "Conv":
		wt := g.Initializer(n.Inputs[1])
		w, bias := g.InitializerFloats(n.Inputs[1]), []float32(nil)
		if len(n.Inputs) == 3 {
			bias = g.InitializerFloats(n.Inputs[2])
		}
		if wt == nil || len(wt.Dims) < 3 || len(w) == 0 || len(bias) == 0 || int64(len(bias)) != wt.Dims[0] || len(w)%len(bias) != 0 {
			return none
		}
		live := liveFilters(w, len(bias), dead)
		k := make([]float64, len(bias))
		for c := range k {
			k[c] = float64(bias[c])
			if slices.Contains(live, c) {
				k[c] = math.NaN()
			}
		}
		return channels{k, len(wt.Dims)}
	case "MaxPool", "Relu":
		if !inOK {
			return none
		}
		k := slices.Clone(in.k)
		if n.OpType == "Relu" {
			for c, v := range k {
				if v < 0 {
					k[c] = 0
				}
			}
		}
		return channels{k, in.rank}
	case "Squeeze", "Unsqueeze":
		axes := n.Attr("axes").Ints()
		if len(n.Inputs) == 2 {
			axes = g.InitializerInt64s(n.Inputs[1])
		}
		if !inOK || len(axes) == 0 || slices.ContainsFunc(axes, func(a int64) bool { return a < 2 }) {
			return none
		}
		rank := in.rank - len(axes)
		if n.OpType == "Unsqueeze" {
			rank = in.rank + len(axes)
		}
		return channels{in.k, rank}
	case "Slice":
		starts, ends, axes := g.InitializerInt64s(n.Inputs[1]), g.InitializerInt64s(n.Inputs[2]), []int64(nil)
		if len(n.Inputs) >= 4 {
			axes = g.InitializerInt64s(n.Inputs[3])
		}
		if !inOK || len(n.Inputs) > 4 || !slices.Equal(axes, []int64{1}) || !slices.Equal(starts, []int64{0}) ||
			len(ends) != 1 || ends[0] < 0 || ends[0] > int64(len(in.k)) {
			return none
		}
		return channels{in.k[:ends[0]], in.rank}
	case "Gather":
		idx := channelIndex(g, n.Inputs[1])
		if axis, _ := n.Attr("axis").Int(); !inOK || axis != 1 || len(idx) == 0 {
			return none
		}
		k := make([]float64, len(idx))
		for c, i := range idx {
			if i < 0 || i >= int64(len(in.k)) {
				return none
			}
			k[c] = in.k[i]
		}
		return channels{k, in.rank}
	case "Add", "Mul":
		if !inOK || len(n.Inputs) != 2 || !perChannelShape(g.Initializer(n.Inputs[1]), in.rank) ||
			g.Initializer(n.Inputs[1]).Dims[0] != int64(len(in.k)) {
			return none
		}
		b := g.InitializerFloats(n.Inputs[1])
		if len(b) != len(in.k) {
			return none
		}
		k := make([]float64, len(in.k))
		for c, v := range in.k {
			if n.OpType == "Add" {
				k[c] = float64(float32(v) + b[c])
			} else {
				k[c] = float64(float32(v) * b[c])
			}
		}
		return channels{k, in.rank}
	case "BatchNormalization":
		if !inOK || len(n.Inputs) != 5 {
			return none
		}
		param := func(name string) []float32 {
			if t := g.Initializer(name); t == nil || len(t.Dims) != 1 || t.Dims[0] != int64(len(in.k)) {
				return nil
			}
			return g.InitializerFloats(name)
		}
		gamma, beta, mean, vari := param(n.Inputs[1]), param(n.Inputs[2]), param(n.Inputs[3]), param(n.Inputs[4])
		if gamma == nil || beta == nil || mean == nil || vari == nil {
			return none
		}
		eps := float32(1e-5)
		if e, ok := n.Attr("epsilon").Float(); ok {
			eps = e
		}
		k := make([]float64, len(in.k))
		for c, v := range in.k {
			scale := gamma[c] / float32(math.Sqrt(float64(vari[c]+eps)))
			k[c] = float64((float32(v)-mean[c])*scale + beta[c])
		}
		return channels{k, in.rank}
	case "Concat":
		if axis, _ := n.Attr("axis").Int(); axis != 1 {
			return none
		}
		var out channels
		for i, v := range n.Inputs {
			c, ok := channelConstants(g, v, memo, dead)
			if !ok || i > 0 && c.rank != out.rank {
				return none
			}
			out.k, out.rank = append(out.k, c.k...), c.rank
		}
		return out
	}
	return none
}
