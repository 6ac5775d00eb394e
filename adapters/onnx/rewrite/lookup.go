package rewrite

import "github.com/nomarr/nomarr/adapters/onnx/graph"

// single returns the only consumer of value, or nil when it has none, more
// than one, or is a graph output.
func single(g *graph.Graph, value string) *graph.Node {
	c := g.Consumers(value)
	if len(c) != 1 || g.IsOutput(value) {
		return nil
	}
	return c[0]
}

// perChannelShape reports whether t is a constant of one value per channel
// for a tensor of rank rank ([n,C,…]): dimensions [C,1,…,1], rank−1 of
// them, so that broadcasting lines C up with the channel axis.
func perChannelShape(t *graph.Tensor, rank int) bool {
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
func channelIndex(g *graph.Graph, name string) []int64 {
	if t := g.Initializer(name); t == nil || len(t.Dims) != 1 {
		return nil
	}
	return g.InitializerInt64s(name)
}
