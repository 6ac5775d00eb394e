package tags

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// constPreds returns n patches where every MSD score is msd and every head
// scores [a, 1-a] with a from first (default 0.5).
func constPreds(n int, msd float32, first map[string]float32) Predictions {
	p := Predictions{Heads: map[string][][]float32{}}
	for range n {
		row := make([]float32, len(MSDTop50))
		for i := range row {
			row[i] = msd
		}
		p.MSD = append(p.MSD, row)
	}
	for _, h := range Heads {
		a, ok := first[h]
		if !ok {
			a = 0.5
		}
		for range n {
			p.Heads[h] = append(p.Heads[h], []float32{a, 1 - a})
		}
	}
	return p
}

func TestDeriveKeysAndValues(t *testing.T) {
	p := constPreds(3, 0.01, map[string]float32{"mood_happy": 0.8, "mood_sad": 0.9})
	// Patch-varying scores for one head: mean 0.3, population sd 0.1.
	p.Heads["mood_aggressive"] = [][]float32{{0.2, 0.8}, {0.3, 0.7}, {0.4, 0.6}}
	// MSD: rock 0.6, jazz 0.3, happy 0.3 (tie: MSD order jazz before happy), pop 0.05.
	for _, r := range p.MSD {
		r[0], r[9], r[49], r[1] = 0.6, 0.3, 0.3, 0.05
	}
	got, err := Derive(p, "abc123", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"happy_musicnn_mood_happy":               "0.8000",
		"not_happy_musicnn_mood_happy":           "0.2000",
		"non_sad_musicnn_mood_sad":               "", // absent: non_ is renamed
		"not_sad_musicnn_mood_sad":               "0.9000",
		"sad_musicnn_mood_sad":                   "0.1000",
		"aggressive_musicnn_mood_aggressive":     "0.3000",
		"not_aggressive_musicnn_mood_aggressive": "0.7000",
		"spread_musicnn_mood_aggressive":         "0.0816",
		"spread_musicnn_mood_happy":              "0.0000",
		"danceable_musicnn_danceability":         "0.5000",
		"not_danceable_musicnn_danceability":     "0.5000",
		"female_musicnn_gender":                  "0.5000",
		"voice_musicnn_voice_instrumental":       "0.5000",
		"tonal_musicnn_tonal_atonal":             "0.5000",
		"not_party_musicnn_mood_party":           "0.5000",
		"top_tags":                               "rock; jazz; happy",
		"nom_version":                            "abc123",
	}
	for k, v := range want {
		if g, ok := got[k]; v == "" && ok || v != "" && g != v {
			t.Errorf("%s = %q (present %v), want %q", k, g, ok, v)
		}
	}
	// mood_sad is [non_sad, sad]: 0.9 is non_sad, so sad is 0.1 and only
	// happy (0.8) qualifies; relaxed/party are [non_x, x] = [0.5, 0.5] → loose.
	if got[KeyMoodStrict] != "happy" || got[KeyMoodRegular] != "happy" || got[KeyMoodLoose] != "happy; party; relaxed" {
		t.Errorf("moods: strict %q regular %q loose %q", got[KeyMoodStrict], got[KeyMoodRegular], got[KeyMoodLoose])
	}
	if n := len(got); n != 3*len(Heads)+6 {
		t.Errorf("%d keys, want %d", n, 3*len(Heads)+6)
	}
	if got[KeyDerived] != "mood=0.7/0.6/0.5 top=0.1/5 cal=none" {
		t.Errorf("derived = %q", got[KeyDerived])
	}
	for k := range got {
		if !slices.Contains(Keys(), k) {
			t.Errorf("key %q not in Keys()", k)
		}
	}
}

