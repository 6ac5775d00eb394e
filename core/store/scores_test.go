package store

import (
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestScores(t *testing.T) {
	tags := map[string]string{
		"happy_musicnn_mood_happy": "0.9100", "sad_musicnn_mood_sad": " 0.25 ", "party_musicnn_mood_party": "0x1p-2",
		"not_happy_musicnn_mood_happy": "0.0900", "non_x_musicnn_y": "0.5", "spread_musicnn_mood_happy": "0.1",
		"relaxed_musicnn_mood_relaxed": "high", "male_musicnn_gender": "Inf", "female_musicnn_gender": "-Inf",
		"tonal_musicnn_tonal_atonal": "NaN", "voice_musicnn_voice_instrumental": "1e400", "mood-strict": "0.5",
		"atonal_musicnn_tonal_atonal": "",
	}
	want := map[string]float64{"happy_musicnn_mood_happy": 0.91, "sad_musicnn_mood_sad": 0.25, "party_musicnn_mood_party": 0.25}
	if got := Scores(tags); !maps.Equal(got, want) {
		t.Errorf("Scores = %v, want %v", got, want)
	}
	if got := Scores(nil); got == nil || len(got) != 0 {
		t.Errorf("Scores(nil) = %#v, want an empty map", got)
	}
}

// TestScoresAgreeWithBrowseMatch: on random stored values (numbers with
// spaces, hexadecimal, words, NaN, ±Inf, overflows), a file matches a
// score range of finite bounds exactly when its Scores hold the key
// within the bounds; and, ±Inf aside, two files compare by a score as
// BrowseLess says when they are ordered by their Scores (those without
// the score last, ties by key).
func TestScoresAgreeWithBrowseMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 12))
	keys := []string{"happy_musicnn_mood_happy", "sad_musicnn_mood_sad", "not_happy_musicnn_mood_happy", "spread_musicnn_mood_happy", "mood-strict"}
	values := []string{"0.5", "0.50", " 0.25", "0.25\t", "1", "0", "-0", "0.7500", "0x1p-1", "1e-1", "abc", "", " ", "NaN", "Inf", "-Inf", "+inf", "1e400", "0.5.5"}
	tagsOf := func(inf bool) map[string]string {
		tags := map[string]string{}
		for _, k := range keys {
			if rng.IntN(4) == 0 {
				continue
			}
			v := values[rng.IntN(len(values))]
			for !inf && strings.Contains(strings.ToLower(v), "inf") {
				v = values[rng.IntN(len(values))]
			}
			tags[k] = v
		}
		return tags
	}
	for i := range 5000 {
		tags := tagsOf(true)
		scores := Scores(tags)
		for k := range scores {
			if !ScoreKey(k) {
				t.Fatalf("case %d: Scores(%q) holds %s, which ScoreKey refuses", i, tags, k)
			}
		}
		lo := float64(rng.IntN(12)-1) / 10
		r := ScoreRange{Key: keys[rng.IntN(len(keys))], Min: lo, Max: lo + float64(rng.IntN(8))/10}
		x, ok := scores[r.Key]
		held := ok && x >= r.Min && x <= r.Max
		q := BrowseQuery{Scores: []ScoreRange{r}}.Normalized()
		if ScoreKey(r.Key) && BrowseMatch(q, BrowseRow{Tags: tags}) != held {
			t.Fatalf("case %d: tags %q, range %+v: BrowseMatch %v, Scores %v", i, tags, r, !held, scores)
		}

		a := BrowseRow{File: File{Key: "a"}, Tags: tagsOf(false)}
		b := BrowseRow{File: File{Key: "b"}, Tags: tagsOf(false)}
		sort := keys[rng.IntN(2)]
		q = BrowseQuery{Sort: sort, Desc: rng.IntN(2) == 0}.Normalized()
		if got, want := BrowseLess(q, a, b), lessByScores(Scores(a.Tags), Scores(b.Tags), sort, q.Desc); got != want {
			t.Fatalf("case %d: sort %s desc %v, a %q, b %q: BrowseLess %v, by Scores %v", i, sort, q.Desc, a.Tags, b.Tags, got, want)
		}
	}
}

// lessByScores orders file "a" before file "b" as a query reading their
// Scores does: those with the score first, by value, then by key; the
// direction reverses all but the files without the score.
func lessByScores(a, b map[string]float64, key string, desc bool) bool {
	x, okA := a[key]
	y, okB := b[key]
	if okA != okB {
		return okA
	}
	if !okA || x == y {
		return !desc // "a" < "b"
	}
	return (x < y) != desc
}

func TestScoresKeepNoInfinity(t *testing.T) {
	for _, v := range []string{"Inf", "-Inf", "+Infinity", "1e309"} {
		if got := Scores(map[string]string{"happy_musicnn_mood_happy": v}); len(got) != 0 {
			t.Errorf("Scores of %q = %v, want none", v, got)
		}
	}
	if x, ok := Score(map[string]string{"k": "Inf"}, "k"); !ok || !math.IsInf(x, 1) {
		t.Errorf("Score(Inf) = %v, %v: the rule reads it as a score, which Scores leaves out", x, ok)
	}
}

// BenchmarkScores: the scores of one completion's tags, the work a
// completion adds to store them beside the tags.
func BenchmarkScores(b *testing.B) {
	tags := map[string]string{}
	for _, k := range []string{"danceable", "female", "male", "aggressive", "happy", "party", "relaxed", "sad", "atonal", "tonal", "instrumental", "voice"} {
		tags[k+"_musicnn_head"] = "0.4321"
		tags["not_"+k+"_musicnn_head"] = "0.5679"
	}
	for b.Loop() {
		Scores(tags)
	}
}
