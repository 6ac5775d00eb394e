package similar

import (
	"container/heap"
	"slices"
	"strings"
)

// Hit is one search result: a key and its cosine to the query.
type Hit struct {
	Key   string
	Score float32
}

// better orders hits: higher score first, then smaller key, so that a
// result never depends on the order candidates were offered in.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Key < b.Key
}

// TopK keeps the k best hits offered to it (by score, ties by key) in a
// heap of k entries: O(log k) per offer, O(k) memory. The zero value
// keeps nothing; make one with NewTopK.
type TopK struct {
	k int
	h worst
}

// NewTopK keeps the best k hits; k ≤ 0 keeps none.
func NewTopK(k int) *TopK {
	return &TopK{k: max(k, 0), h: make(worst, 0, max(k, 0))}
}

// Offer considers one hit.
func (t *TopK) Offer(h Hit) {
	switch {
	case t.k == 0:
	case len(t.h) < t.k:
		heap.Push(&t.h, h)
	case better(h, t.h[0]):
		t.h[0] = h
		heap.Fix(&t.h, 0)
	}
}

// Full reports whether k hits are kept; Floor is then the worst of them.
func (t *TopK) Full() bool { return t.k > 0 && len(t.h) == t.k }

// Floor is the worst hit kept (the zero Hit when none is).
func (t *TopK) Floor() Hit {
	if len(t.h) == 0 {
		return Hit{}
	}
	return t.h[0]
}

// Hits returns the hits kept, best first.
func (t *TopK) Hits() []Hit {
	out := slices.Clone([]Hit(t.h))
	slices.SortFunc(out, func(a, b Hit) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

// worst is a heap with the worst hit on top.
type worst []Hit

func (w worst) Len() int           { return len(w) }
func (w worst) Less(i, j int) bool { return better(w[j], w[i]) }
func (w worst) Swap(i, j int)      { w[i], w[j] = w[j], w[i] }
func (w *worst) Push(x any)        { *w = append(*w, x.(Hit)) }
func (w *worst) Pop() any {
	old := *w
	x := old[len(old)-1]
	*w = old[:len(old)-1]
	return x
}
