package rewrite

import (
	"slices"

	"github.com/nomarr/nomarr/adapters/onnx/graph"
)

// temporalAsMatMul rewrites a temporal branch whose kernel spans at least
// half the patch: a Conv of one input channel with a kernel over time only
// (W[O,1,K,1], K ≥ frames/2) on the patch [n,1,T,F] (T = frames), followed
// by a MaxPool over all F bands. ONNX Runtime's CPU kernel for such a Conv
// goes through the patch once per block of output filters and per tap,
// whatever the number of filters: the branch with three live filters
// (pruneDeadFilters) cost as much as sixteen, at a fraction of the CPU's
// speed. With a patch of fixed length the convolution is a product with a
// banded matrix, Toe[r·T+t, s] = W[r, s−t+pads_before] inside the kernel and
// 0 outside (the zero padding), which a matrix product runs at full speed:
//
//	x [n,1,T,F] → Reshape [n,T,F] → MatMul(Toe [R·T,T]) [n,R·T,F]
//	→ ReduceMax over F [n,R·T,1] → Reshape [n,R,T,1] → Add(bias [R,1,1])
//
// which is the MaxPool's output for the first R filters, those its consumer
// reads (the live ones and the zero filter after pruning, or the filters
// before the channel padding): each output is the sum of the same products
// (and zeros), and the bias is added after the max, exactly (rounding is
// monotonic, so max(z+b) = max(z)+b). The product does T/K times the useful
// work, at most twice with K ≥ T/2; shorter kernels stay Convs. It returns
// how many branches it rewrote. The ReduceMax it adds names its axes as an
// attribute, as opsets before 18 have it (the backbone's is 13).
func temporalAsMatMul(g *graph.Graph, frames, bands int64) int {
	rewritten := 0
	for _, conv := range slices.Clone(g.Nodes) {
		if conv.OpType != "Conv" || len(conv.Inputs) != 3 || !plainConv2D(conv) {
			continue
		}
		wt := g.Initializer(conv.Inputs[1])
		ks, pads := conv.Attr("kernel_shape").Ints(), conv.Attr("pads").Ints()
		if wt == nil || len(wt.Dims) != 4 || wt.Dims[1] != 1 || wt.Dims[3] != 1 || 2*wt.Dims[2] < frames || wt.Dims[2] > frames ||
			!slices.Equal(ks, []int64{wt.Dims[2], 1}) || len(pads) != 4 || pads[1] != 0 || pads[3] != 0 ||
			pads[0]+pads[2] != wt.Dims[2]-1 {
			continue // not a "same" convolution over time of a patch
		}
		pool := single(g, conv.Outputs[0])
		if pool == nil || pool.OpType != "MaxPool" || len(pool.Outputs) != 1 || pool.Attr("pads") != nil ||
			pool.Attr("auto_pad") != nil || pool.Attr("dilations") != nil ||
			!slices.Equal(pool.Attr("kernel_shape").Ints(), []int64{1, bands}) {
			continue
		}
		if st := pool.Attr("strides").Ints(); st != nil && (len(st) != 2 || st[0] != 1) {
			continue // a pool that thins out the frames
		}
		w, bias := g.InitializerFloats(conv.Inputs[1]), g.InitializerFloats(conv.Inputs[2])
		rows, k, before := int64(len(bias)), wt.Dims[2], pads[0]
		if rows != wt.Dims[0] || int64(len(w)) != rows*k {
			continue
		}
		used := usedChannels(g, pool.Outputs[0], rows)
		toe := make([]float32, used*frames*frames)
		for r := range used {
			for t := range frames {
				for s := range frames {
					if j := s - t + before; j >= 0 && j < k {
						toe[(r*frames+t)*frames+s] = w[r*k+j]
					}
				}
			}
		}
		v := conv.Outputs[0]
		g.Initializers = append(g.Initializers,
			graph.Int64Tensor(v+"/frames_shape", []int64{3}, []int64{0, frames, bands}),
			graph.FloatTensor(v+"/banded", []int64{used * frames, frames}, toe),
			graph.Int64Tensor(v+"/by_filter_shape", []int64{4}, []int64{0, used, frames, 1}),
			graph.FloatTensor(v+"/max_bias", []int64{used, 1, 1}, bias[:used]))
		nodes := []*graph.Node{
			{Inputs: []string{conv.Inputs[0], v + "/frames_shape"}, Outputs: []string{v + "/frames"}, Name: v + "/frames", OpType: "Reshape"},
			{Inputs: []string{v + "/banded", v + "/frames"}, Outputs: []string{v + "/product"}, Name: v + "/product", OpType: "MatMul"},
			{Inputs: []string{v + "/product"}, Outputs: []string{v + "/max"}, Name: v + "/max", OpType: "ReduceMax",
				Attrs: []*graph.Attr{graph.IntsAttr("axes", []int64{2}), graph.IntAttr("keepdims", 1)}},
			{Inputs: []string{v + "/max", v + "/by_filter_shape"}, Outputs: []string{v + "/by_filter"}, Name: v + "/by_filter", OpType: "Reshape"},
			{Inputs: []string{v + "/by_filter", v + "/max_bias"}, Outputs: []string{pool.Outputs[0]}, Name: v + "/max_bias", OpType: "Add"},
		}
		at := slices.Index(g.Nodes, conv)
		g.Nodes = slices.DeleteFunc(g.Nodes, func(n *graph.Node) bool { return n == conv || n == pool })
		g.Nodes = slices.Insert(g.Nodes, at, nodes...)
		rewritten++
	}
	if rewritten > 0 {
		g.Prune()
	}
	return rewritten
}

// usedChannels is how many of the first channels of value (of rows) its
// consumer reads: those its Gather of channels indexes, or its Slice of the
// first channels keeps; all rows otherwise.
func usedChannels(g *graph.Graph, value string, rows int64) int64 {
	c := single(g, value)
	switch {
	case c == nil:
	case c.OpType == "Gather" && len(c.Inputs) == 2:
		if axis, _ := c.Attr("axis").Int(); axis == 1 {
			if idx := channelIndex(g, c.Inputs[1]); len(idx) > 0 && !slices.ContainsFunc(idx, func(i int64) bool { return i < 0 || i >= rows }) {
				return slices.Max(idx) + 1
			}
		}
	case c.OpType == "Slice" && len(c.Inputs) == 4:
		starts, ends, axes := g.InitializerInt64s(c.Inputs[1]), g.InitializerInt64s(c.Inputs[2]), g.InitializerInt64s(c.Inputs[3])
		if slices.Equal(starts, []int64{0}) && slices.Equal(axes, []int64{1}) && len(ends) == 1 && ends[0] > 0 && ends[0] <= rows {
			return ends[0]
		}
	}
	return rows
}
