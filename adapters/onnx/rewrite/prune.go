package rewrite

import (
	"slices"

	"github.com/nomarr/nomarr/adapters/onnx/graph"
)

// pruneDeadFilters drops the dead filters (liveFilters, by dead) of every Conv that
// poolBeforeNorm did not take (those it did are pruned there, before their
// pooling) when at least minPruned of them are dead: the Conv computes the
// live ones plus one zero filter, and Gather → Add put every channel back
// in its place, a dead one reading the zero filter and getting its bias —
// the value it had, since a dead filter's output is its bias. It returns
// how many Convs it pruned.
func pruneDeadFilters(g *graph.Graph, dead float32) int {
	pruned := 0
	for _, conv := range slices.Clone(g.Nodes) {
		if conv.OpType != "Conv" || len(conv.Inputs) != 3 || len(conv.Outputs) != 1 {
			continue
		}
		if grp, ok := conv.Attr("group").Int(); ok && grp != 1 {
			continue
		}
		if c := single(g, conv.Outputs[0]); c != nil && c.OpType == "MaxPool" {
			continue // poolBeforeNorm's
		}
		wt := g.Initializer(conv.Inputs[1])
		w, bias := g.InitializerFloats(conv.Inputs[1]), g.InitializerFloats(conv.Inputs[2])
		if wt == nil || len(wt.Dims) < 3 || len(bias) == 0 || int64(len(bias)) != wt.Dims[0] || len(w)%len(bias) != 0 {
			continue
		}
		channels := len(bias)
		live := liveFilters(w, channels, dead)
		if len(live) == 0 || channels-len(live) < minPruned {
			continue
		}
		per := len(w) / channels
		kernel := make([]float32, (len(live)+1)*per) // the last filter zero
		kbias := make([]float32, len(live)+1)
		index := make([]int64, channels)
		constant := make([]float32, channels)
		for c := range channels {
			index[c], constant[c] = int64(len(live)), bias[c]
		}
		for r, c := range live {
			copy(kernel[r*per:(r+1)*per], w[c*per:(c+1)*per])
			kbias[r] = bias[c]
			index[c], constant[c] = int64(r), 0
		}
		out := conv.Outputs[0]
		dims := slices.Clone(wt.Dims)
		dims[0] = int64(len(live) + 1)
		cdims := make([]int64, len(wt.Dims)-1) // [C, 1, …]: the output's channel axis and the spatial ones
		cdims[0] = int64(channels)
		for i := 1; i < len(cdims); i++ {
			cdims[i] = 1
		}
		g.Initializers = append(g.Initializers,
			graph.FloatTensor(out+"/live_kernel", dims, kernel),
			graph.FloatTensor(out+"/live_bias", []int64{int64(len(live) + 1)}, kbias),
			graph.Int64Tensor(out+"/live_index", []int64{int64(channels)}, index),
			graph.FloatTensor(out+"/dead_bias", cdims, constant))
		conv.Inputs[1], conv.Inputs[2] = out+"/live_kernel", out+"/live_bias"
		conv.Outputs[0] = out + "/live"
		at := slices.Index(g.Nodes, conv)
		g.Nodes = slices.Insert(g.Nodes, at+1,
			&graph.Node{Inputs: []string{out + "/live", out + "/live_index"}, Outputs: []string{out + "/placed"},
				Name: out + "/place", OpType: "Gather", Attrs: []*graph.Attr{graph.IntAttr("axis", 1)}},
			&graph.Node{Inputs: []string{out + "/placed", out + "/dead_bias"}, Outputs: []string{out},
				Name: out + "/dead_bias_add", OpType: "Add"})
		pruned++
	}
	if pruned > 0 {
		g.Prune() // the replaced kernels
	}
	return pruned
}

// minPruned is the fewest dead filters worth a Conv's Gather and Add: one
// channel block of ONNX Runtime's CPU kernels.
const minPruned = channelBlock

// deadWeight bounds the weights of a dead filter, whose output is taken
// for its bias. Training drove every weight of 362 of the backbone's
// filters to about 1e-30 (164 and 183 of the timbral convolutions' 204):
// their contribution, below 1e-26 for any input the model sees, is far
// below half a float32 step of any bias, and leaving them out changes no
// value. 98 more have no weight above 1e-9 (at most 9.4e-7 summed): they
// read the normalized bands, within [-1.13, 3.26] for log-compressed
// values up to 10, so leaving them out moves a pre-activation by at most
// 3.1e-6, and measured, no prediction at all (TestPrunedMatchesUnpruned).
const deadWeight float32 = 1e-8

// liveFilters returns, in order, the filters of kernel w (channels rows of
// equal length) with a weight of magnitude dead or more (the steps take
// deadWeight for dead; 0 finds every filter live).
func liveFilters(w []float32, channels int, dead float32) []int {
	per := len(w) / channels
	var live []int
	for c := range channels {
		if slices.ContainsFunc(w[c*per:(c+1)*per], func(v float32) bool { return v >= dead || v <= -dead }) {
			live = append(live, c)
		}
	}
	return live
}
