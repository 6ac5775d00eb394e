package gpu

import (
	"slices"

	"github.com/nomarr/nomarr/adapters/gpu/onnxgraph"
)

// The backbone is rewritten at load time into graphs that compute the same
// function with less work on the CPU (the model file itself, and so
// nom_version, is untouched):
//
//   - foldGatherConv turns the exporter's im2col form of one temporal
//     convolution (Pad → Reshape → Gather → Reshape → Transpose → MatMul →
//     Add → Transpose, whose last Transpose alone costs ≈ 9 ms a patch) back
//     into the Conv it is;
//   - poolBeforeNorm moves each BatchNormalization (and Relu) that feeds a
//     MaxPool after it, exactly (see there), so they work on the pooled
//     values instead of the whole feature map, and pads the Conv to ONNX
//     Runtime's NCHWc channel block so pooling reads its blocked layout;
//   - fullWidthToConv1D turns the mid-end's convolutions, written as 2-D
//     convolutions of a one-channel image with a kernel as wide as the
//     image, into the 1-D convolutions over channels they are;
//   - splitFrontEnd cuts the "timbral" branches (Conv with a short kernel
//     over time → per-frame ops → Squeeze: each output frame depends only on
//     the input frames within the kernel's reach) into a front graph whose
//     time axis is free (plus two variants padded on one side only, for
//     patch edges), so that Predict computes them once per frame of the
//     track instead of once per patch (patches overlap by half; split.go).
//
// Each step checks the exact pattern it needs and leaves the graph unchanged
// when it is not there; splitFrontEnd reports whether it found the branches.

// frontEnd describes the split of the backbone.
type frontEnd struct {
	front, rest *onnxgraph.Model
	// startEdge and endEdge are the front graph with its convolutions
	// padded only before, or only after, the frames: over the first (last)
	// 2·reach frames of a patch they give exactly the patch's first (last)
	// reach output frames, and nothing else.
	startEdge, endEdge *onnxgraph.Model
	// frontInput is the front graph's input: frames [n, T, MelBands].
	frontInput string
	// outputs are the cut tensors [n, channels[i], T], the front graph's
	// outputs and the rest graph's inputs besides the patches.
	outputs  []string
	channels []int64
	// reach is the number of frames an output frame looks at on either side
	// (the kernels' half-width in time, the same for every branch).
	reach int
	// restInput is the patches' input name in the rest graph; restOutputs
	// are its outputs, in the backbone's order.
	restInput   string
	restOutputs []string
}

// rewriteBackbone parses the backbone, applies the exact rewrites and splits
// it. split is nil when the front-end branches were not found; whole is the
// rewritten graph before the split (serialized only when it is used).
func rewriteBackbone(data []byte) (whole *onnxgraph.Model, split *frontEnd, err error) {
	m, err := onnxgraph.Parse(data)
	if err != nil {
		return nil, nil, err
	}
	g := m.Graph
	foldGatherConv(g)
	poolBeforeNorm(g)
	fullWidthToConv1D(g)
	pruneDeadFilters(g)
	if foldConstants {
		foldConstantInputs(g, PatchFrames)
	}
	if temporalProducts {
		temporalAsMatMul(g, PatchFrames, MelBands)
	}
	g.DropValueInfo()
	split, err = splitFrontEnd(m, PatchFrames)
	if err != nil {
		return nil, nil, err
	}
	return m, split, nil
}

// single returns the only consumer of value, or nil when it has none, more
// than one, or is a graph output.
func single(g *onnxgraph.Graph, value string) *onnxgraph.Node {
	c := g.Consumers(value)
	if len(c) != 1 || g.IsOutput(value) {
		return nil
	}
	return c[0]
}

func ints(g *onnxgraph.Graph, name string) []int64 {
	t := g.Initializer(name)
	if t == nil {
		return nil
	}
	v, err := t.Int64s()
	if err != nil {
		return nil
	}
	return v
}

func floats(g *onnxgraph.Graph, name string) []float32 {
	t := g.Initializer(name)
	if t == nil {
		return nil
	}
	v, err := t.Floats()
	if err != nil {
		return nil
	}
	return v
}

