package store

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestLabels(t *testing.T) {
	tags := map[string]string{
		"mood-strict":  "Happy",
		"mood-regular": "happy; Party ;  party",
		"mood-loose":   "happy; ; party; a:b",
		"top_tags":     "Rock; rock; Heavy Metal; ÉLAN",
		"mood-other":   "ignored",
	}
	want := []string{"strict:happy", "regular:happy", "regular:party", "loose:happy", "loose:party", "loose:a:b",
		"top:rock", "top:heavy metal", "top:Élan"}
	if got := Labels(tags); !slices.Equal(got, want) {
		t.Errorf("Labels = %q, want %q", got, want)
	}
	if got := Labels(nil); got == nil || len(got) != 0 {
		t.Errorf("Labels(nil) = %#v, want an empty list", got)
	}
}

// TestLabelsAgreeWithBrowseMatch: a file matches a query's mood and genre
// filters exactly when its Labels hold the query's QueryLabels, on random
// lists of awkward labels (case, spaces, tabs, repeats, separators).
func TestLabelsAgreeWithBrowseMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 14))
	words := []string{"happy", "Happy", " happy", "happy\t", "sad", "party", "", " ", "a:b", "hip hop", "HIP HOP", "é", "É", ";x"}
	list := func() string {
		var parts []string
		for range rng.IntN(4) {
			parts = append(parts, words[rng.IntN(len(words))])
		}
		return strings.Join(parts, ListSep)
	}
	tiers := []string{"", TierStrict, TierRegular, TierLoose}
	for i := range 5000 {
		tags := map[string]string{"mood-strict": list(), "mood-regular": list(), "mood-loose": list(), "top_tags": list()}
		q := BrowseQuery{Mood: words[rng.IntN(len(words))], MoodTier: tiers[rng.IntN(len(tiers))]}
		if rng.IntN(2) == 0 {
			q.Genre = words[rng.IntN(len(words))]
		}
		q = q.Normalized()
		labels := Labels(tags)
		held := true
		for _, l := range QueryLabels(q) {
			held = held && slices.Contains(labels, l)
		}
		if got := BrowseMatch(q, BrowseRow{Tags: tags}); got != held {
			t.Fatalf("case %d: tags %q, query mood %q (%s) genre %q: BrowseMatch %v, labels %q hold %q: %v",
				i, tags, q.Mood, q.MoodTier, q.Genre, got, labels, QueryLabels(q), held)
		}
		if len(labels) != len(slices.Compact(slices.Sorted(slices.Values(labels)))) {
			t.Fatalf("case %d: Labels %q repeat a label", i, labels)
		}
	}
}

// TestTagStatsCountFilesListingALabel: Add counts a label once per file,
// however often its list repeats it, and counting a file's Labels with
// AddLabel gives the same counts.
func TestTagStatsCountFilesListingALabel(t *testing.T) {
	files := []map[string]string{
		{"mood-strict": "happy; Happy; happy ", "mood-loose": "happy; sad", "top_tags": "rock; Rock; pop"},
		{"mood-strict": "happy", "mood-regular": "calm", "top_tags": "rock"},
		{"happy_musicnn_mood_happy": "0.5"},
	}
	added, counted := NewTagStats(), NewTagStats()
	for _, tags := range files {
		added.Add(tags)
		for _, l := range Labels(tags) {
			counted.AddLabel(l, 1)
		}
	}
	if added.Moods[TierStrict]["happy"] != 2 || added.TopTags["rock"] != 2 || added.TopTags["pop"] != 1 {
		t.Errorf("Add counts strict %v, top %v; want happy 2, rock 2, pop 1", added.Moods[TierStrict], added.TopTags)
	}
	if !reflect.DeepEqual(added.Moods, counted.Moods) || !maps.Equal(added.TopTags, counted.TopTags) {
		t.Errorf("AddLabel counts moods %v, top %v; Add %v, %v", counted.Moods, counted.TopTags, added.Moods, added.TopTags)
	}
	unknown := NewTagStats()
	for _, bad := range []string{"happy", "top:", "other:happy", ":x"} {
		unknown.AddLabel(bad, 1)
	}
	if len(unknown.Moods) != 0 || len(unknown.TopTags) != 0 {
		t.Errorf("labels of no known prefix counted: %v, %v", unknown.Moods, unknown.TopTags)
	}
}

// BenchmarkLabels: the labels of one completion's tags, the work a
// completion adds to store them beside the tags.
func BenchmarkLabels(b *testing.B) {
	tags := map[string]string{
		"mood-strict": "happy; party", "mood-regular": "happy; party; danceable",
		"mood-loose": "happy; party; danceable; relaxed; electronic", "top_tags": "electronic; dance; House; pop; 00s",
	}
	for b.Loop() {
		Labels(tags)
	}
}
