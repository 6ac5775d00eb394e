package graph

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Node is a parsed NodeProto. Fields other than inputs, outputs, name,
// op_type, domain and attributes (the doc string) are kept raw.
type Node struct {
	Inputs  []string
	Outputs []string
	Name    string
	OpType  string
	Domain  string
	Attrs   []*Attr
	other   []field
}

// Attr is one AttributeProto, kept raw; its name and the scalar and list
// values used by rewrites are parsed.
type Attr struct {
	Name string
	raw  []byte // the AttributeProto message
}

// AttributeProto field numbers and AttributeType values.
const (
	attrName   = 1
	attrF      = 2
	attrI      = 3
	attrInts   = 8
	attrType   = 20
	attrTypeF  = 1
	attrTypeI  = 2
	attrTypeIs = 7
)

func parseNode(b []byte) (*Node, error) {
	n := &Node{}
	err := eachField(b, func(num protowire.Number, typ protowire.Type, raw, val []byte) error {
		if typ != protowire.BytesType {
			n.other = append(n.other, field{num: num, raw: raw})
			return nil
		}
		switch num {
		case nodeInput:
			n.Inputs = append(n.Inputs, string(val))
		case nodeOutput:
			n.Outputs = append(n.Outputs, string(val))
		case nodeName:
			n.Name = string(val)
		case nodeOpType:
			n.OpType = string(val)
		case nodeDomain:
			n.Domain = string(val)
		case nodeAttr:
			a := &Attr{raw: val}
			if err := eachField(val, func(num protowire.Number, typ protowire.Type, _, v []byte) error {
				if num == attrName && typ == protowire.BytesType {
					a.Name = string(v)
				}
				return nil
			}); err != nil {
				return err
			}
			n.Attrs = append(n.Attrs, a)
		default:
			n.other = append(n.other, field{num: num, raw: raw})
			return nil
		}
		n.other = markOnce(n.other, num)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	return n, nil
}

// marshal writes the fields in the order they were read (a new node:
// inputs, outputs, name, op_type, attributes, domain).
func (n *Node) marshal() []byte {
	var b []byte
	written := map[protowire.Number]bool{}
	// A field that was read is written back even when empty.
	emit := func(num protowire.Number, read bool) {
		if written[num] {
			return
		}
		written[num] = true
		switch num {
		case nodeInput:
			for _, s := range n.Inputs {
				b = appendString(b, nodeInput, s)
			}
		case nodeOutput:
			for _, s := range n.Outputs {
				b = appendString(b, nodeOutput, s)
			}
		case nodeName:
			if n.Name != "" || read {
				b = appendString(b, nodeName, n.Name)
			}
		case nodeOpType:
			b = appendString(b, nodeOpType, n.OpType)
		case nodeAttr:
			for _, a := range n.Attrs {
				b = appendMessage(b, nodeAttr, a.raw)
			}
		case nodeDomain:
			if n.Domain != "" || read {
				b = appendString(b, nodeDomain, n.Domain)
			}
		}
	}
	for _, f := range n.other {
		if f.raw == nil {
			emit(f.num, true)
			continue
		}
		b = append(b, f.raw...)
	}
	for _, num := range []protowire.Number{nodeInput, nodeOutput, nodeName, nodeOpType, nodeAttr, nodeDomain} {
		emit(num, false)
	}
	return b
}

func (n *Node) clone() *Node {
	c := *n
	c.Inputs = append([]string(nil), n.Inputs...)
	c.Outputs = append([]string(nil), n.Outputs...)
	c.Attrs = append([]*Attr(nil), n.Attrs...)
	return &c
}

// Attr returns the attribute called name, or nil.
func (n *Node) Attr(name string) *Attr {
	for _, a := range n.Attrs {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Ints returns the attribute's list of integers (field ints, packed or
// not); an absent attribute gives nil.
func (a *Attr) Ints() []int64 {
	if a == nil {
		return nil
	}
	var out []int64
	_ = eachField(a.raw, func(num protowire.Number, typ protowire.Type, raw, val []byte) error {
		if num != attrInts {
			return nil
		}
		switch typ {
		case protowire.VarintType:
			v, _ := protowire.ConsumeVarint(raw[protowire.SizeTag(num):])
			out = append(out, int64(v))
		case protowire.BytesType:
			for len(val) > 0 {
				v, k := protowire.ConsumeVarint(val)
				if k < 0 {
					return nil
				}
				out = append(out, int64(v))
				val = val[k:]
			}
		}
		return nil
	})
	return out
}

// Int returns the attribute's integer (field i) and whether it is set.
func (a *Attr) Int() (int64, bool) {
	if a == nil {
		return 0, false
	}
	var v int64
	found := false
	_ = eachField(a.raw, func(num protowire.Number, typ protowire.Type, raw, _ []byte) error {
		if num == attrI && typ == protowire.VarintType {
			u, _ := protowire.ConsumeVarint(raw[protowire.SizeTag(num):])
			v, found = int64(u), true
		}
		return nil
	})
	return v, found
}

// Float returns the attribute's float (field f) and whether it is set.
func (a *Attr) Float() (float32, bool) {
	if a == nil {
		return 0, false
	}
	var v float32
	found := false
	_ = eachField(a.raw, func(num protowire.Number, typ protowire.Type, raw, _ []byte) error {
		if num == attrF && typ == protowire.Fixed32Type {
			u, _ := protowire.ConsumeFixed32(raw[protowire.SizeTag(num):])
			v, found = math.Float32frombits(u), true
		}
		return nil
	})
	return v, found
}

// IntsAttr is a new INTS attribute.
func IntsAttr(name string, vals []int64) *Attr {
	var b []byte
	b = appendString(b, attrName, name)
	var packed []byte
	for _, v := range vals {
		packed = protowire.AppendVarint(packed, uint64(v))
	}
	b = appendMessage(b, attrInts, packed)
	b = protowire.AppendTag(b, attrType, protowire.VarintType)
	b = protowire.AppendVarint(b, attrTypeIs)
	return &Attr{Name: name, raw: b}
}

// IntAttr is a new INT attribute.
func IntAttr(name string, v int64) *Attr {
	var b []byte
	b = appendString(b, attrName, name)
	b = protowire.AppendTag(b, attrI, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(v))
	b = protowire.AppendTag(b, attrType, protowire.VarintType)
	b = protowire.AppendVarint(b, attrTypeI)
	return &Attr{Name: name, raw: b}
}

// FloatAttr is a new FLOAT attribute.
func FloatAttr(name string, v float32) *Attr {
	var b []byte
	b = appendString(b, attrName, name)
	b = protowire.AppendTag(b, attrF, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, math.Float32bits(v))
	b = protowire.AppendTag(b, attrType, protowire.VarintType)
	b = protowire.AppendVarint(b, attrTypeF)
	return &Attr{Name: name, raw: b}
}
