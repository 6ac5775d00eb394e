package sim

import (
	"container/heap"
	"time"
)

// item is one scheduled callback. Ties at the same instant run in the order
// they were scheduled (seq), which makes every run deterministic.
type item struct {
	at  time.Time
	seq uint64
	fn  func()
}

type queue []item

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(item)) }
func (q *queue) Pop() any {
	old := *q
	n := len(old)
	it := old[n-1]
	old[n-1] = item{}
	*q = old[:n-1]
	return it
}

func (w *World) at(t time.Time, fn func()) {
	if t.Before(w.now) {
		t = w.now
	}
	w.seq++
	heap.Push(&w.q, item{at: t, seq: w.seq, fn: fn})
}

func heapPop(q *queue) { heap.Pop(q) }

func (w *World) after(d time.Duration, fn func()) { w.at(w.now.Add(d), fn) }
