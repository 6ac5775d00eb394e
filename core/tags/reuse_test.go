package tags

import (
	"maps"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// drawPredictions draws 1 to maxPatches patches of scores, concentrated
// near the default thresholds and the ends so that the mood lists take
// every shape. Each head scores [a, 1-a] as a softmax does, or, with
// anyHeads, sometimes two unrelated scores.
func drawPredictions(t *rapid.T, maxPatches int, anyHeads bool) Predictions {
	n := rapid.IntRange(1, maxPatches).Draw(t, "patches")
	score := rapid.OneOf(rapid.Float32Range(0, 1), rapid.SampledFrom([]float32{0, 0.1, 0.5, 0.6, 0.7, 1}))
	p := Predictions{Heads: map[string][][]float32{}}
	for i := range n {
		p.MSD = append(p.MSD, rapid.SliceOfN(score, 50, 50).Draw(t, "msd"+strconv.Itoa(i)))
	}
	for _, h := range Heads {
		for range n {
			a := score.Draw(t, h)
			if !anyHeads || rapid.Bool().Draw(t, "softmax") {
				p.Heads[h] = append(p.Heads[h], []float32{a, 1 - a})
			} else {
				p.Heads[h] = append(p.Heads[h], []float32{a, score.Draw(t, h+"2")})
			}
		}
	}
	return p
}

// Whatever Derive writes, Reuse takes back as it is; with another version,
// or under mood thresholds that give other lists, it does not.
func TestReuseTakesBackWhatDeriveWrote(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		opt := DefaultOptions()
		got, err := Derive(drawPredictions(t, 5, false), "v1", opt)
		if err != nil {
			t.Fatal(err)
		}
		file := maps.Clone(got)
		file["some_other_key"] = "kept out" // a key not of Derive's
		reused, ok := Reuse(file, "v1", opt)
		if !ok || !maps.Equal(reused, got) {
			t.Fatalf("Reuse(Derive) = %v, %v; want %v, true", reused, ok, got)
		}
		if _, ok := Reuse(file, "v2", opt); ok {
			t.Fatal("reused the tags of another model set")
		}
	})
}

// Each way a file's tags can fall short of a whole analysis makes Reuse
// refuse them.
func TestReuseRefusesIncompleteOrEditedTags(t *testing.T) {
	opt := DefaultOptions()
	base, err := Derive(constPreds(2, 0.3, map[string]float32{"mood_happy": 0.8, "mood_sad": 0.9}), "v1", opt)
	if err != nil {
		t.Fatal(err)
	}
	if base[KeyMoodStrict] != "happy" || base[KeyTopTags] == "" {
		t.Fatalf("fixture: %v", base)
	}
	if _, ok := Reuse(base, "v1", opt); !ok {
		t.Fatal("the fixture itself is refused")
	}
	lower := Options{TopThreshold: 0.1, TopMax: 5, MoodLoose: 0.3, MoodRegular: 0.4, MoodStrict: 0.45}
	otherThresholds, err := Derive(constPreds(2, 0.3, map[string]float32{"mood_happy": 0.8, "mood_sad": 0.9}), "v1", lower)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := Reuse(otherThresholds, "v1", lower); !ok {
		t.Fatal("refused the lists of its own thresholds")
	}
	minimal, err := WriteSet(base, ModeMinimal)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]map[string]string{
		"write_mode minimal":             minimal,
		"no version":                     without(base, KeyVersion),
		"a class number missing":         without(base, ClassKey("voice_instrumental", "voice")),
		"a spread missing":               without(base, SpreadKey("gender")),
		"a number above 1":               with(base, ClassKey("gender", "male"), "1.0001"),
		"a number not as written":        with(base, ClassKey("gender", "male"), "0.5"),
		"not a number":                   with(base, ClassKey("gender", "male"), "high"),
		"a mood list edited":             with(base, KeyMoodStrict, "happy; sad"),
		"a mood list removed":            without(base, KeyMoodLoose),
		"a number edited under its list": with(base, ClassKey("mood_happy", "happy"), "0.1000"),
		"an unknown top tag":             with(base, KeyTopTags, "rock; polka"),
		"a top tag twice":                with(base, KeyTopTags, "rock; rock"),
		"more top tags than TopMax":      with(base, KeyTopTags, "rock; pop; jazz; soul; funk; blues"),
		"an empty top tags":              with(base, KeyTopTags, ""),
		"NaN":                            with(base, ClassKey("mood_happy", "happy"), "NaN"),
		"minus zero":                     with(base, ClassKey("gender", "male"), "-0.0000"),
		"a spread above 0.5":             with(base, SpreadKey("gender"), "0.5001"),
		"another top-tag threshold":      with(base, KeyDerived, "mood=0.7/0.6/0.5 top=0.2/5 cal=none"),
		"another calibration":            with(base, KeyDerived, "mood=0.7/0.6/0.5 top=0.1/5 cal=library:0123abcd"),
	}
	for name, file := range cases {
		if got, ok := Reuse(file, "v1", opt); ok {
			t.Errorf("%s: reused %v", name, got)
		}
	}
	if _, ok := Reuse(base, "", opt); ok {
		t.Error("reused for an empty version")
	}
	if _, ok := Reuse(base, "v1", Options{MoodStrict: 0.1, MoodRegular: 0.5}); ok {
		t.Error("reused under invalid options")
	}
}

