package graph

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// TensorProto field numbers and the data types read here.
const (
	tensorDims      = 1
	tensorDataType  = 2
	tensorFloatData = 4
	tensorInt32Data = 5
	tensorInt64Data = 7
	tensorName      = 8
	tensorRawData   = 9
	tensorLocation  = 14

	// DataTypeFloat and the others are TensorProto.DataType values.
	DataTypeFloat = 1
	DataTypeUint8 = 2
	DataTypeInt8  = 3
	DataTypeInt32 = 6
	DataTypeInt64 = 7
)

// Tensor is a parsed TensorProto (an initializer). Its data is decoded on
// demand by Floats or Int64s; a tensor read from a model is written back
// from its original bytes.
type Tensor struct {
	Name     string
	Dims     []int64
	DataType int32
	raw      []byte // the TensorProto message
	data     []byte // raw_data, when the tensor stores it there
	floats   []float32
	ints     []int64
	external bool
}

func parseTensor(b []byte) (*Tensor, error) {
	t := &Tensor{raw: b}
	err := eachField(b, func(num protowire.Number, typ protowire.Type, raw, val []byte) error {
		body := raw[protowire.SizeTag(num):]
		switch num {
		case tensorDims:
			vals, err := varints(typ, body, val)
			if err != nil {
				return err
			}
			t.Dims = append(t.Dims, vals...)
		case tensorDataType:
			v, _ := protowire.ConsumeVarint(body)
			t.DataType = int32(v)
		case tensorName:
			t.Name = string(val)
		case tensorRawData:
			t.data = val
		case tensorFloatData:
			switch typ {
			case protowire.Fixed32Type:
				v, _ := protowire.ConsumeFixed32(body)
				t.floats = append(t.floats, math.Float32frombits(v))
			case protowire.BytesType:
				for i := 0; i+4 <= len(val); i += 4 {
					t.floats = append(t.floats, math.Float32frombits(binary.LittleEndian.Uint32(val[i:])))
				}
			}
		case tensorInt64Data, tensorInt32Data:
			vals, err := varints(typ, body, val)
			if err != nil {
				return err
			}
			t.ints = append(t.ints, vals...)
		case tensorLocation:
			v, _ := protowire.ConsumeVarint(body)
			t.external = v == 1
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tensor: %w", err)
	}
	return t, nil
}

// varints reads a repeated integer field, packed (BytesType) or not.
func varints(typ protowire.Type, body, packed []byte) ([]int64, error) {
	if typ == protowire.VarintType {
		v, _ := protowire.ConsumeVarint(body)
		return []int64{int64(v)}, nil
	}
	var out []int64
	for len(packed) > 0 {
		v, k := protowire.ConsumeVarint(packed)
		if k < 0 {
			return nil, fmt.Errorf("%w: packed integers: %v", ErrMalformed, protowire.ParseError(k))
		}
		out = append(out, int64(v))
		packed = packed[k:]
	}
	return out, nil
}

// Len is the number of elements the dims describe.
func (t *Tensor) Len() int {
	n := 1
	for _, d := range t.Dims {
		n *= int(d)
	}
	return n
}

// Floats returns the values of a FLOAT tensor stored in the model.
func (t *Tensor) Floats() ([]float32, error) {
	if t.DataType != DataTypeFloat {
		return nil, fmt.Errorf("graph: tensor %q has data type %d, not float", t.Name, t.DataType)
	}
	if t.external {
		return nil, fmt.Errorf("graph: tensor %q is stored outside the model", t.Name)
	}
	var out []float32
	if t.data != nil {
		out = make([]float32, len(t.data)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.data[4*i:]))
		}
	} else {
		out = append([]float32(nil), t.floats...)
	}
	if len(out) != t.Len() {
		return nil, fmt.Errorf("graph: tensor %q holds %d values for dims %v", t.Name, len(out), t.Dims)
	}
	return out, nil
}

// Int64s returns the values of an INT64 or INT32 tensor stored in the model.
func (t *Tensor) Int64s() ([]int64, error) {
	if t.external {
		return nil, fmt.Errorf("graph: tensor %q is stored outside the model", t.Name)
	}
	var out []int64
	switch {
	case t.DataType == DataTypeInt64 && t.data != nil:
		out = make([]int64, len(t.data)/8)
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(t.data[8*i:]))
		}
	case t.DataType == DataTypeInt32 && t.data != nil:
		out = make([]int64, len(t.data)/4)
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(t.data[4*i:])))
		}
	case t.DataType == DataTypeInt64 || t.DataType == DataTypeInt32:
		out = append([]int64(nil), t.ints...)
	default:
		return nil, fmt.Errorf("graph: tensor %q has data type %d, not an integer type", t.Name, t.DataType)
	}
	if len(out) != t.Len() {
		return nil, fmt.Errorf("graph: tensor %q holds %d values for dims %v", t.Name, len(out), t.Dims)
	}
	return out, nil
}

// FloatTensor is a new FLOAT initializer (values in raw_data).
func FloatTensor(name string, dims []int64, vals []float32) *Tensor {
	data := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	return newTensor(name, dims, DataTypeFloat, data)
}

// Int64Tensor is a new INT64 initializer (values in raw_data).
func Int64Tensor(name string, dims []int64, vals []int64) *Tensor {
	data := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(data[8*i:], uint64(v))
	}
	return newTensor(name, dims, DataTypeInt64, data)
}

// Int8Tensor is a new INT8 initializer; Uint8Tensor a new UINT8 one.
func Int8Tensor(name string, dims []int64, vals []int8) *Tensor {
	data := make([]byte, len(vals))
	for i, v := range vals {
		data[i] = byte(v)
	}
	return newTensor(name, dims, DataTypeInt8, data)
}

// Uint8Tensor is a new UINT8 initializer (values in raw_data).
func Uint8Tensor(name string, dims []int64, vals []uint8) *Tensor {
	return newTensor(name, dims, DataTypeUint8, slices.Clone(vals))
}

func newTensor(name string, dims []int64, dtype int32, data []byte) *Tensor {
	var b []byte
	var packed []byte
	for _, d := range dims {
		packed = protowire.AppendVarint(packed, uint64(d))
	}
	if len(dims) > 0 { // a scalar has no dims
		b = appendMessage(b, tensorDims, packed)
	}
	b = protowire.AppendTag(b, tensorDataType, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(dtype))
	b = appendString(b, tensorName, name)
	b = appendMessage(b, tensorRawData, data)
	return &Tensor{Name: name, Dims: dims, DataType: dtype, raw: b, data: data}
}

func (t *Tensor) marshal() []byte { return t.raw }
