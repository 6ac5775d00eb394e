package sqlite

import (
	"fmt"
	"slices"
	"testing"

	"github.com/nomarr/nomarr/core/store"
)

// TestBrowsePlans: on a library large enough that Browse reads some pages
// in an index's order and others from the filter's driver (browseKeys)
// or from key sets (setKeys),
// every page of a set of queries is the rule's (store.BrowseMatch,
// store.BrowseLess), before and after files change status (the
// browse_labels status trigger).
func TestBrowsePlans(t *testing.T) {
	size := 2000
	if raceEnabled {
		size = 400 // the race detector slows the SQLite engine tenfold
	}
	s := browseLibrary(t, size)
	check := func(stage string) {
		t.Helper()
		files, err := s.ListFiles(bg, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		tagSets, err := s.ListTags(bg, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		tags := map[string]map[string]string{}
		for _, ft := range tagSets {
			tags[ft.FileKey] = ft.Tags
		}
		queries := []store.BrowseQuery{
			{}, {Desc: true}, {Status: store.StatusFailed}, {Status: store.StatusMissing, Sort: store.SortTaggedAt},
			{Mood: "happy"}, {Mood: "happy", Status: store.StatusTagged, Sort: "happy_musicnn_mood_happy", Desc: true},
			{Mood: "sad", MoodTier: store.TierRegular, Sort: store.SortTaggedAt, Desc: true},
			{Mood: "party", MoodTier: store.TierStrict, Genre: "rock", Sort: "sad_musicnn_mood_sad"},
			{Genre: "jazz", Scores: []store.ScoreRange{{Key: "danceable_musicnn_danceability", Min: 0.5, Max: 1}}},
			{Scores: []store.ScoreRange{{Key: "happy_musicnn_mood_happy", Min: 0.9, Max: 1}}, Sort: "happy_musicnn_mood_happy"},
			{Sort: "party_musicnn_mood_party"}, {Sort: "party_musicnn_mood_party", Desc: true},
			{Status: store.StatusPending, Sort: "party_musicnn_mood_party"},
			{Text: "artist 001", Sort: "happy_musicnn_mood_happy", Desc: true}, {Text: "album 03", Mood: "happy"},
			{Text: "100%_x"}, {Sort: store.SortStatus, Desc: true}, {Genre: "nosuch"},
			{Mood: "happy", Scores: []store.ScoreRange{{Key: "happy_musicnn_mood_happy", Min: 0, Max: 1}}, Sort: "party_musicnn_mood_party"},
			{Mood: "happy", Scores: []store.ScoreRange{{Key: "happy_musicnn_mood_happy", Min: 0, Max: 1}}, Sort: "x_musicnn_y", Desc: true},
			{Mood: "happy", Genre: "rock", Status: store.StatusTagged, Sort: store.SortTaggedAt},
			{Mood: "sad", Genre: "pop", Status: store.StatusMissing, Sort: store.SortStatus},
		}
		for _, q := range queries {
			for _, p := range [][2]int{{0, 7}, {0, 500}, {40, 25}, {size - 210, 50}, {size - 5, 10}, {size + 1000, 5}} {
				q := q
				q.Offset, q.Limit = p[0], p[1]
				n := q.Normalized()
				var want []store.BrowseRow
				for _, f := range files {
					if r := (store.BrowseRow{File: f, Tags: tags[f.Key]}); store.BrowseMatch(n, r) {
						want = append(want, r)
					}
				}
				slices.SortFunc(want, func(a, b store.BrowseRow) int {
					if store.BrowseLess(n, a, b) {
						return -1
					}
					if store.BrowseLess(n, b, a) {
						return 1
					}
					return 0
				})
				total := len(want)
				want = want[min(n.Offset, len(want)):min(n.Offset+n.Limit, len(want))]
				got, err := s.Browse(bg, q)
				if err != nil {
					t.Fatalf("%s: Browse(%+v): %v", stage, q, err)
				}
				if got.Total != total || len(got.Rows) != len(want) {
					t.Fatalf("%s: Browse(%+v) = %d rows of %d, want %d of %d", stage, q, len(got.Rows), got.Total, len(want), total)
				}
				for i := range want {
					if got.Rows[i].File.Key != want[i].File.Key {
						t.Fatalf("%s: Browse(%+v) row %d = %s, want %s", stage, q, i, got.Rows[i].File.Key, want[i].File.Key)
					}
				}
			}
		}
	}
	check("built")
	var keys []string
	for i := range 2000 {
		if i%7 == 0 {
			keys = append(keys, fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15))
		}
	}
	if _, err := s.MarkMissing(bg, keys); err != nil {
		t.Fatal(err)
	}
	if err := s.Quarantine(bg, keys[3], "decode"); err != nil {
		t.Fatal(err)
	}
	check("after status changes")
}
