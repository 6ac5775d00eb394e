package rewrite

import (
	"slices"

	"github.com/nomarr/nomarr/adapters/onnx/graph"
)

// poolBeforeNorm rewrites Conv → Relu → BatchNormalization → MaxPool so
// that the normalization runs on the pooled values: with a_c the scale of
// channel c,
//
//	max_f(a_c·relu(z_f) + b_c) = a_c·relu(max_f z_f) + b_c       (a_c ≥ 0)
//	max_f(a_c·relu(z_f) + b_c) = a_c·relu(−max_f(−z_f)) + b_c    (a_c < 0)
//
// (relu and x ↦ a·x+b are monotonic, and rounding to nearest is monotonic
// and symmetric, so both hold exactly in floating point). The Conv's kernel
// and bias of the negative channels are negated (−z exactly), its channels
// are padded with zero filters to a multiple of channelBlock, and the chain
// becomes Conv → MaxPool → Slice (the padding off, when padded) → Mul(sign)
// (when a scale is negative) → Relu → BatchNormalization, all but the Conv
// on pooled values. The Conv computes the live filters only (liveFilters,
// by dead). It returns how many chains it rewrote.
func poolBeforeNorm(g *graph.Graph, dead float32) int {
	rewritten := 0
	for _, bn := range slices.Clone(g.Nodes) {
		if bn.OpType != "BatchNormalization" || len(bn.Inputs) != 5 || len(bn.Outputs) != 1 {
			continue
		}
		pool := single(g, bn.Outputs[0])
		if pool == nil || pool.OpType != "MaxPool" || len(pool.Outputs) != 1 || pool.Attr("pads") != nil ||
			pool.Attr("auto_pad") != nil || pool.Attr("dilations") != nil {
			continue
		}
		relu := g.Producer(bn.Inputs[0])
		if relu == nil || relu.OpType != "Relu" || single(g, relu.Outputs[0]) != bn {
			continue
		}
		conv := g.Producer(relu.Inputs[0])
		if conv == nil || conv.OpType != "Conv" || len(conv.Inputs) != 3 || single(g, conv.Outputs[0]) != relu {
			continue
		}
		gamma := g.InitializerFloats(bn.Inputs[1])
		wt := g.Initializer(conv.Inputs[1])
		w, bias := g.InitializerFloats(conv.Inputs[1]), g.InitializerFloats(conv.Inputs[2])
		if len(gamma) == 0 || wt == nil || len(wt.Dims) == 0 || wt.Dims[0] != int64(len(gamma)) ||
			len(bias) != len(gamma) || len(w)%len(gamma) != 0 {
			continue
		}
		// Conv' → MaxPool → [Slice | Gather → Add] → [Mul(sign)] → Relu → BN.
		channels := len(gamma)
		per := len(w) / channels
		sign := make([]float32, channels)
		negative := false
		for c, a := range gamma {
			sign[c] = 1
			if a < 0 {
				negative = true
				sign[c] = -1
			}
		}
		// The Conv computes the live filters only (deadFilters); a dead
		// channel is its bias, constant, and so is its max: the Gather
		// puts every channel back in its place, a dead one reading a zero
		// padding filter, and the Add gives it its (signed) bias.
		rows := liveFilters(w, channels, dead)
		prune := len(rows) > 0 && len(rows) < channels
		if !prune {
			rows = make([]int, channels)
			for c := range rows {
				rows[c] = c
			}
		}
		padded := (len(rows) + channelBlock - 1) / channelBlock * channelBlock
		if prune && padded == len(rows) {
			padded += channelBlock // a zero channel for the dead ones to read
		}
		kernel := make([]float32, padded*per)
		kbias := make([]float32, padded)
		for r, c := range rows {
			for i := range per {
				kernel[r*per+i] = sign[c] * w[c*per+i]
			}
			kbias[r] = sign[c] * bias[c]
		}
		name := conv.Outputs[0]
		dims := slices.Clone(wt.Dims)
		dims[0] = int64(padded)
		g.Initializers = append(g.Initializers,
			graph.FloatTensor(name+"/pooled_kernel", dims, kernel),
			graph.FloatTensor(name+"/pooled_bias", []int64{int64(padded)}, kbias))
		conv.Inputs[1], conv.Inputs[2] = name+"/pooled_kernel", name+"/pooled_bias"
		out := pool.Outputs[0]
		chain := []*graph.Node{pool}
		v := name + "/pooled"
		pool.Inputs[0], pool.Outputs[0] = name, v
		if prune {
			index := make([]int64, channels)
			for c := range index {
				index[c] = int64(len(rows)) // a zero padding filter
			}
			constant := make([]float32, channels)
			for c := range constant {
				constant[c] = sign[c] * bias[c]
			}
			for r, c := range rows {
				index[c], constant[c] = int64(r), 0
			}
			g.Initializers = append(g.Initializers,
				graph.Int64Tensor(name+"/live_index", []int64{int64(channels)}, index),
				graph.FloatTensor(name+"/dead_bias", []int64{int64(channels), 1, 1}, constant))
			chain = append(chain,
				&graph.Node{Inputs: []string{v, name + "/live_index"}, Outputs: []string{v + "/placed"},
					Name: name + "/place", OpType: "Gather", Attrs: []*graph.Attr{graph.IntAttr("axis", 1)}},
				&graph.Node{Inputs: []string{v + "/placed", name + "/dead_bias"}, Outputs: []string{v + "/placed/biased"},
					Name: name + "/dead_bias_add", OpType: "Add"})
			v += "/placed/biased"
		} else if padded != channels {
			g.Initializers = append(g.Initializers,
				graph.Int64Tensor(name+"/slice_starts", []int64{1}, []int64{0}),
				graph.Int64Tensor(name+"/slice_ends", []int64{1}, []int64{int64(channels)}),
				graph.Int64Tensor(name+"/slice_axes", []int64{1}, []int64{1}))
			chain = append(chain, &graph.Node{
				Inputs:  []string{v, name + "/slice_starts", name + "/slice_ends", name + "/slice_axes"},
				Outputs: []string{v + "/sliced"}, Name: name + "/slice", OpType: "Slice"})
			v += "/sliced"
		}
		if negative {
			g.Initializers = append(g.Initializers,
				graph.FloatTensor(name+"/sign", []int64{int64(channels), 1, 1}, sign))
			chain = append(chain, &graph.Node{Inputs: []string{v, name + "/sign"}, Outputs: []string{v + "/signed"},
				Name: name + "/sign_mul", OpType: "Mul"})
			v += "/signed"
		}
		relu.Inputs[0], relu.Outputs[0] = v, v+"/rectified"
		bn.Inputs[0], bn.Outputs[0] = v+"/rectified", out
		chain = append(chain, relu, bn)
		at := slices.Index(g.Nodes, conv)
		g.Nodes = slices.DeleteFunc(g.Nodes, func(n *graph.Node) bool { return n == relu || n == bn || n == pool })
		g.Nodes = slices.Insert(g.Nodes, at+1, chain...)
		rewritten++
	}
	if rewritten > 0 {
		g.Prune() // the replaced kernels
	}
	return rewritten
}

// channelBlock is the channel block of ONNX Runtime's NCHWc CPU kernels: a
// Conv whose output channels are a multiple of it feeds a MaxPool in the
// blocked layout, without a reorder of the whole feature map.
const channelBlock = 16
