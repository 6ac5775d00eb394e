package similar

import "math"

// Quantized is a vector stored as int8 codes with one scale: component j
// is approximately Scale·float32(Codes[j]). A unit vector of 200
// dimensions takes 200 bytes plus the scale instead of 800 bytes.
type Quantized struct {
	Codes []int8
	Scale float32
}

// Quantize codes v symmetrically: the largest magnitude maps to ±127, so
// each component is off by at most Scale/2.
func Quantize(v []float32) Quantized {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	q := Quantized{Codes: make([]int8, len(v))}
	if m == 0 {
		return q
	}
	q.Scale = m / 127
	for j, x := range v {
		q.Codes[j] = int8(math.Round(float64(x / q.Scale)))
	}
	return q
}

// DotQuantized is the dot product of a float32 query with a quantised
// vector (asymmetric: the query keeps full precision). With unit vectors
// it differs from the exact cosine by at most Scale/2·‖q‖₁.
func DotQuantized(q []float32, codes []int8, scale float32) float32 {
	codes = codes[:len(q)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(q); i += 4 {
		s0 += q[i] * float32(codes[i])
		s1 += q[i+1] * float32(codes[i+1])
		s2 += q[i+2] * float32(codes[i+2])
		s3 += q[i+3] * float32(codes[i+3])
	}
	for ; i < len(q); i++ {
		s0 += q[i] * float32(codes[i])
	}
	return ((s0 + s1) + (s2 + s3)) * scale
}
