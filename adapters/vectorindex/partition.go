package vectorindex

import "math/rand/v2"

// partition is the coarse quantiser of an inverted-file index: centroids
// in the projected space, and for each the slots nearest to it. A query
// scans the lists of its nearest Probe centroids only.
type partition struct {
	centroids [][]float32
	lists     [][]uint32
	where     []int32 // slot → its list, −1 when in none
	at        []int32 // slot → its position in that list
}

// kmeansRounds bounds Lloyd's iterations; the centroids only steer the
// probe, so a rough fit serves.
const kmeansRounds = 8

// fitPartition clusters sample (projected vectors) into k centroids by
// Lloyd's algorithm from k distinct sample points drawn with seed.
func fitPartition(sample [][]float32, k int, seed uint64) *partition {
	k = max(1, min(k, len(sample)))
	r := rand.New(rand.NewPCG(seed, 11))
	cs := make([][]float32, k)
	for i, j := range r.Perm(len(sample))[:k] {
		cs[i] = append([]float32(nil), sample[j]...)
	}
	d := len(sample[0])
	sums := make([][]float64, k)
	for i := range sums {
		sums[i] = make([]float64, d)
	}
	counts := make([]int, k)
	for range kmeansRounds {
		for i := range sums {
			clear(sums[i])
			counts[i] = 0
		}
		for _, v := range sample {
			c := nearest(cs, v)
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
	return &partition{centroids: cs, lists: make([][]uint32, k)}
}

// nearest is the index of the centroid closest to v.
func nearest(cs [][]float32, v []float32) int {
	best, bestD := 0, squaredL2(cs[0], v)
	for i := 1; i < len(cs); i++ {
		if d := squaredL2(cs[i], v); d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// place files slot s (projected to p) in the list of its nearest centroid.
func (pt *partition) place(s uint32, p []float32) {
	for int(s) >= len(pt.where) {
		pt.where = append(pt.where, -1)
		pt.at = append(pt.at, 0)
	}
	c := nearest(pt.centroids, p)
	pt.where[s], pt.at[s] = int32(c), int32(len(pt.lists[c]))
	pt.lists[c] = append(pt.lists[c], s)
}

// unplace takes slot s out of its list.
func (pt *partition) unplace(s uint32) {
	if int(s) >= len(pt.where) || pt.where[s] < 0 {
		return
	}
	c, i := pt.where[s], pt.at[s]
	l := pt.lists[c]
	last := l[len(l)-1]
	l[i] = last
	pt.at[last] = i
	pt.lists[c] = l[:len(l)-1]
	pt.where[s] = -1
}

// probe returns the indexes of the n centroids closest to p, closest
// first (ties by index).
func (pt *partition) probe(p []float32, n int) []int {
	type cd struct {
		c int
		d float32
	}
	n = min(n, len(pt.centroids))
	best := make([]cd, 0, n+1)
	for c, cv := range pt.centroids {
		d := squaredL2(cv, p)
		if len(best) == n && d >= best[n-1].d {
			continue
		}
		i := len(best)
		if i < n {
			best = append(best, cd{})
		} else {
			i = n - 1
		}
		for ; i > 0 && best[i-1].d > d; i-- {
			best[i] = best[i-1]
		}
		best[i] = cd{c, d}
	}
	out := make([]int, len(best))
	for i, b := range best {
		out[i] = b.c
	}
	return out
}
