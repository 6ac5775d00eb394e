package vectorindex

import (
	"math"
	"math/rand/v2"
)

// partition is an inverted-file index: k-means centroids in the
// projected space and, for each, a list of the slots nearest to it.
// Every entry keeps two int8 codes, each with one scale per component:
//
//   - the projected code (pdims bytes): the projection's residual to
//     the centroid, which a query scans to choose candidates;
//   - the remainder code (dims bytes): what the projected code leaves
//     of the vector, v − (mean + Wᵀ·(centroid + scale∘code)), that is
//     the components off the principal ones and the projected code's
//     rounding. It varies far less than the vector does, so 256 levels
//     over ±4 of its standard deviations are fine steps. The two codes
//     together score the candidates; their rounding is what separates
//     the answer from exact search.
//
// Invariants: where[s] = c ≥ 0 ⇔ s is in lists[c] at position at[s];
// every list holds one entry of slots, codes, full and bias per member.
type partition struct {
	pdims, dims int
	centroids   [][]float32 // projected space
	norms       []float32   // ‖centroid‖², for ranking by distance
	scale       []float32   // projected residual j ≈ scale[j]·code
	fscale      []float32   // remainder j ≈ fscale[j]·code
	proj        *projection // W and the mean
	lists       []list
	where       []int32 // slot → its list, −1 when in none
	at          []int32 // slot → its position in that list
}

// list is one inverted list, laid out for a sequential scan: entry i is
// slot slots[i], whose projection is p̂ = centroid + scale∘codes[i·pdims:],
// whose vector is v = mean + Wᵀp̂ + fscale∘full[i·dims:], and whose
// mean·v = bias[i].
type list struct {
	slots []uint32
	codes []int8
	full  []int8
	bias  []float32
}

// kmeansRounds bounds Lloyd's iterations; the centroids only steer the
// probe, so a rough fit serves.
const kmeansRounds = 8

// residualSpread is how many standard deviations of a residual
// component its int8 codes span; a residual beyond is clamped.
const residualSpread = 4

// fitCentroids clusters sample (projected vectors) into k centroids by
// Lloyd's algorithm from k distinct sample points drawn with seed.
func fitCentroids(sample [][]float32, k int, seed uint64) *partition {
	k = max(1, min(k, len(sample)))
	r := rand.New(rand.NewPCG(seed, 11))
	cs := make([][]float32, k)
	for i, j := range r.Perm(len(sample))[:k] {
		cs[i] = append([]float32(nil), sample[j]...)
	}
	d := len(sample[0])
	pt := &partition{pdims: d, centroids: cs, norms: make([]float32, k), lists: make([]list, k)}
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
	return pt
}

// spreadScales returns, per component, the step of int8 codes that span
// residualSpread standard deviations of the residuals (rows of equal
// width).
func spreadScales(residuals [][]float32) []float32 {
	d := len(residuals[0])
	sq := make([]float64, d)
	for _, r := range residuals {
		for j, x := range r {
			sq[j] += float64(x) * float64(x)
		}
	}
	out := make([]float32, d)
	for j := range sq {
		sd := math.Sqrt(sq[j] / float64(len(residuals)))
		out[j] = float32(max(sd, 1e-9) * residualSpread / 127)
	}
	return out
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

// encode writes the int8 codes of (x − centre)/scale, clamped.
func encode(x, centre, scale []float32, out []int8) {
	for j, v := range x {
		q := math.Round(float64((v - centre[j]) / scale[j]))
		out[j] = int8(max(-127, min(127, q)))
	}
}

// decode writes centre + scale∘codes into out.
func decode(codes []int8, centre, scale []float32, out []float32) {
	for j, c := range codes {
		out[j] = centre[j] + scale[j]*float32(c)
	}
}

// vector decodes slot s's vector into out (len dims); s is in a list.
func (pt *partition) vector(s uint32, out []float32) {
	c, i := pt.where[s], int(pt.at[s])
	l := &pt.lists[c]
	p := make([]float32, pt.pdims)
	decode(l.codes[i*pt.pdims:(i+1)*pt.pdims], pt.centroids[c], pt.scale, p)
	pt.proj.unproject(p, out)
	for j, code := range l.full[i*pt.dims : (i+1)*pt.dims] {
		out[j] += pt.fscale[j] * float32(code)
	}
}

// codeEntry writes the projected code of v (projected to p) for list c
// into codes and its remainder code into full, using pq (pdims wide)
// and r (dims wide) as working memory.
func (pt *partition) codeEntry(c int, v, p []float32, codes, full []int8, pq, r []float32) {
	encode(p, pt.centroids[c], pt.scale, codes)
	pt.remainder(c, v, codes, full, pq, r)
}

// remainder writes into full the remainder code of v, whose projected
// code for list c is codes, using pq and r as working memory.
func (pt *partition) remainder(c int, v []float32, codes, full []int8, pq, r []float32) {
	decode(codes, pt.centroids[c], pt.scale, pq)
	pt.proj.unproject(pq, r)
	for j, x := range r {
		q := math.Round(float64((v[j] - x) / pt.fscale[j]))
		full[j] = int8(max(-127, min(127, q)))
	}
}

// grow extends where and at to cover slot s.
func (pt *partition) grow(s uint32) {
	for int(s) >= len(pt.where) {
		pt.where = append(pt.where, -1)
		pt.at = append(pt.at, 0)
	}
}

// place files slot s (vector v, projected to p) in the list of its
// nearest centroid.
func (pt *partition) place(s uint32, v, p []float32) {
	pt.grow(s)
	c := pt.nearest(p)
	l := &pt.lists[c]
	pt.where[s], pt.at[s] = int32(c), int32(len(l.slots))
	l.slots = append(l.slots, s)
	n, m := len(l.codes), len(l.full)
	l.codes = append(l.codes, make([]int8, pt.pdims)...)
	l.full = append(l.full, make([]int8, pt.dims)...)
	pt.codeEntry(c, v, p, l.codes[n:], l.full[m:], make([]float32, pt.pdims), make([]float32, pt.dims))
	l.bias = append(l.bias, dot(pt.proj.mean, v))
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
	copy(l.codes[i*pt.pdims:(i+1)*pt.pdims], l.codes[last*pt.pdims:])
	copy(l.full[i*pt.dims:(i+1)*pt.dims], l.full[last*pt.dims:])
	l.bias[i] = l.bias[last]
	pt.at[moved] = int32(i)
	l.slots, l.bias = l.slots[:last], l.bias[:last]
	l.codes, l.full = l.codes[:last*pt.pdims], l.full[:last*pt.dims]
	pt.where[s] = -1
}
