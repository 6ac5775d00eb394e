// Package graph reads and writes the parts of an ONNX model (onnx.proto,
// IR version 3 and later) that a graph rewrite needs: the graph's nodes,
// initializers, inputs and outputs. Everything else — the model's metadata,
// opset imports, a node's doc string, a tensor's storage — is kept as the
// bytes it was read from and written back unchanged, so Marshal of a model
// that was parsed and not edited returns the input bytes.
//
// It works on the protobuf wire format directly (no generated code): a
// field it does not know is carried through, never dropped, except the
// graph's value_info (shape annotations of intermediate values), which
// Graph.DropValueInfo discards because a rewrite can make it stale.
package graph

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of onnx.proto used here.
const (
	modelGraph = 7

	graphNode        = 1
	graphInitializer = 5
	graphInput       = 11
	graphOutput      = 12
	graphValueInfo   = 13

	nodeInput  = 1
	nodeOutput = 2
	nodeName   = 3
	nodeOpType = 4
	nodeAttr   = 5
	nodeDomain = 7
)

// ErrMalformed is wrapped by every parse error.
var ErrMalformed = errors.New("graph: malformed model")

// field is one raw protobuf field (tag included), kept verbatim.
type field struct {
	num protowire.Number
	raw []byte
}

// Model is a parsed ModelProto. Graph is its main graph; the other fields
// are kept raw, in their order.
type Model struct {
	Graph  *Graph
	fields []field // graph's position holds a nil raw
}

// Graph is a parsed GraphProto.
type Graph struct {
	Nodes        []*Node
	Initializers []*Tensor
	Inputs       []*ValueInfo
	Outputs      []*ValueInfo
	// other: name, doc_string, value_info, sparse initializers… raw, with
	// the positions of the parsed repeated fields marked by num only.
	other []field
}

