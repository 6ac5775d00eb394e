package gpu

import (
	"slices"

	"github.com/nomarr/nomarr/adapters/gpu/onnxgraph"
)

// pruneDeadFilters drops the dead filters (liveFilters) of every Conv that
// poolBeforeNorm did not take (those it did are pruned there, before their
// pooling) when at least minPruned of them are dead: the Conv computes the
// live ones plus one zero filter, and Gather → Add put every channel back
// in its place, a dead one reading the zero filter and getting its bias —
// the value it had, since a dead filter's output is its bias. It returns
// how many Convs it pruned.
func pruneDeadFilters(g *onnxgraph.Graph) int {
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
		w, bias := floats(g, conv.Inputs[1]), floats(g, conv.Inputs[2])
		if wt == nil || len(wt.Dims) < 3 || len(bias) == 0 || int64(len(bias)) != wt.Dims[0] || len(w)%len(bias) != 0 {
			continue
		}
		channels := len(bias)
		live := liveFilters(w, channels)
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
			onnxgraph.FloatTensor(out+"/live_kernel", dims, kernel),
			onnxgraph.FloatTensor(out+"/live_bias", []int64{int64(len(live) + 1)}, kbias),
			onnxgraph.Int64Tensor(out+"/live_index", []int64{int64(channels)}, index),
			onnxgraph.FloatTensor(out+"/dead_bias", cdims, constant))
		conv.Inputs[1], conv.Inputs[2] = out+"/live_kernel", out+"/live_bias"
		conv.Outputs[0] = out + "/live"
		at := slices.Index(g.Nodes, conv)
		g.Nodes = slices.Insert(g.Nodes, at+1,
			&onnxgraph.Node{Inputs: []string{out + "/live", out + "/live_index"}, Outputs: []string{out + "/placed"},
				Name: out + "/place", OpType: "Gather", Attrs: []*onnxgraph.Attr{onnxgraph.IntAttr("axis", 1)}},
			&onnxgraph.Node{Inputs: []string{out + "/placed", out + "/dead_bias"}, Outputs: []string{out},
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