func without(m map[string]string, k string) map[string]string {
	out := maps.Clone(m)
	delete(out, k)
	return out
}

func with(m map[string]string, k, v string) map[string]string {
	out := maps.Clone(m)
	out[k] = v
	return out
}

// A file tagged before the derived key existed counts as derived under the
// fixed defaults: reused under them (and given the key), not under others.
func TestReuseOfFilesWithoutDerived(t *testing.T) {
	preds := constPreds(2, 0.3, map[string]float32{"mood_happy": 0.8, "mood_sad": 0.9})
	opt := DefaultOptions()
	base, err := Derive(preds, "v1", opt)
	if err != nil {
		t.Fatal(err)
	}
	legacy := without(base, KeyDerived)
	got, ok := Reuse(legacy, "v1", opt)
	if !ok || got[KeyDerived] != Derivation(opt) {
		t.Fatalf("legacy file under the defaults: %v, %v", got, ok)
	}
	other := opt
	other.TopThreshold = 0.2 // the same lists: only derived tells them apart
	if _, ok := Reuse(legacy, "v1", other); ok {
		t.Error("legacy file reused under another top-tag threshold")
	}
	if _, ok := Reuse(base, "v1", other); ok {
		t.Error("file derived under the defaults reused under another top-tag threshold")
	}
}

// Tags derived under a calibration are reused under that calibration only.
func TestReuseUnderCalibration(t *testing.T) {
	preds := constPreds(2, 0.3, map[string]float32{"mood_happy": 0.55, "mood_sad": 0.9})
	cal := &Calibration{Version: "v1", Ranges: map[string]Range{ClassKey("mood_happy", "happy"): {Low: 0.1, High: 0.6}}}
	opt := DefaultOptions()
	opt.Calibration = cal
	got, err := Derive(preds, "v1", opt)
	if err != nil {
		t.Fatal(err)
	}
	// 0.55 scales to 0.9: strict under the calibration, loose without.
	if got[KeyMoodStrict] != "happy" {
		t.Fatalf("calibrated strict = %q", got[KeyMoodStrict])
	}
	if _, ok := Reuse(got, "v1", opt); !ok {
		t.Error("refused under its own calibration")
	}
	if _, ok := Reuse(got, "v1", DefaultOptions()); ok {
		t.Error("reused without the calibration")
	}
	other := *cal
	other.Ranges = map[string]Range{ClassKey("mood_happy", "happy"): {Low: 0.1, High: 0.61}}
	opt.Calibration = &other
	if _, ok := Reuse(got, "v1", opt); ok {
		t.Error("reused under another calibration")
	}
}
