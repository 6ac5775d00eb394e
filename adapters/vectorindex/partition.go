package vectorindex

import (
	"math"
	"math/rand/v2"
)

// partition is the coarse quantiser of an inverted-file index: centroids
// in the projected space and, for each, a list of the slots nearest to
// it with their projections coded as int8 residuals to the centroid.
// A query ranks the lists by centroid distance and scans the codes of
// the nearest ones, list after list, until it has scanned its budget.
//
// Invariants: where[s] = c ≥ 0 ⇔ s is in lists[c] at position at[s];
// every list's codes and bias hold one entry per slot, in slot order.
type partition struct {
	dims      int // projected width
	centroids [][]float32
	norms     []float32 // ‖centroid‖², for ranking by distance
	scale     []float32 // residual component j ≈ scale[j]·code
	mean      []float32 // the projection's mean, for bias
	lists     []list
	where     []int32 // slot → its list, −1 when in none
	at        []int32 // slot → its position in that list
}

// list is one inverted list, laid out for a sequential scan: entry i
// is slot slots[i], whose projection is centroid + scale∘codes[i·dims:]
// and whose full vector v has mean·v = bias[i].
type list struct {
	slots []uint32
	codes []int8
	bias  []float32
}

// kmeansRounds bounds Lloyd's iterations; the centroids only steer the
// probe, so a rough fit serves.
const kmeansRounds = 8

// residualSpread is how many standard deviations of a residual
// component its int8 codes span; a residual beyond is clamped.
const residualSpread = 4

// fitPartition clusters sample (projected vectors) into k centroids by
// Lloyd's algorithm from k distinct sample points drawn with seed, and
// fits the residual code scales on the same sample. mean is the
// projection's mean in the full space.
func fitPartition(sample [][]float32, k int, seed uint64, mean []float32) *partition {
	k = max(1, min(k, len(sample)))
	r := rand.New(rand.NewPCG(seed, 11))
	cs := make([][]float32, k)
	for i, j := range r.Perm(len(sample))[:k] {
		cs[i] = append([]float32(nil), sample[j]...)
	}
	d := len(sample[0])
	pt := &partition{dims: d, centroids: cs, norms: make([]float32, k), mean: mean, lists: make([]list, k)}
	sums := make([][]float64, k)
	for i := range sums {
		sums[i] = make([]float64, d)
	}
	counts := make([]int, k)
	for range kmeansRounds {
		pt.setNorms()
		for i := range sums {
			clear(sums[i])
			counts[i] = 0
		}
		for _, v := range sample {
			c := pt.nearest(v)
			counts[c]++
			for j, x := range v {
				sums[c][j] += float64(x)
			}
		}
		for i := range cs {
			if counts[i] == 0 { // keep an empty centroid where it was
				continue
			}
			for j := range cs[i] {
				cs[i][j] = float32(sums[i][j] / float64(counts[i]))
			}
		}
	}
	pt.setNorms()
	sq := make([]float64, d)
	for _, v := range sample {
		c := cs[pt.nearest(v)]
		for j, x := range v {
			e := float64(x - c[j])
			sq[j] += e * e
		}
	}
	pt.scale = make([]float32, d)
	for j := range sq {
		sd := math.Sqrt(sq[j] / float64(len(sample)))
		pt.scale[j] = float32(max(sd, 1e-9) * residualSpread / 127)
	}
	return pt
}

func (pt *partition) setNorms() {
	for i, c := range pt.centroids {
		pt.norms[i] = dot(c, c)
	}
}

// nearest is the index of the centroid closest to p (ties to the
// smaller index). The squared distance is summed eight components at a
// time and a centroid is dropped as soon as its partial sum exceeds the
// best; the projection puts the largest variance first, so most are
// dropped after the first eight.
func (pt *partition) nearest(p []float32) int {
	best, bestD := 0, float32(math.Inf(1))
	for i, c := range pt.centroids {
		c = c[:len(p)]
		var d float32
		j := 0
		for ; j+8 <= len(p) && d < bestD; j += 8 {
			d0, d1, d2, d3 := p[j]-c[j], p[j+1]-c[j+1], p[j+2]-c[j+2], p[j+3]-c[j+3]
			d4, d5, d6, d7 := p[j+4]-c[j+4], p[j+5]-c[j+5], p[j+6]-c[j+6], p[j+7]-c[j+7]
			d += (d0*d0 + d1*d1) + (d2*d2 + d3*d3) + (d4*d4 + d5*d5) + (d6*d6 + d7*d7)
		}
		for ; j < len(p) && d < bestD; j++ {
			e := p[j] - c[j]
			d += e * e
		}
		if d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// encode writes the residual codes of projection p to centroid c.
func (pt *partition) encode(c int, p []float32, out []int8) {
	cv := pt.centroids[c]
	for j, x := range p {
		q := math.Round(float64((x - cv[j]) / pt.scale[j]))
		out[j] = int8(max(-127, min(127, q)))
	}
}

// grow extends where and at to cover slot s.
func (pt *partition) grow(s uint32) {
	for int(s) >= len(pt.where) {
		pt.where = append(pt.where, -1)
		pt.at = append(pt.at, 0)
	}
}

// place files slot s (full vector v, projected to p) in the list of its
// nearest centroid.
func (pt *partition) place(s uint32, v, p []float32) {
	pt.grow(s)
	c := pt.nearest(p)
	l := &pt.lists[c]
	pt.where[s], pt.at[s] = int32(c), int32(len(l.slots))
	l.slots = append(l.slots, s)
	n := len(l.codes)
	l.codes = append(l.codes, make([]int8, pt.dims)...)
	pt.encode(c, p, l.codes[n:])
	l.bias = append(l.bias, dot(pt.mean, v))
}

// unplace takes slot s out of its list, moving the list's last entry
// into its place.
func (pt *partition) unplace(s uint32) {
	if int(s) >= len(pt.where) || pt.where[s] < 0 {
		return
	}
	c, i := pt.where[s], int(pt.at[s])
	l := &pt.lists[c]
	last := len(l.slots) - 1
	moved := l.slots[last]
	l.slots[i] = moved
	copy(l.codes[i*pt.dims:(i+1)*pt.dims], l.codes[last*pt.dims:])
	l.bias[i] = l.bias[last]
	pt.at[moved] = int32(i)
	l.slots, l.codes, l.bias = l.slots[:last], l.codes[:last*pt.dims], l.bias[:last]
	pt.where[s] = -1
}

// fill files every slot at once, sizing each list exactly: assign[s] is
// slot s's list (−1 for none), codes[s·dims:] its residual codes and
// bias[s] its bias.
func (pt *partition) fill(assign []int32, codes []int8, bias []float32) {
	counts := make([]int, len(pt.lists))
	for _, c := range assign {
		if c >= 0 {
			counts[c]++
		}
	}
	for c, n := range counts {
		pt.lists[c] = list{slots: make([]uint32, 0, n), codes: make([]int8, 0, n*pt.dims), bias: make([]float32, 0, n)}
	}
	pt.where = make([]int32, len(assign))
	pt.at = make([]int32, len(assign))
	for s, c := range assign {
		pt.where[s] = c
		if c < 0 {
			continue
		}
		l := &pt.lists[c]
		pt.at[s] = int32(len(l.slots))
		l.slots = append(l.slots, uint32(s))
		l.codes = append(l.codes, codes[s*pt.dims:(s+1)*pt.dims]...)
		l.bias = append(l.bias, bias[s])
	}
}