// Parse reads a serialized ModelProto.
func Parse(b []byte) (*Model, error) {
	m := &Model{}
	err := eachField(b, func(num protowire.Number, typ protowire.Type, raw, val []byte) error {
		if num == modelGraph && typ == protowire.BytesType {
			if m.Graph != nil {
				return fmt.Errorf("%w: two graphs", ErrMalformed)
			}
			g, err := parseGraph(val)
			if err != nil {
				return err
			}
			m.Graph = g
			m.fields = append(m.fields, field{num: num})
			return nil
		}
		m.fields = append(m.fields, field{num: num, raw: raw})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if m.Graph == nil {
		return nil, fmt.Errorf("%w: no graph", ErrMalformed)
	}
	return m, nil
}

// Marshal serializes m.
func (m *Model) Marshal() []byte {
	var b []byte
	for _, f := range m.fields {
		if f.num == modelGraph && f.raw == nil {
			b = protowire.AppendTag(b, modelGraph, protowire.BytesType)
			b = protowire.AppendBytes(b, m.Graph.marshal())
			continue
		}
		b = append(b, f.raw...)
	}
	return b
}

// Clone returns a deep copy of m whose graph can be edited without touching
// m's. Tensors and value infos are shared (they are not edited in place by
// this package: SetFloats and the like replace their data).
func (m *Model) Clone() *Model {
	c := &Model{fields: m.fields, Graph: &Graph{other: m.Graph.other}}
	for _, n := range m.Graph.Nodes {
		c.Graph.Nodes = append(c.Graph.Nodes, n.clone())
	}
	c.Graph.Initializers = append([]*Tensor(nil), m.Graph.Initializers...)
	c.Graph.Inputs = append([]*ValueInfo(nil), m.Graph.Inputs...)
	c.Graph.Outputs = append([]*ValueInfo(nil), m.Graph.Outputs...)
	return c
}

func parseGraph(b []byte) (*Graph, error) {
	g := &Graph{}
	err := eachField(b, func(num protowire.Number, typ protowire.Type, raw, val []byte) error {
		if typ != protowire.BytesType {
			g.other = append(g.other, field{num: num, raw: raw})
			return nil
		}
		switch num {
		case graphNode:
			n, err := parseNode(val)
			if err != nil {
				return err
			}
			g.Nodes = append(g.Nodes, n)
		case graphInitializer:
			t, err := parseTensor(val)
			if err != nil {
				return err
			}
			g.Initializers = append(g.Initializers, t)
		case graphInput, graphOutput:
			v, err := parseValueInfo(val)
			if err != nil {
				return err
			}
			if num == graphInput {
				g.Inputs = append(g.Inputs, v)
			} else {
				g.Outputs = append(g.Outputs, v)
			}
		default:
			g.other = append(g.other, field{num: num, raw: raw})
			return nil
		}
		g.other = markOnce(g.other, num)
		return nil
	})
	return g, err
}

// markOnce records, in fields, the first position of the parsed field num
// (a field with a nil raw) so that marshal writes the fields in the order
// they were read.
func markOnce(fields []field, num protowire.Number) []field {
	for _, f := range fields {
		if f.num == num && f.raw == nil {
			return fields
		}
	}
	return append(fields, field{num: num})
}

func (g *Graph) marshal() []byte {
	var b []byte
	written := map[protowire.Number]bool{}
	emit := func(num protowire.Number) {
		if written[num] {
			return
		}
		written[num] = true
		switch num {
		case graphNode:
			for _, n := range g.Nodes {
				b = appendMessage(b, graphNode, n.marshal())
			}
		case graphInitializer:
			for _, t := range g.Initializers {
				b = appendMessage(b, graphInitializer, t.marshal())
			}
		case graphInput:
			for _, v := range g.Inputs {
				b = appendMessage(b, graphInput, v.raw)
			}
		case graphOutput:
			for _, v := range g.Outputs {
				b = appendMessage(b, graphOutput, v.raw)
			}
		}
	}
	for _, f := range g.other {
		if f.raw == nil {
			emit(f.num)
			continue
		}
		b = append(b, f.raw...)
	}
	// Parsed fields that were empty when read but have been filled since.
	for _, num := range []protowire.Number{graphNode, graphInitializer, graphInput, graphOutput} {
		emit(num)
	}
	return b
}

// DropValueInfo removes the graph's value_info entries (shape annotations of
// intermediate values), which a rewrite can make wrong.
func (g *Graph) DropValueInfo() {
	kept := g.other[:0:0]
	for _, f := range g.other {
		if f.num != graphValueInfo {
			kept = append(kept, f)
		}
	}
	g.other = kept
}

// Initializer returns the initializer called name, or nil.
func (g *Graph) Initializer(name string) *Tensor {
	for _, t := range g.Initializers {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// InitializerFloats returns the values of the float initializer called
// name, or nil when there is none or it holds no floats.
func (g *Graph) InitializerFloats(name string) []float32 {
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

// InitializerInt64s returns the values of the integer initializer called
// name, or nil when there is none or it holds no integers.
func (g *Graph) InitializerInt64s(name string) []int64 {
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

// Producer returns the node that outputs value, or nil.
func (g *Graph) Producer(value string) *Node {
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o == value {
				return n
			}
		}
	}
	return nil
}

// Consumers returns the nodes that take value as an input.
func (g *Graph) Consumers(value string) []*Node {
	var c []*Node
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in == value {
				c = append(c, n)
				break
			}
		}
	}
	return c
}

// IsOutput reports whether value is one of the graph's outputs.
func (g *Graph) IsOutput(value string) bool {
	for _, o := range g.Outputs {
		if o.Name == value {
			return true
		}
	}
	return false
}

// Prune keeps only the nodes needed to compute the graph's outputs, and the
// initializers and inputs those nodes read (an input that is also an
// initializer, as IR version 3 lists them, is kept with it). Node order is
// preserved.
func (g *Graph) Prune() {
	needed := map[string]bool{}
	for _, o := range g.Outputs {
		needed[o.Name] = true
	}
	keep := make([]bool, len(g.Nodes))
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		for _, o := range n.Outputs {
			if needed[o] {
				keep[i] = true
				break
			}
		}
		if keep[i] {
			for _, in := range n.Inputs {
				if in != "" {
					needed[in] = true
				}
			}
		}
	}
	nodes := g.Nodes[:0:0]
	for i, n := range g.Nodes {
		if keep[i] {
			nodes = append(nodes, n)
		}
	}
	g.Nodes = nodes
	inits := g.Initializers[:0:0]
	for _, t := range g.Initializers {
		if needed[t.Name] {
			inits = append(inits, t)
		}
	}
	g.Initializers = inits
	ins := g.Inputs[:0:0]
	for _, v := range g.Inputs {
		if needed[v.Name] {
			ins = append(ins, v)
		}
	}
	g.Inputs = ins
}

// eachField calls fn for every top-level field of the message b, with the
// field's raw bytes (tag included) and, for length-delimited fields, its
// value.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, raw, val []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", ErrMalformed, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return fmt.Errorf("%w: field %d: %v", ErrMalformed, num, protowire.ParseError(m))
		}
		raw := b[:n+m]
		var val []byte
		if typ == protowire.BytesType {
			val, _ = protowire.ConsumeBytes(b[n:])
		}
		if err := fn(num, typ, raw, val); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}
