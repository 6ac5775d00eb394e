package similar

import (
	"errors"
	"fmt"
	"math"
)

// ErrOppositeEnds: a path between two opposite vectors has no single
// direction to take; a request for one is bad input, not a failure.
var ErrOppositeEnds = errors.New("path: the ends are opposite; no single way between them")

// Path orders a playlist of up to n tracks that moves from a to b in even
// steps: waypoint i of n−2 is the point a fraction i/(n−1) of the way
// along the great circle from a to b, and the track for it is the unused
// candidate closest to it that fits the run caps and is no near-duplicate
// of a track already placed (a and b included). The result holds keys, a
// first and b last; it is shorter than n when the candidates run out or
// none fits the rules. Candidates with the key of a or b are ignored.
// rules.Diversity and rules.Pool do not apply. Ties go to the smaller
// key. Antipodal a and b (no unique great circle) are an error.
func Path(a, b Track, candidates []Track, n int, rules Rules) ([]string, error) {
	if n < 2 {
		return nil, fmt.Errorf("path: %d tracks cannot hold both ends", n)
	}
	if err := rules.Validate(); err != nil {
		return nil, fmt.Errorf("path: %w", err)
	}
	if err := checkTracks(a.Vec, []Track{a, b}); err != nil {
		return nil, fmt.Errorf("path: ends: %w", err)
	}
	if err := checkTracks(a.Vec, candidates); err != nil {
		return nil, fmt.Errorf("path: candidate: %w", err)
	}
	cos := float64(Dot(a.Vec.V, b.Vec.V))
	if cos < -0.9999 {
		return nil, ErrOppositeEnds
	}
	list := []*Track{&a}
	used := make([]bool, len(candidates))
	for i := range candidates {
		used[i] = candidates[i].Key == a.Key || candidates[i].Key == b.Key
	}
	for step := 1; step <= n-2; step++ {
		w := Slerp(a.Vec.V, b.Vec.V, float64(step)/float64(n-1))
		pick := -1
		var pickHit Hit
		for i := range candidates {
			c := &candidates[i]
			if used[i] || !rules.fits(list, c) || rules.duplicate(list, c) || rules.duplicate([]*Track{&b}, c) {
				continue
			}
			h := Hit{Key: c.Key, Score: Dot(w, c.Vec.V)}
			if pick < 0 || better(h, pickHit) {
				pick, pickHit = i, h
			}
		}
		if pick < 0 {
			break
		}
		used[pick] = true
		list = append(list, &candidates[pick])
	}
	keys := make([]string, 0, len(list)+1)
	for _, t := range list {
		keys = append(keys, t.Key)
	}
	return append(keys, b.Key), nil
}

// Slerp is the unit vector a fraction t of the way from unit vector a to
// unit vector b along the great circle through them; for (nearly) equal
// a and b it falls back to the normalised straight line.
func Slerp(a, b []float32, t float64) []float32 {
	cos := math.Max(-1, math.Min(1, float64(Dot(a, b))))
	theta := math.Acos(cos)
	wa, wb := 1-t, t
	if s := math.Sin(theta); s > 1e-6 {
		wa, wb = math.Sin((1-t)*theta)/s, math.Sin(t*theta)/s
	}
	out := make([]float32, len(a))
	var ss float64
	for j := range a {
		x := wa*float64(a[j]) + wb*float64(b[j])
		out[j] = float32(x)
		ss += x * x
	}
	if n := math.Sqrt(ss); n > 0 {
		for j := range out {
			out[j] = float32(float64(out[j]) / n)
		}
	}
	return out
}
