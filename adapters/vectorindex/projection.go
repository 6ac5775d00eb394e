package vectorindex

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/nomarr/nomarr/core/similar"
)

// projection maps a vector onto its first principal components: out =
// W·(v − mean). Squared distances between projections approximate those
// between the vectors, losing only the variance of the dropped
// components; the partition is computed in this smaller space and the
// scan of its lists restores the full one.
type projection struct {
	mean   []float32
	rows   [][]float32 // rows[i] is principal component i, unit length
	offset []float32   // offset[i] = rows[i]·mean
}

// fitProjection fits dims components to sample (rows of equal width).
func fitProjection(sample [][]float32, dims int) (*projection, error) {
	if len(sample) < 2 {
		return nil, errors.New("projection: fewer than two vectors")
	}
	d := len(sample[0])
	if dims > d {
		dims = d
	}
	data := mat.NewDense(len(sample), d, nil)
	for i, v := range sample {
		for j, x := range v {
			data.Set(i, j, float64(x))
		}
	}
	var pc stat.PC
	if !pc.PrincipalComponents(data, nil) {
		return nil, fmt.Errorf("projection: principal components of %d×%d failed", len(sample), d)
	}
	var vecs mat.Dense
	pc.VectorsTo(&vecs)
	p := &projection{mean: make([]float32, d), rows: make([][]float32, dims)}
	for j := range d {
		var s float64
		for i := range sample {
			s += float64(sample[i][j])
		}
		p.mean[j] = float32(s / float64(len(sample)))
	}
	p.offset = make([]float32, dims)
	for i := range dims {
		p.rows[i] = make([]float32, d)
		for j := range d {
			p.rows[i][j] = float32(vecs.At(j, i))
		}
		p.offset[i] = dot(p.rows[i], p.mean)
	}
	return p, nil
}

// dims is the width of a projection.
func (p *projection) dims() int { return len(p.rows) }

// project writes the projection of v into out (len p.dims()); it
// allocates nothing.
func (p *projection) project(v []float32, out []float32) {
	for i, r := range p.rows {
		out[i] = dot(r, v) - p.offset[i]
	}
}

// unproject writes the point of the full space whose projection is p
// and which has no component off the principal ones: mean + Σ p_i·row_i.
func (p *projection) unproject(pv []float32, out []float32) {
	copy(out, p.mean)
	for i, r := range p.rows {
		for j, x := range r {
			out[j] += pv[i] * x
		}
	}
}

// dot is the float32 dot product of equal-width a and b.
func dot(a, b []float32) float32 { return similar.Dot(a, b) }

// squaredL2 is the squared Euclidean distance, which
// orders pairs as the Euclidean distance does at less cost.
func squaredL2(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		d0, d1, d2, d3 := a[i]-b[i], a[i+1]-b[i+1], a[i+2]-b[i+2], a[i+3]-b[i+3]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(a); i++ {
		d := a[i] - b[i]
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}
