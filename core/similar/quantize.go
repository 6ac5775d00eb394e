package similar

import "math"

// Quantized is a vector stored as int8 codes with an affine map per
// vector: component j is approximately Lo + Scale·(Codes[j]+128). The
// codes span the vector's own range [min, max], so non-negative
// embeddings (ReLU outputs) use all 256 levels. A 200-dimension vector
// takes 200 bytes plus two floats instead of 800 bytes.
type Quantized struct {
	Codes     []int8
	Lo, Scale float32
}

// Quantize codes v over its range: each component is off by at most
// Scale/2. A constant vector has Scale 0 and is exact.
func Quantize(v []float32) Quantized {
	q := Quantized{Codes: make([]int8, len(v))}
	if len(v) == 0 {
		return q
	}
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	q.Lo = lo
	if hi == lo {
		for j := range q.Codes {
			q.Codes[j] = -128
		}
		return q
	}
	q.Scale = (hi - lo) / 255
	for j, x := range v {
		q.Codes[j] = int8(math.Round(float64((x-lo)/q.Scale)) - 128)
	}
	return q
}

// Query is a query vector prepared for DotQuantized: its components and
// their sum.
type Query struct {
	V   []float32
	Sum float32
}

// NewQuery prepares q.
func NewQuery(q []float32) Query {
	var s float32
	for _, x := range q {
		s += x
	}
	return Query{V: q, Sum: s}
}

// DotQuantized is the dot product of a float32 query with a quantised
// vector (asymmetric: the query keeps full precision):
// Σ q_j·(lo + scale·(c_j+128)) = (lo + 128·scale)·Σq + scale·Σ q_j·c_j.
// With unit vectors it differs from the exact cosine by at most
// scale/2·‖q‖₁.
func DotQuantized(q Query, codes []int8, lo, scale float32) float32 {
	v := q.V
	codes = codes[:len(v)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(v); i += 4 {
		s0 += v[i] * float32(codes[i])
		s1 += v[i+1] * float32(codes[i+1])
		s2 += v[i+2] * float32(codes[i+2])
		s3 += v[i+3] * float32(codes[i+3])
	}
	for ; i < len(v); i++ {
		s0 += v[i] * float32(codes[i])
	}
	return (lo+128*scale)*q.Sum + scale*((s0+s1)+(s2+s3))
}