func TestTopTagsThresholdAndMax(t *testing.T) {
	p := constPreds(1, 0.2, nil) // all 50 tags at 0.2
	o := DefaultOptions()
	got, err := Derive(p, "v", o)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(MSDTop50[:5], ListSep); got[KeyTopTags] != want {
		t.Errorf("top_tags %q, want %q", got[KeyTopTags], want)
	}
	o.TopThreshold = 0.25
	if got, _ = Derive(p, "v", o); got[KeyTopTags] != "" {
		t.Errorf("nothing above threshold, got top_tags %q", got[KeyTopTags])
	}
	if _, ok := got[KeyTopTags]; ok {
		t.Error("empty top_tags must be absent")
	}
	o = DefaultOptions()
	o.TopMax = 0
	if got, _ = Derive(p, "v", o); got[KeyTopTags] != "" {
		t.Errorf("TopMax 0, got top_tags %q", got[KeyTopTags])
	}
	// Exactly at the threshold counts.
	p = constPreds(1, 0.1, nil)
	if got, _ = Derive(p, "v", DefaultOptions()); got[KeyTopTags] == "" {
		t.Error("score equal to the threshold must qualify")
	}
}

func TestMoodTiersAndConflicts(t *testing.T) {
	o := DefaultOptions()
	cases := []struct {
		name                   string
		first                  map[string]float32 // class-0 score per head
		strict, regular, loose string
	}{
		{"tiers", map[string]float32{"mood_happy": 0.75, "mood_aggressive": 0.65, "mood_party": 0.45, "mood_relaxed": 0.9, "mood_sad": 0.9},
			// happy 0.75 strict; aggressive 0.65 regular; party 0.55 loose;
			// relaxed 0.1, sad 0.1 none.
			"happy", "aggressive; happy", "aggressive; happy; party"},
		{"equal tiers drop both", map[string]float32{"mood_happy": 0.8, "mood_sad": 0.2, "mood_party": 1, "mood_relaxed": 1, "mood_aggressive": 0},
			"", "", ""},
		{"higher tier wins", map[string]float32{"mood_happy": 0.8, "mood_sad": 0.45, "mood_party": 1, "mood_relaxed": 1, "mood_aggressive": 0},
			"happy", "happy", "happy"},
		{"aggressive vs relaxed", map[string]float32{"mood_aggressive": 0.62, "mood_relaxed": 0.45, "mood_happy": 0, "mood_sad": 1, "mood_party": 1},
			"", "aggressive", "aggressive"},
		{"exact thresholds", map[string]float32{"mood_happy": 0.7, "mood_aggressive": 0.6, "mood_party": 0.5, "mood_relaxed": 1, "mood_sad": 1},
			"happy", "aggressive; happy", "aggressive; happy; party"},
	}
	for _, c := range cases {
		got, err := Derive(constPreds(2, 0, c.first), "v", o)
		if err != nil {
			t.Fatal(err)
		}
		if got[KeyMoodStrict] != c.strict || got[KeyMoodRegular] != c.regular || got[KeyMoodLoose] != c.loose {
			t.Errorf("%s: strict %q regular %q loose %q, want %q %q %q", c.name,
				got[KeyMoodStrict], got[KeyMoodRegular], got[KeyMoodLoose], c.strict, c.regular, c.loose)
		}
		for _, k := range []string{KeyMoodStrict, KeyMoodRegular, KeyMoodLoose} {
			if v, ok := got[k]; ok && v == "" {
				t.Errorf("%s: %s present but empty", c.name, k)
			}
		}
	}
}