// foldGatherConv replaces every im2col chain
//
//	Pad(x, [0,0,pb,0, 0,0,pa,0]) → Reshape [0,Tp,F] → Gather(axis 1, idx[t·K+k] = t+k)
//	→ Reshape [0,T,K,F] → Transpose [0,3,1,2] → MatMul W[K,O] → Add b[O]
//	→ Transpose [0,3,2,1]
//
// by Conv(x, W'[O,1,K,1], b, pads [pb,0,pa,0]). It returns how many it
// folded.
func foldGatherConv(g *onnxgraph.Graph) int {
	folded := 0
	for _, pad := range slices.Clone(g.Nodes) {
		if pad.OpType != "Pad" || len(pad.Inputs) < 2 || pad.Attr("mode") != nil {
			continue
		}
		if len(pad.Inputs) > 2 && pad.Inputs[2] != "" {
			if cv := floats(g, pad.Inputs[2]); len(cv) != 1 || cv[0] != 0 {
				continue
			}
		}
		p := ints(g, pad.Inputs[1])
		if len(p) != 8 || p[0] != 0 || p[1] != 0 || p[3] != 0 || p[4] != 0 || p[5] != 0 || p[7] != 0 {
			continue
		}
		pb, pa := p[2], p[6]
		r0 := single(g, pad.Outputs[0])
		if r0 == nil || r0.OpType != "Reshape" || len(r0.Inputs) != 2 {
			continue
		}
		s0 := ints(g, r0.Inputs[1])
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
		idx := ints(g, gather.Inputs[1])
		r1 := single(g, gather.Outputs[0])
		if r1 == nil || r1.OpType != "Reshape" || len(r1.Inputs) != 2 {
			continue
		}
		s1 := ints(g, r1.Inputs[1])
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
		w := floats(g, mm.Inputs[1])
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
		bias := floats(g, biasName)
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
			onnxgraph.FloatTensor(name+"/folded_kernel", []int64{o, 1, k, 1}, kernel),
			onnxgraph.FloatTensor(name+"/folded_bias", []int64{o}, bias))
		conv := &onnxgraph.Node{
			Inputs:  []string{pad.Inputs[0], name + "/folded_kernel", name + "/folded_bias"},
			Outputs: []string{name},
			Name:    name + "/folded_conv",
			OpType:  "Conv",
			Attrs: []*onnxgraph.Attr{
				onnxgraph.IntsAttr("dilations", []int64{1, 1}),
				onnxgraph.IntsAttr("strides", []int64{1, 1}),
				onnxgraph.IntsAttr("kernel_shape", []int64{k, 1}),
				onnxgraph.IntsAttr("pads", []int64{pb, 0, pa, 0}),
				onnxgraph.IntAttr("group", 1),
			},
		}
		chain := []*onnxgraph.Node{pad, r0, gather, r1, tp1, mm, add, tp2}
		at := slices.Index(g.Nodes, tp2)
		g.Nodes[at] = conv
		g.Nodes = slices.DeleteFunc(g.Nodes, func(n *onnxgraph.Node) bool { return slices.Contains(chain, n) })
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
// on pooled values. It returns how many chains it rewrote.
func poolBeforeNorm(g *onnxgraph.Graph) int {
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
		gamma := floats(g, bn.Inputs[1])
		wt := g.Initializer(conv.Inputs[1])
		w, bias := floats(g, conv.Inputs[1]), floats(g, conv.Inputs[2])
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
		rows := liveFilters(w, channels)
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
			onnxgraph.FloatTensor(name+"/pooled_kernel", dims, kernel),
			onnxgraph.FloatTensor(name+"/pooled_bias", []int64{int64(padded)}, kbias))
		conv.Inputs[1], conv.Inputs[2] = name+"/pooled_kernel", name+"/pooled_bias"
		out := pool.Outputs[0]
		chain := []*onnxgraph.Node{pool}
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
				onnxgraph.Int64Tensor(name+"/live_index", []int64{int64(channels)}, index),
				onnxgraph.FloatTensor(name+"/dead_bias", []int64{int64(channels), 1, 1}, constant))
			chain = append(chain,
				&onnxgraph.Node{Inputs: []string{v, name + "/live_index"}, Outputs: []string{v + "/placed"},
					Name: name + "/place", OpType: "Gather", Attrs: []*onnxgraph.Attr{onnxgraph.IntAttr("axis", 1)}},
				&onnxgraph.Node{Inputs: []string{v + "/placed", name + "/dead_bias"}, Outputs: []string{v + "/placed/biased"},
					Name: name + "/dead_bias_add", OpType: "Add"})
			v += "/placed/biased"
		} else if padded != channels {
			g.Initializers = append(g.Initializers,
				onnxgraph.Int64Tensor(name+"/slice_starts", []int64{1}, []int64{0}),
				onnxgraph.Int64Tensor(name+"/slice_ends", []int64{1}, []int64{int64(channels)}),
				onnxgraph.Int64Tensor(name+"/slice_axes", []int64{1}, []int64{1}))
			chain = append(chain, &onnxgraph.Node{
				Inputs:  []string{v, name + "/slice_starts", name + "/slice_ends", name + "/slice_axes"},
				Outputs: []string{v + "/sliced"}, Name: name + "/slice", OpType: "Slice"})
			v += "/sliced"
		}
		if negative {
			g.Initializers = append(g.Initializers,
				onnxgraph.FloatTensor(name+"/sign", []int64{int64(channels), 1, 1}, sign))
			chain = append(chain, &onnxgraph.Node{Inputs: []string{v, name + "/sign"}, Outputs: []string{v + "/signed"},
				Name: name + "/sign_mul", OpType: "Mul"})
			v += "/signed"
		}
		relu.Inputs[0], relu.Outputs[0] = v, v+"/rectified"
		bn.Inputs[0], bn.Outputs[0] = v+"/rectified", out
		chain = append(chain, relu, bn)
		at := slices.Index(g.Nodes, conv)
		g.Nodes = slices.DeleteFunc(g.Nodes, func(n *onnxgraph.Node) bool { return n == relu || n == bn || n == pool })
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
func splitFrontEnd(m *onnxgraph.Model, frames int64) (*frontEnd, error) {
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
	sp := &frontEnd{restInput: input}
	var convs []string
	for _, o := range g.Outputs {
		sp.restOutputs = append(sp.restOutputs, o.Name)
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
		if sp.reach != 0 && int(ks[0]/2) != sp.reach {
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
				if len(n.Inputs) == 2 && slices.Equal(ints(g, n.Inputs[1]), []int64{3}) ||
					len(n.Inputs) == 1 && slices.Equal(n.Attr("axes").Ints(), []int64{3}) {
					out = n.Outputs[0]
				}
				break
			}
			if !frameLocal[n.OpType] || n.Inputs[0] != v || len(n.Outputs) != 1 {
				break
			}
			if n.OpType == "Slice" && (len(n.Inputs) != 4 || !slices.Equal(ints(g, n.Inputs[3]), []int64{1})) {
				break // only a slice of channels
			}
			if n.OpType == "Slice" {
				starts, ends := ints(g, n.Inputs[1]), ints(g, n.Inputs[2])
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
		sp.outputs = append(sp.outputs, out)
		sp.channels = append(sp.channels, channels)
		convs = append(convs, conv.Name)
		sp.reach = int(ks[0] / 2)
	}
	if len(sp.outputs) == 0 {
		return nil, nil
	}

	// Front: the nodes up to the cut tensors, the patch reshape freed in time.
	front := m.Clone()
	fg := front.Graph
	fg.Outputs = nil
	for i, name := range sp.outputs {
		fg.Outputs = append(fg.Outputs, onnxgraph.FloatInput(name, []int64{-1, sp.channels[i], -1}, "n", "frames"))
	}
	fg.Prune()
	sp.frontInput = input
	for i, in := range fg.Inputs {
		if in.Name == input {
			fg.Inputs[i] = onnxgraph.FloatInput(input, []int64{-1, -1, MelBands}, "n", "frames")
		}
	}
	for _, n := range fg.Nodes {
		if n.OpType != "Reshape" || len(n.Inputs) != 2 {
			continue
		}
		shape := ints(fg, n.Inputs[1])
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
		fg.Initializers = append(fg.Initializers, onnxgraph.Int64Tensor(name, []int64{int64(len(shape))}, shape))
		n.Inputs[1] = name
	}
	fg.Prune()

	// Rest: the backbone with the cut tensors as inputs.
	rest := m.Clone()
	rg := rest.Graph
	rg.Nodes = slices.DeleteFunc(rg.Nodes, func(n *onnxgraph.Node) bool {
		return slices.ContainsFunc(n.Outputs, func(o string) bool { return slices.Contains(sp.outputs, o) })
	})
	for i, name := range sp.outputs {
		rg.Inputs = append(rg.Inputs, onnxgraph.FloatInput(name, []int64{-1, sp.channels[i], frames}, "n"))
	}
	rg.Prune()
	sp.front, sp.rest = front, rest
	edge := func(before, after int64) *onnxgraph.Model {
		e := front.Clone()
		for _, n := range e.Graph.Nodes {
			if n.OpType == "Conv" && slices.Contains(convs, n.Name) {
				at := slices.IndexFunc(n.Attrs, func(a *onnxgraph.Attr) bool { return a.Name == "pads" })
				n.Attrs[at] = onnxgraph.IntsAttr("pads", []int64{before, 0, after, 0})
			}
		}
		return e
	}
	r := int64(sp.reach)
	sp.startEdge, sp.endEdge = edge(r, 0), edge(0, r)
	return sp, nil
}

// plainConv2D reports whether a 2-D Conv has explicit pads (no auto_pad),
// stride and dilation 1 and one group: the form every rewrite here assumes.
func plainConv2D(conv *onnxgraph.Node) bool {
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
func readsInputOnly(g *onnxgraph.Graph, value, input string) bool {
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

// deadWeight bounds the weights of a dead filter, whose output is taken
// for its bias. Training drove every weight of 362 of the backbone's
// filters to about 1e-30 (164 and 183 of the timbral convolutions' 204):
// their contribution, below 1e-26 for any input the model sees, is far
// below half a float32 step of any bias, and leaving them out changes no
// value. 98 more have no weight above 1e-9 (at most 9.4e-7 summed): they
// read the normalized bands, within [-1.13, 3.26] for log-compressed
// values up to 10, so leaving them out moves a pre-activation by at most
// 3.1e-6, and measured, no prediction at all (TestPrunedMatchesUnpruned).
var deadWeight float32 = 1e-8

// liveFilters returns, in order, the filters of kernel w (channels rows of
// equal length) with a weight of magnitude deadWeight or more.
func liveFilters(w []float32, channels int) []int {
	per := len(w) / channels
	var live []int
	for c := range channels {
		if slices.ContainsFunc(w[c*per:(c+1)*per], func(v float32) bool { return v >= deadWeight || v <= -deadWeight }) {
			live = append(live, c)
		}
	}
	return live
}

// perChannelShape reports whether t is a constant of one value per channel
// for a tensor of rank rank ([n,C,…]): dimensions [C,1,…,1], rank−1 of
// them, so that broadcasting lines C up with the channel axis.
func perChannelShape(t *onnxgraph.Tensor, rank int) bool {
	if t == nil || len(t.Dims) != rank-1 || t.Dims[0] < 1 {
		return false
	}
	for _, d := range t.Dims[1:] {
		if d != 1 {
			return false
		}
	}
	return true
}

// channelIndex is the indices of a Gather of channels: a 1-D int64
// initializer, or nil.
func channelIndex(g *onnxgraph.Graph, name string) []int64 {
	if t := g.Initializer(name); t == nil || len(t.Dims) != 1 {
		return nil
	}
	return ints(g, name)
}
