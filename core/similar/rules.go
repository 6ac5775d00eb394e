package similar

import (
	"errors"
	"fmt"
)

// Track is an Item with the tags the playlist rules look at. An empty
// Artist or Album is unknown and never forms a run.
type Track struct {
	Item
	Artist, Album string
}

// Rules shape a playlist. The zero value applies no rule beyond relevance.
type Rules struct {
	// Diversity in [0, 1) trades closeness to the seeds for distance from
	// the tracks already chosen (maximal marginal relevance): a candidate
	// scores (1−Diversity)·closeness − Diversity·redundancy. 0 ranks by
	// closeness alone. Mix only.
	Diversity float64
	// NearDuplicate, when above 0, excludes a candidate whose cosine to a
	// track already in the playlist (seeds, ends included) is at least
	// this: the same recording in another file, a remaster. 0.98 is a
	// good value for MusiCNN track vectors.
	NearDuplicate float32
	// MaxArtistRun and MaxAlbumRun, when above 0, cap how many tracks of
	// one artist (album) follow each other.
	MaxArtistRun, MaxAlbumRun int
	// Pool, when above 0, is how many of the candidates closest to the
	// seeds Mix chooses from; 0 means 10 per track asked for. Mix only.
	Pool int
}

// Validate reports a rule out of range.
func (r Rules) Validate() error {
	switch {
	case r.Diversity < 0 || r.Diversity >= 1 || r.Diversity != r.Diversity:
		return fmt.Errorf("rules: diversity %v outside [0, 1)", r.Diversity)
	case r.NearDuplicate < 0 || r.NearDuplicate > 1:
		return fmt.Errorf("rules: near-duplicate cosine %v outside [0, 1]", r.NearDuplicate)
	case r.MaxArtistRun < 0 || r.MaxAlbumRun < 0 || r.Pool < 0:
		return errors.New("rules: negative run cap or pool")
	}
	return nil
}

// fits reports whether t may follow list under the run caps.
func (r Rules) fits(list []*Track, t *Track) bool {
	return fitsRun(list, t.Artist, r.MaxArtistRun, func(x *Track) string { return x.Artist }) &&
		fitsRun(list, t.Album, r.MaxAlbumRun, func(x *Track) string { return x.Album })
}

// fitsRun reports whether one more track with value v keeps the trailing
// run of v within limit.
func fitsRun(list []*Track, v string, limit int, of func(*Track) string) bool {
	if limit == 0 || v == "" {
		return true
	}
	run := 0
	for i := len(list) - 1; i >= 0 && of(list[i]) == v; i-- {
		run++
	}
	return run+1 <= limit
}

// duplicate reports whether t is a near-duplicate of a track in list.
func (r Rules) duplicate(list []*Track, t *Track) bool {
	if r.NearDuplicate == 0 {
		return false
	}
	for _, x := range list {
		if Dot(x.Vec.V, t.Vec.V) >= r.NearDuplicate {
			return true
		}
	}
	return false
}

// checkTracks reports an error unless every track is comparable with ref
// and no key is given twice.
func checkTracks(ref Vector, tracks []Track) error {
	seen := make(map[string]bool, len(tracks))
	for _, t := range tracks {
		if err := Comparable(ref, t.Vec); err != nil {
			return fmt.Errorf("track %q: %w", t.Key, err)
		}
		if seen[t.Key] {
			return fmt.Errorf("track %q given twice", t.Key)
		}
		seen[t.Key] = true
	}
	return nil
}
