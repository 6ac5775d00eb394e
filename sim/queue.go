package sim

import "time"

// item is one scheduled callback. Ties at the same instant run in the order
// they were scheduled (seq), which makes every run deterministic.
type item struct {
	at  int64 // nanoseconds since the world's start
	seq uint64
	fn  func()
}

// queue is a binary min-heap of items ordered by (at, seq). It is written out
// rather than built on container/heap so that items are never boxed.
type queue []item

func (q queue) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q *queue) push(it item) {
	*q = append(*q, it)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *queue) pop() item {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = item{}
	h = h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

func (w *World) at(t time.Time, fn func()) {
	if t.Before(w.now) {
		t = w.now
	}
	w.seq++
	w.q.push(item{at: int64(t.Sub(w.start)), seq: w.seq, fn: fn})
}

func (w *World) after(d time.Duration, fn func()) { w.at(w.now.Add(d), fn) }
