package similar

import (
	"errors"
	"fmt"
	"slices"
)

// Mix orders a playlist of up to n tracks that opens with the seeds (in
// the order given) and continues with candidates close to them but not to
// each other:
//
//   - closeness of a candidate is its highest cosine to any seed, so a
//     mix of several seeds keeps each one's neighbourhood rather than
//     drifting to their average;
//   - Mix chooses among the rules.Pool candidates closest to the seeds;
//   - each next track maximises (1−d)·closeness − d·redundancy, where
//     redundancy is its highest cosine to a track Mix already added (not
//     to a seed, which would penalise closeness itself), d =
//     rules.Diversity;
//   - a candidate breaking a run cap or a near-duplicate of a track in
//     the playlist is passed over for that step.
//
// The result holds keys. It is shorter than n when the candidates run out
// or none fits the rules. Candidates with a seed's key are ignored. It is
// deterministic: ties go to the smaller key, and reordering the
// candidates does not change it.
func Mix(seeds, candidates []Track, n int, rules Rules) ([]string, error) {
	if len(seeds) == 0 {
		return nil, errors.New("mix: no seed")
	}
	if err := rules.Validate(); err != nil {
		return nil, fmt.Errorf("mix: %w", err)
	}
	ref := seeds[0].Vec
	if err := checkTracks(ref, seeds); err != nil {
		return nil, fmt.Errorf("mix: seed: %w", err)
	}
	if err := checkTracks(ref, candidates); err != nil {
		return nil, fmt.Errorf("mix: candidate: %w", err)
	}
	list := make([]*Track, 0, max(n, len(seeds)))
	isSeed := make(map[string]bool, len(seeds))
	for i := range seeds {
		list = append(list, &seeds[i])
		isSeed[seeds[i].Key] = true
	}

	type cand struct {
		t          *Track
		close, red float32
	}
	pool := make([]cand, 0, len(candidates))
	for i := range candidates {
		c := &candidates[i]
		if isSeed[c.Key] {
			continue
		}
		var best float32 = -2
		for _, s := range seeds {
			best = max(best, Dot(s.Vec.V, c.Vec.V))
		}
		pool = append(pool, cand{t: c, close: best, red: -1})
	}
	slices.SortFunc(pool, func(a, b cand) int {
		return cmpHit(Hit{a.t.Key, a.close}, Hit{b.t.Key, b.close})
	})
	size := rules.Pool
	if size == 0 {
		size = 10 * max(n-len(seeds), 1)
	}
	pool = pool[:min(size, len(pool))]

	d := float32(rules.Diversity)
	used := make([]bool, len(pool))
	for len(list) < n {
		pick := -1
		var pickHit Hit
		for i, c := range pool {
			if used[i] || !rules.fits(list, c.t) || rules.duplicate(list, c.t) {
				continue
			}
			score := (1-d)*c.close - d*max(c.red, 0)
			h := Hit{Key: c.t.Key, Score: score}
			if pick < 0 || better(h, pickHit) {
				pick, pickHit = i, h
			}
		}
		if pick < 0 {
			break
		}
		used[pick] = true
		p := pool[pick].t
		list = append(list, p)
		for i := range pool {
			if !used[i] {
				pool[i].red = max(pool[i].red, Dot(pool[i].t.Vec.V, p.Vec.V))
			}
		}
	}
	keys := make([]string, len(list))
	for i, t := range list {
		keys[i] = t.Key
	}
	return keys, nil
}

// cmpHit orders hits best first, for slices.SortFunc.
func cmpHit(a, b Hit) int {
	switch {
	case better(a, b):
		return -1
	case better(b, a):
		return 1
	}
	return 0
}
