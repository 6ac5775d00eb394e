package vectorindex

import "sync"

// scratch is the working memory of one partitioned query, pooled so
// that a query allocates almost nothing. A scratch is used by one query
// at a time.
type scratch struct {
	p      []float32 // the query's projection
	qs     []float32 // p scaled by the projected code scales
	wq     []float32 // W·q, the query's principal components uncentred
	qw     []float32 // wq scaled by the projected code scales
	qf     []float32 // the query scaled by the remainder code scales
	order  []ranked  // lists by centroid distance, a min-heap
	cand   []candidate
	probed []int32   // the lists scanned, in order
	base   []float32 // each probed list's share of a score: q·mean + wq·centroid
}

// scratchPool hands out scratch sized for the partition in use; a
// scratch too small (the partition was refitted wider) is regrown.
type scratchPool struct{ p sync.Pool }

func (sp *scratchPool) get(pdims, dims, lists, rerank int) *scratch {
	s, _ := sp.p.Get().(*scratch)
	if s == nil {
		s = &scratch{}
	}
	if cap(s.p) < pdims {
		s.p, s.qs = make([]float32, pdims), make([]float32, pdims)
		s.wq, s.qw = make([]float32, pdims), make([]float32, pdims)
	}
	s.p, s.qs, s.wq, s.qw = s.p[:pdims], s.qs[:pdims], s.wq[:pdims], s.qw[:pdims]
	if cap(s.qf) < dims {
		s.qf = make([]float32, dims)
	}
	s.qf = s.qf[:dims]
	if cap(s.order) < lists {
		s.order = make([]ranked, 0, lists)
	}
	if cap(s.cand) < rerank {
		s.cand = make([]candidate, 0, rerank)
	}
	s.order, s.cand = s.order[:0], s.cand[:0:rerank]
	return s
}

func (sp *scratchPool) put(s *scratch) { sp.p.Put(s) }

// ranked is a list with the squared distance of its centroid to the
// query (up to a constant) and the dot product of the two.
type ranked struct {
	d, dot float32
	c      int32
}

func closer(a, b ranked) bool { return a.d < b.d || (a.d == b.d && a.c < b.c) }

// heapify orders h as a min-heap by closer.
func heapify(h []ranked) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftRanked(h, i)
	}
}

// popClosest removes and returns the closest list of the min-heap h.
func popClosest(h []ranked) (ranked, []ranked) {
	top, last := h[0], len(h)-1
	h[0] = h[last]
	h = h[:last]
	siftRanked(h, 0)
	return top, h
}

func siftRanked(h []ranked, i int) {
	for {
		m, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && closer(h[l], h[m]) {
			m = l
		}
		if r < len(h) && closer(h[r], h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// candidate is entry pos of the probe-th list scanned and its score
// estimated from the projection.
type candidate struct {
	score      float32
	probe, pos int32
}

func worse(a, b candidate) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.probe > b.probe || (a.probe == b.probe && a.pos > b.pos)
}

// offerCandidate keeps the best cap(h) candidates in h, a heap with
// the worst on top.
func offerCandidate(h []candidate, c candidate) []candidate {
	if len(h) < cap(h) {
		h = append(h, c)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		return h
	}
	if !worse(h[0], c) {
		return h
	}
	h[0] = c
	for i := 0; ; {
		m, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && worse(h[l], h[m]) {
			m = l
		}
		if r < len(h) && worse(h[r], h[m]) {
			m = r
		}
		if m == i {
			return h
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// scanList offers every entry of l, the probe-th list scanned, to the
// candidate heap h: entry i's score is base + bias[i] + qs·codes[i]. It
// is the query's inner loop.
func scanList(h []candidate, l *list, qs []float32, base float32, probe int32) []candidate {
	d := len(qs)
	codes := l.codes
	for i, b := range l.bias {
		score := base + b + dotCodes(qs, codes[i*d:(i+1)*d])
		if len(h) < cap(h) || score >= h[0].score {
			h = offerCandidate(h, candidate{score, probe, int32(i)})
		}
	}
	return h
}

// dotCodes is the dot product of float32 q and int8 c of equal width.
func dotCodes(q []float32, c []int8) float32 {
	c = c[:len(q)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+8 <= len(q); i += 8 {
		s0 += q[i]*float32(c[i]) + q[i+4]*float32(c[i+4])
		s1 += q[i+1]*float32(c[i+1]) + q[i+5]*float32(c[i+5])
		s2 += q[i+2]*float32(c[i+2]) + q[i+6]*float32(c[i+6])
		s3 += q[i+3]*float32(c[i+3]) + q[i+7]*float32(c[i+7])
	}
	for ; i < len(q); i++ {
		s0 += q[i] * float32(c[i])
	}
	return (s0 + s1) + (s2 + s3)
}
