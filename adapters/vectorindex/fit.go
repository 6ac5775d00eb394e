package vectorindex

import (
	"fmt"
	"math"
)

// fit fits the projection, the centroids and the code scales on an
// even sample of the live slots and files every live slot, reading slot
// s's vector with get. It replaces any partition x had.
func (x *Index) fit(get func(s int, out []float32)) error {
	n := x.live()
	step := max(len(x.keys)/sampleMax, 1)
	var sample [][]float32
	for s := 0; s < len(x.keys); s += step {
		if x.keys[s] == "" {
			continue
		}
		v := make([]float32, x.dims)
		get(s, v)
		sample = append(sample, v)
	}
	p, err := fitProjection(sample, x.cfg.ProjDims)
	if err != nil {
		return fmt.Errorf("vectorindex: partition: %w", err)
	}
	pd := p.dims()
	psample := make([][]float32, len(sample))
	for i, v := range sample {
		psample[i] = make([]float32, pd)
		p.project(v, psample[i])
	}
	lists := x.cfg.Lists
	if lists == 0 {
		lists = int(math.Round(ListsPerRoot * math.Sqrt(float64(n))))
	}
	pt := fitCentroids(psample, lists, x.cfg.Seed)
	pt.dims, pt.proj = x.dims, p
	near := make([]int, len(psample))
	res := make([][]float32, len(psample))
	for i, v := range psample {
		near[i] = pt.nearest(v)
		c := pt.centroids[near[i]]
		res[i] = make([]float32, pd)
		for j := range v {
			res[i][j] = v[j] - c[j]
		}
	}
	pt.scale = spreadScales(res)
	codes, pq := make([]int8, pd), make([]float32, pd)
	for i, v := range sample { // the remainders, for their scales
		encode(psample[i], pt.centroids[near[i]], pt.scale, codes)
		decode(codes, pt.centroids[near[i]], pt.scale, pq)
		r := make([]float32, x.dims)
		p.unproject(pq, r)
		for j := range r {
			r[j] = v[j] - r[j]
		}
		res[i] = r
	}
	pt.fscale = spreadScales(res)

	// Every slot's list and projected code, then the lists sized
	// exactly, in slot order, with the remainder codes.
	assign := make([]int32, len(x.keys))
	pcodes := make([]int8, len(x.keys)*pd)
	counts := make([]int, len(pt.centroids))
	full, pv, r := make([]float32, x.dims), make([]float32, pd), make([]float32, x.dims)
	for s, key := range x.keys {
		if key == "" {
			assign[s] = -1
			continue
		}
		get(s, full)
		p.project(full, pv)
		c := pt.nearest(pv)
		assign[s] = int32(c)
		encode(pv, pt.centroids[c], pt.scale, pcodes[s*pd:(s+1)*pd])
		counts[c]++
	}
	for c, m := range counts {
		pt.lists[c] = list{slots: make([]uint32, m), codes: make([]int8, m*pd), full: make([]int8, m*x.dims), bias: make([]float32, m)}
		counts[c] = 0
	}
	pt.where, pt.at = assign, make([]int32, len(x.keys))
	for s, c := range assign {
		if c < 0 {
			continue
		}
		l, i := &pt.lists[c], counts[c]
		counts[c]++
		pt.at[s] = int32(i)
		get(s, full)
		code := l.codes[i*pd : (i+1)*pd]
		copy(code, pcodes[s*pd:(s+1)*pd])
		pt.remainder(int(c), full, code, l.full[i*x.dims:(i+1)*x.dims], pq, r)
		l.slots[i], l.bias[i] = uint32(s), dot(p.mean, full)
	}
	x.proj, x.part, x.builtAt = p, pt, n
	return nil
}
