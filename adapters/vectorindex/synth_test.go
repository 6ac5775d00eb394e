package vectorindex

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/nomarr/nomarr/core/similar"
)

const set = "0123456789ab"

// library draws synthetic track vectors shaped like MusiCNN embeddings:
// non-negative (the backbone's activations are ReLU outputs), so every
// cosine is positive and the vectors crowd one orthant; grouped around
// cluster centres (artists, genres); with variance decaying over the
// dimensions, as learned embeddings have, rather than isotropic noise.
type library struct {
	r       *rand.Rand
	dims    int
	centres [][]float64
	spread  []float64
}

func newLibrary(seed uint64, dims, clusters int) *library {
	l := &library{r: rand.New(rand.NewPCG(seed, 7)), dims: dims, spread: make([]float64, dims)}
	for j := range dims {
		l.spread[j] = 1 / math.Sqrt(1+float64(j)/8)
	}
	base := make([]float64, dims)
	for j := range base {
		base[j] = 0.3 * l.r.Float64()
	}
	for range clusters {
		c := make([]float64, dims)
		for j := range c {
			c[j] = base[j] + 0.8*l.spread[j]*l.r.NormFloat64()
		}
		l.centres = append(l.centres, c)
	}
	return l
}

// vector draws one track vector near a random centre.
func (l *library) vector() similar.Vector {
	c := l.centres[l.r.IntN(len(l.centres))]
	v := make([]float32, l.dims)
	for j := range v {
		v[j] = float32(max(0, c[j]+0.35*l.spread[j]*l.r.NormFloat64()))
	}
	u, err := similar.NewVector(set, v)
	if err != nil { // all components clipped: draw again
		return l.vector()
	}
	return u
}

// items draws n keyed vectors.
func (l *library) items(n int) []similar.Item {
	out := make([]similar.Item, n)
	for i := range out {
		out[i] = similar.Item{Key: fmt.Sprintf("t%07d", i), Vec: l.vector()}
	}
	return out
}

// recall is the share of the exact top k found in got.
func recall(got, exact []similar.Hit) float64 {
	if len(exact) == 0 {
		return 1
	}
	in := map[string]bool{}
	for _, h := range got {
		in[h.Key] = true
	}
	n := 0
	for _, h := range exact {
		if in[h.Key] {
			n++
		}
	}
	return float64(n) / float64(len(exact))
}
