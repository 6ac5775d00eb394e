package rewrite

import (
	"slices"

	"github.com/nomarr/nomarr/adapters/onnx/graph"
)

// frameLocal are the ops through which an output frame depends only on the
// same input frame (MaxPool and Squeeze are checked further).
var frameLocal = map[string]bool{"Relu": true, "BatchNormalization": true, "MaxPool": true, "Mul": true, "Slice": true,
	"Gather": true, "Add": true}

// splitFrontEnd cuts m (already rewritten) into the front and rest graphs.
// A branch is a Conv on the normalized patches [n,1,frames,bands] with an
// odd kernel over time of at most 15 frames, symmetric padding, stride and
// dilation 1, followed by frame-local ops and a Squeeze of axis 3. It
// returns nil when m has no such branch or its input is not reshaped as
// expected.
func splitFrontEnd(m *graph.Model, frames, bands int64) (*FrontEnd, error) {
	g := m.Graph
	if len(g.Inputs) == 0 || len(g.Outputs) == 0 {
		return nil, nil
	}
	input := ""
	for _, in := range g.Inputs {
		if g.Initializer(in.Name) == nil {
			if input != "" {
				return nil, nil // more than one real input
			}
			input = in.Name
		}
	}
	sp := &FrontEnd{RestInput: input}
	var convs []string
	for _, o := range g.Outputs {
		sp.RestOutputs = append(sp.RestOutputs, o.Name)
	}
	for _, conv := range g.Nodes {
		if conv.OpType != "Conv" || len(conv.Inputs) < 2 {
			continue
		}
		wt := g.Initializer(conv.Inputs[1])
		ks := conv.Attr("kernel_shape").Ints()
		pads := conv.Attr("pads").Ints()
		if wt == nil || len(wt.Dims) != 4 || len(ks) != 2 || ks[0]%2 == 0 || ks[0] > 15 || ks[0] < 1 ||
			!slices.Equal(pads, []int64{ks[0] / 2, 0, ks[0] / 2, 0}) || wt.Dims[1] != 1 {
			continue
		}
		if !plainConv2D(conv) {
			continue
		}
		// Every branch has the same reach (the edge graphs pad them alike).
		if sp.Reach != 0 && int(ks[0]/2) != sp.Reach {
			continue
		}
		// The Conv must read the normalized input, not a later feature map.
		if !readsInputOnly(g, conv.Inputs[0], input) {
			continue
		}
		v := conv.Outputs[0]
		out := ""
		channels := wt.Dims[0]
		for {
			n := single(g, v)
			if n == nil {
				break
			}
			if n.OpType == "Squeeze" {
				if len(n.Inputs) == 2 && slices.Equal(g.InitializerInt64s(n.Inputs[1]), []int64{3}) ||
					len(n.Inputs) == 1 && slices.Equal(n.Attr("axes").Ints(), []int64{3}) {
					out = n.Outputs[0]
				}
				break
			}
			if !frameLocal[n.OpType] || n.Inputs[0] != v || len(n.Outputs) != 1 {
				break
			}
			if n.OpType == "Slice" && (len(n.Inputs) != 4 || !slices.Equal(g.InitializerInt64s(n.Inputs[3]), []int64{1})) {
				break // only a slice of channels
			}
			if n.OpType == "Slice" {
				starts, ends := g.InitializerInt64s(n.Inputs[1]), g.InitializerInt64s(n.Inputs[2])
				if !slices.Equal(starts, []int64{0}) || len(ends) != 1 || ends[0] > channels {
					break
				}
				channels = ends[0]
			}
			if (n.OpType == "Mul" || n.OpType == "Add") && (len(n.Inputs) != 2 || !perChannelShape(g.Initializer(n.Inputs[1]), 4)) {
				break // only a per-channel constant [C,1,1]
			}
			if n.OpType == "Gather" {
				if len(n.Inputs) != 2 {
					break
				}
				axis, _ := n.Attr("axis").Int()
				idx := channelIndex(g, n.Inputs[1])
				if axis != 1 || len(idx) == 0 || slices.ContainsFunc(idx, func(i int64) bool { return i < 0 || i >= channels }) {
					break // only a gather of channels
				}
				channels = int64(len(idx))
			}
			if n.OpType == "MaxPool" {
				k := n.Attr("kernel_shape").Ints()
				s := n.Attr("strides").Ints()
				if len(k) != 2 || k[0] != 1 || (s != nil && (len(s) != 2 || s[0] != 1)) {
					break
				}
			}
			v = n.Outputs[0]
		}
		if out == "" {
			continue
		}
		sp.Outputs = append(sp.Outputs, out)
		sp.Channels = append(sp.Channels, channels)
		convs = append(convs, conv.Name)
		sp.Reach = int(ks[0] / 2)
	}
	if len(sp.Outputs) == 0 {
		return nil, nil
	}

	// Front: the nodes up to the cut tensors, the patch reshape freed in time.
	front := m.Clone()
	fg := front.Graph
	fg.Outputs = nil
	for i, name := range sp.Outputs {
		fg.Outputs = append(fg.Outputs, graph.FloatInput(name, []int64{-1, sp.Channels[i], -1}, "n", "frames"))
	}
	fg.Prune()
	sp.FrontInput = input
	for i, in := range fg.Inputs {
		if in.Name == input {
			fg.Inputs[i] = graph.FloatInput(input, []int64{-1, -1, bands}, "n", "frames")
		}
	}
	for _, n := range fg.Nodes {
		if n.OpType != "Reshape" || len(n.Inputs) != 2 {
			continue
		}
		shape := fg.InitializerInt64s(n.Inputs[1])
		at := slices.Index(shape, frames)
		if at < 0 {
			continue
		}
		if shape[0] != -1 || slices.Index(shape[at+1:], frames) >= 0 {
			return nil, nil // a reshape this rewrite does not know how to free
		}
		shape = slices.Clone(shape)
		shape[0], shape[at] = 0, -1
		name := n.Inputs[1] + "/free_time"
		fg.Initializers = append(fg.Initializers, graph.Int64Tensor(name, []int64{int64(len(shape))}, shape))
		n.Inputs[1] = name
	}
	fg.Prune()

	// Rest: the backbone with the cut tensors as inputs.
	rest := m.Clone()
	rg := rest.Graph
	rg.Nodes = slices.DeleteFunc(rg.Nodes, func(n *graph.Node) bool {
		return slices.ContainsFunc(n.Outputs, func(o string) bool { return slices.Contains(sp.Outputs, o) })
	})
	for i, name := range sp.Outputs {
		rg.Inputs = append(rg.Inputs, graph.FloatInput(name, []int64{-1, sp.Channels[i], frames}, "n"))
	}
	rg.Prune()
	sp.Front, sp.Rest = front, rest
	edge := func(before, after int64) *graph.Model {
		e := front.Clone()
		for _, n := range e.Graph.Nodes {
			if n.OpType == "Conv" && slices.Contains(convs, n.Name) {
				at := slices.IndexFunc(n.Attrs, func(a *graph.Attr) bool { return a.Name == "pads" })
				n.Attrs[at] = graph.IntsAttr("pads", []int64{before, 0, after, 0})
			}
		}
		return e
	}
	r := int64(sp.Reach)
	sp.StartEdge, sp.EndEdge = edge(r, 0), edge(0, r)
	return sp, nil
}

// plainConv2D reports whether a 2-D Conv has explicit pads (no auto_pad),
// stride and dilation 1 and one group: the form every rewrite here assumes.
func plainConv2D(conv *graph.Node) bool {
	if a := conv.Attr("auto_pad"); a != nil && len(a.Ints()) > 0 {
		return false
	}
	if s := conv.Attr("strides").Ints(); s != nil && !slices.Equal(s, []int64{1, 1}) {
		return false
	}
	if d := conv.Attr("dilations").Ints(); d != nil && !slices.Equal(d, []int64{1, 1}) {
		return false
	}
	grp, ok := conv.Attr("group").Int()
	return !ok || grp == 1
}

// readsInputOnly reports whether value is computed from the graph input
// through shape and per-element ops only (Unsqueeze, Reshape,
// BatchNormalization) — the patches as the first Conv layers see them.
func readsInputOnly(g *graph.Graph, value, input string) bool {
	for value != input {
		n := g.Producer(value)
		if n == nil || len(n.Inputs) == 0 {
			return false
		}
		switch n.OpType {
		case "Unsqueeze", "Reshape", "BatchNormalization":
			value = n.Inputs[0]
		default:
			return false
		}
	}
	return true
}
