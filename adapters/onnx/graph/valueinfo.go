package graph

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// ValueInfo is a graph input or output (ValueInfoProto), kept raw; its name
// is parsed.
type ValueInfo struct {
	Name string
	raw  []byte
}

func parseValueInfo(b []byte) (*ValueInfo, error) {
	v := &ValueInfo{raw: b}
	err := eachField(b, func(num protowire.Number, typ protowire.Type, _, val []byte) error {
		if num == 1 && typ == protowire.BytesType {
			v.Name = string(val)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("value info: %w", err)
	}
	return v, nil
}

// FloatInput is a new value info for a FLOAT tensor of the given dims; a
// dim < 0 is symbolic, named by the matching entry of params (or "?").
func FloatInput(name string, dims []int64, params ...string) *ValueInfo {
	var shape []byte
	p := 0
	for _, d := range dims {
		var dim []byte
		if d >= 0 {
			dim = protowire.AppendTag(dim, 1, protowire.VarintType) // dim_value
			dim = protowire.AppendVarint(dim, uint64(d))
		} else {
			name := "?"
			if p < len(params) {
				name = params[p]
			}
			p++
			dim = appendString(dim, 2, name) // dim_param
		}
		shape = appendMessage(shape, 1, dim) // TensorShapeProto.dim
	}
	var tensor []byte
	tensor = protowire.AppendTag(tensor, 1, protowire.VarintType) // elem_type
	tensor = protowire.AppendVarint(tensor, DataTypeFloat)
	tensor = appendMessage(tensor, 2, shape) // shape
	typ := appendMessage(nil, 1, tensor)     // TypeProto.tensor_type
	b := appendString(nil, 1, name)
	b = appendMessage(b, 2, typ)
	return &ValueInfo{Name: name, raw: b}
}