func TestDeriveErrors(t *testing.T) {
	good := func() Predictions { return constPreds(2, 0.1, nil) }
	cases := []struct {
		name string
		mut  func(*Predictions, *Options, *string)
		is   error
	}{
		{"no patches", func(p *Predictions, _ *Options, _ *string) { *p = constPreds(0, 0, nil) }, ErrEmpty},
		{"zero value", func(p *Predictions, _ *Options, _ *string) { *p = Predictions{} }, ErrEmpty},
		{"short MSD row", func(p *Predictions, _ *Options, _ *string) { p.MSD[1] = p.MSD[1][:49] }, nil},
		{"wide head row", func(p *Predictions, _ *Options, _ *string) { p.Heads["gender"][0] = []float32{0.1, 0.2, 0.7} }, nil},
		{"missing head", func(p *Predictions, _ *Options, _ *string) { delete(p.Heads, "mood_sad") }, nil},
		{"unknown head", func(p *Predictions, _ *Options, _ *string) { p.Heads["genre"] = p.Heads["gender"] }, nil},
		{"patch count mismatch", func(p *Predictions, _ *Options, _ *string) { p.Heads["gender"] = p.Heads["gender"][:1] }, nil},
		{"NaN", func(p *Predictions, _ *Options, _ *string) { p.MSD[0][3] = float32(math.NaN()) }, nil},
		{"logit", func(p *Predictions, _ *Options, _ *string) { p.Heads["mood_happy"][0][0] = 3.2 }, nil},
		{"negative", func(p *Predictions, _ *Options, _ *string) { p.Heads["mood_happy"][0][0] = -0.5 }, nil},
		{"empty version", func(_ *Predictions, _ *Options, v *string) { *v = "" }, nil},
		{"unordered moods", func(_ *Predictions, o *Options, _ *string) { o.MoodRegular = 0.8 }, nil},
		{"threshold > 1", func(_ *Predictions, o *Options, _ *string) { o.TopThreshold = 1.5 }, nil},
		{"negative TopMax", func(_ *Predictions, o *Options, _ *string) { o.TopMax = -1 }, nil},
		{"NaN threshold", func(_ *Predictions, o *Options, _ *string) { o.MoodLoose = math.NaN() }, nil},
	}
	for _, c := range cases {
		p, o, v := good(), DefaultOptions(), "v1"
		c.mut(&p, &o, &v)
		got, err := Derive(p, v, o)
		if err == nil {
			t.Errorf("%s: no error, got %v", c.name, got)
			continue
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: error %v is not %v", c.name, err, c.is)
		}
	}
	// Rounding noise just outside [0, 1] is accepted and clamped.
	p := good()
	p.Heads["mood_happy"][0] = []float32{1.00001, -0.00001}
	p.Heads["mood_happy"][1] = []float32{1.00001, -0.00001}
	got, err := Derive(p, "v", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got["happy_musicnn_mood_happy"] != "1.0000" || got["not_happy_musicnn_mood_happy"] != "0.0000" {
		t.Errorf("clamping: %q %q", got["happy_musicnn_mood_happy"], got["not_happy_musicnn_mood_happy"])
	}
}

func TestWriteSet(t *testing.T) {
	all, err := Derive(constPreds(1, 0.5, map[string]float32{"mood_happy": 0.9, "mood_sad": 0.9}), "v9", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	none, err := WriteSet(all, ModeNone)
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("none: %v %v", none, err)
	}
	min, err := WriteSet(all, ModeMinimal)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range min {
		if !slices.Contains([]string{KeyMoodStrict, KeyMoodRegular, KeyMoodLoose, KeyVersion, KeyDerived}, k) || all[k] != v {
			t.Errorf("minimal has %s=%q", k, v)
		}
	}
	if min[KeyVersion] != "v9" || min[KeyMoodStrict] != "happy" || len(min) != 5 {
		t.Errorf("minimal = %v", min)
	}
	full, err := WriteSet(all, ModeFull)
	if err != nil || len(full) != len(all) {
		t.Fatalf("full: %d of %d, %v", len(full), len(all), err)
	}
	full["x"] = "y"
	if _, ok := all["x"]; ok {
		t.Error("WriteSet returned the input map, not a copy")
	}
	for _, m := range []string{"", "all", "FULL"} {
		if _, err := WriteSet(all, m); err == nil {
			t.Errorf("mode %q accepted", m)
		}
	}
}

func split(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ListSep)
}

