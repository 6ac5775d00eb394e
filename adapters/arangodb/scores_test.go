package arangodb

import (
	"slices"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
)

// TestScoreIndexes: every score key of the fixed models (each class of
// each head of core/tags that store.ScoreKey accepts: twelve) has one
// score index, named after its class, each name once, each key a plain
// AQL name; a key of another model has none, and a page on it is
// answered by qBrowse.
func TestScoreIndexes(t *testing.T) {
	var want []string
	for _, h := range tags.Heads {
		for _, c := range tags.Classes[h] {
			if k := tags.ClassKey(h, c); store.ScoreKey(k) {
				want = append(want, k)
			}
		}
	}
	if len(want) != 12 {
		t.Errorf("the models have %d score keys, want 12: %v", len(want), want)
	}
	var keys, names []string
	for _, ix := range scoreIndexes {
		keys = append(keys, ix.key)
		names = append(names, ix.name)
		if !aqlName.MatchString(ix.key) || !strings.HasPrefix(ix.name, "nomarr_score_") ||
			!strings.HasPrefix(ix.key, strings.TrimPrefix(ix.name, "nomarr_score_")+"_musicnn_") {
			t.Errorf("score index %+v: want nomarr_score_<class> on a plain name <class>_musicnn_<head>", ix)
		}
	}
	if !slices.Equal(keys, want) {
		t.Errorf("score indexes on %v, want %v", keys, want)
	}
	if n := len(slices.Compact(slices.Sorted(slices.Values(names)))); n != len(names) {
		t.Errorf("score index names repeat: %v", names)
	}
	other := store.BrowseQuery{Sort: "happy_musicnn_other_model", Scores: []store.ScoreRange{{Key: "sad_musicnn_other_model", Max: 1}}}.Normalized()
	if _, ok := scoreSorted(other); ok {
		t.Error("a sort by a score of another model is served by an index")
	}
	if aql, _ := browseQuery(other); aql != qBrowse {
		t.Errorf("a range on a score of another model is not answered by qBrowse:\n%s", aql)
	}
}

// TestBrowseQueryPicksAnIndex: which query a page's shape gets.
func TestBrowseQueryPicksAnIndex(t *testing.T) {
	happy := store.ScoreRange{Key: "happy_musicnn_mood_happy", Min: 0.5, Max: 1}
	sad := store.ScoreRange{Key: "sad_musicnn_mood_sad", Max: 0.5}
	other := store.ScoreRange{Key: "x_musicnn_other", Max: 1}
	happyIx := scoreIndexByKey[happy.Key]
	for _, c := range []struct {
		name   string
		q      store.BrowseQuery
		want   string
		sorted bool
	}{
		{"a range", store.BrowseQuery{Scores: []store.ScoreRange{happy}}, browseRangeAQL(happyIx, false), false},
		{"the first indexed range", store.BrowseQuery{Scores: []store.ScoreRange{other, happy, sad}, Desc: true, Text: "x"}, browseRangeAQL(happyIx, true), false},
		{"a label before a range", store.BrowseQuery{Scores: []store.ScoreRange{happy}, Mood: "happy"}, browseLabelAQL(1, false), false},
		{"a score sort with a status", store.BrowseQuery{Sort: happy.Key, Status: store.StatusTagged}, "", true},
		{"a score sort with a range", store.BrowseQuery{Sort: happy.Key, Scores: []store.ScoreRange{sad}}, browseRangeAQL(scoreIndexByKey[sad.Key], false), false},
		{"a score sort with text", store.BrowseQuery{Sort: happy.Key, Text: "x"}, qBrowse, false},
		{"a status sort", store.BrowseQuery{Sort: store.SortStatus}, qBrowse, false},
	} {
		q := c.q.Normalized()
		if _, ok := scoreSorted(q); ok != c.sorted {
			t.Errorf("%s: scoreSorted %v, want %v", c.name, ok, c.sorted)
		}
		if c.sorted {
			continue
		}
		if aql, _ := browseQuery(q); aql != c.want {
			t.Errorf("%s: browseQuery answers\n%s\nwant\n%s", c.name, aql, c.want)
		}
	}
}
