package similar

import "fmt"

// Item is a keyed vector: a track (its store key) and its Vector.
type Item struct {
	Key string
	Vec Vector
}

// Nearest returns the k items closest to q by cosine, best first (ties by
// key), scanning them all: exact, O(n·d + n·log k). An item of another
// model set or width is an error, never skipped silently: the caller
// must not mix model sets in one search.
func Nearest(q Vector, items []Item, k int) ([]Hit, error) {
	top := NewTopK(k)
	for _, it := range items {
		if err := Comparable(q, it.Vec); err != nil {
			return nil, fmt.Errorf("nearest: item %q: %w", it.Key, err)
		}
		top.Offer(Hit{Key: it.Key, Score: Dot(q.V, it.Vec.V)})
	}
	return top.Hits(), nil
}