// TestDeriveProperties: for any valid options and any probabilities, the mood
// lists are nested, sorted and free of conflicting pairs, every number parses
// back as a float in [0, 1] with 4 decimals, and top_tags respects its
// threshold, cap and order.
func TestDeriveProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ths := []float64{
			rapid.Float64Range(0, 1).Draw(t, "t1"),
			rapid.Float64Range(0, 1).Draw(t, "t2"),
			rapid.Float64Range(0, 1).Draw(t, "t3"),
		}
		slices.Sort(ths)
		o := Options{
			TopThreshold: rapid.Float64Range(0, 1).Draw(t, "top"),
			TopMax:       rapid.IntRange(0, 60).Draw(t, "max"),
			MoodLoose:    ths[0], MoodRegular: ths[1], MoodStrict: ths[2],
		}
		p := drawPredictions(t, 6, true)
		got, err := Derive(p, "ver", o)
		if err != nil {
			t.Fatal(err)
		}
		strict, regular, loose := split(got[KeyMoodStrict]), split(got[KeyMoodRegular]), split(got[KeyMoodLoose])
		for _, l := range strict {
			if !slices.Contains(regular, l) {
				t.Fatalf("strict %v ⊄ regular %v", strict, regular)
			}
		}
		for _, l := range regular {
			if !slices.Contains(loose, l) {
				t.Fatalf("regular %v ⊄ loose %v", regular, loose)
			}
		}
		for _, l := range [][]string{strict, regular, loose} {
			if !slices.IsSorted(l) {
				t.Fatalf("list %v not sorted", l)
			}
		}
		for _, c := range MoodConflicts {
			if slices.Contains(loose, c[0]) && slices.Contains(loose, c[1]) {
				t.Fatalf("conflicting %v both in %v", c, loose)
			}
		}
		for _, m := range Moods {
			v, _ := strconv.ParseFloat(got[ClassKey(m.Head, Classes[m.Head][m.Class])], 64)
			if slices.Contains(strict, m.Label) && v < o.MoodStrict || slices.Contains(loose, m.Label) && v < o.MoodLoose {
				t.Fatalf("%s = %v listed below its threshold", m.Label, v)
			}
		}
		for _, h := range Heads {
			for _, k := range []string{ClassKey(h, Classes[h][0]), ClassKey(h, Classes[h][1]), SpreadKey(h)} {
				s, ok := got[k]
				if !ok {
					t.Fatalf("%s missing", k)
				}
				v, err := strconv.ParseFloat(s, 64)
				if err != nil || v < 0 || v > 1 || strings.HasPrefix(s, "-") {
					t.Fatalf("%s = %q: not a float in [0, 1] (%v)", k, s, err)
				}
				if dot := strings.IndexByte(s, '.'); dot < 0 || len(s)-dot-1 != 4 {
					t.Fatalf("%s = %q: want 4 decimals", k, s)
				}
			}
		}
		top := split(got[KeyTopTags])
		if len(top) > o.TopMax {
			t.Fatalf("%d top tags > TopMax %d", len(top), o.TopMax)
		}
		mean := func(tag string) float64 {
			j := slices.Index(MSDTop50, tag)
			var s float64
			for _, r := range p.MSD {
				s += float64(r[j])
			}
			return round4(clamp01(s / float64(len(p.MSD))))
		}
		seen := map[string]bool{}
		for i, tag := range top {
			if seen[tag] || !slices.Contains(MSDTop50, tag) {
				t.Fatalf("top tags %v: %q duplicate or unknown", top, tag)
			}
			seen[tag] = true
			if mean(tag) < o.TopThreshold {
				t.Fatalf("top tag %q = %v below threshold %v", tag, mean(tag), o.TopThreshold)
			}
			if i > 0 && mean(top[i-1]) < mean(tag) {
				t.Fatalf("top tags %v not in descending score", top)
			}
		}
		if len(top) < o.TopMax {
			for _, tag := range MSDTop50 {
				if !seen[tag] && mean(tag) >= o.TopThreshold {
					t.Fatalf("%q = %v reaches the threshold but is not listed in %v", tag, mean(tag), top)
				}
			}
		}
		if got[KeyVersion] != "ver" {
			t.Fatalf("version %q", got[KeyVersion])
		}
		for k := range got {
			if !slices.Contains(Keys(), k) {
				t.Fatalf("key %q not in Keys()", k)
			}
		}
		// WriteSet(minimal) ⊆ WriteSet(full) = all.
		min, _ := WriteSet(got, ModeMinimal)
		for k, v := range min {
			if got[k] != v {
				t.Fatalf("minimal %s=%q differs from all", k, v)
			}
		}
	})
}
