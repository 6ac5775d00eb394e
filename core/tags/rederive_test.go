package tags

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// drawOptions draws tag options: mood thresholds in order, a top-tag
// threshold from a few values, a count, and sometimes a calibration of
// the mood classes.
func drawOptions(t *rapid.T, name string) Options {
	opt := DefaultOptions()
	th := []float64{rapid.Float64Range(0, 1).Draw(t, name+"a"), rapid.Float64Range(0, 1).Draw(t, name+"b"), rapid.Float64Range(0, 1).Draw(t, name+"c")}
	slices.Sort(th)
	opt.MoodLoose, opt.MoodRegular, opt.MoodStrict = th[0], th[1], th[2]
	opt.TopThreshold = rapid.SampledFrom([]float64{0.05, 0.1, 0.3}).Draw(t, name+"top")
	opt.TopMax = rapid.IntRange(0, 8).Draw(t, name+"max")
	if rapid.Bool().Draw(t, name+"cal") {
		cal := &Calibration{Version: "v1", Ranges: map[string]Range{}}
		for _, m := range Moods {
			lo := rapid.Float64Range(0, 0.5).Draw(t, name+m.Label+"lo")
			hi := rapid.Float64Range(lo, 1).Draw(t, name+m.Label+"hi")
			cal.Ranges[ClassKey(m.Head, Classes[m.Head][m.Class])] = Range{Low: round4(lo), High: round4(hi)}
		}
		opt.Calibration = cal
	}
	return opt
}

// A retag gives what a full analysis under the new options gives, as long
// as the top-tag list can follow them (the same threshold, a count no
// longer than the stored one's): the mood lists, top_tags and derived
// all equal Derive's. The numbers and nom_version stay the stored ones.
func TestRederiveEqualsDerive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawPredictions(t, 4, false)
		was := drawOptions(t, "was")
		now := drawOptions(t, "now")
		now.TopThreshold = was.TopThreshold
		now.TopMax = rapid.IntRange(0, was.TopMax).Draw(t, "max")
		stored, err := Derive(p, "v1", was)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Derive(p, "v1", now)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Rederive(stored, now)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Fatalf("Rederive(Derive(was), now) = %v\nDerive(now) = %v", got, want)
		}
		if NeedsRetag(got, now) {
			t.Fatal("a retag's own result needs another retag")
		}
		if _, ok := Reuse(got, "v1", now); !ok {
			t.Fatal("Reuse refuses a retag's result under the options it followed")
		}
		if NeedsRetag(stored, now) != !maps.Equal(stored, want) {
			t.Fatalf("NeedsRetag(stored, now) = %v, but stored and Derive(now) equal: %v", NeedsRetag(stored, now), maps.Equal(stored, want))
		}
	})
}

// Under another top-tag threshold, or a count the stored list was cut
// to, the list stays a prefix of the stored one and derived names the
// threshold and count it follows: never the options it could not apply.
// The result is a fixed point: a second retag changes nothing.
func TestRederiveTopTagsCannotFollow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawPredictions(t, 4, false)
		was := drawOptions(t, "was")
		now := drawOptions(t, "now")
		stored, err := Derive(p, "v1", was)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Rederive(stored, now)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(stored[KeyTopTags], got[KeyTopTags]) || len(List(got[KeyTopTags])) > now.TopMax {
			t.Fatalf("top_tags %q from stored %q, count %d", got[KeyTopTags], stored[KeyTopTags], now.TopMax)
		}
		for _, k := range []string{KeyMoodStrict, KeyMoodRegular, KeyMoodLoose} {
			want, _ := Derive(p, "v1", now)
			if got[k] != want[k] {
				t.Fatalf("%s = %q, Derive gives %q", k, got[k], want[k])
			}
		}
		follows := now
		if was.TopThreshold != now.TopThreshold || now.TopMax > was.TopMax && len(List(stored[KeyTopTags])) == was.TopMax {
			follows.TopThreshold, follows.TopMax = was.TopThreshold, min(was.TopMax, now.TopMax)
		}
		if got[KeyDerived] != Derivation(follows) {
			t.Fatalf("derived = %q, want %q", got[KeyDerived], Derivation(follows))
		}
		again, err := Rederive(got, now)
		if err != nil || !maps.Equal(again, got) {
			t.Fatalf("a second retag = %v, %v; want %v", again, err, got)
		}
	})
}

// List splits a list tag (test helper).
func List(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ListSep)
}

// A new mood threshold moves a label to another tier; the stored numbers
// are what the lists follow.
func TestRederiveMovesMoodTiers(t *testing.T) {
	stored, err := Derive(constPreds(2, 0.3, map[string]float32{"mood_happy": 0.65, "mood_sad": 0.9}), "v1", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if stored[KeyMoodRegular] != "happy" || stored[KeyMoodStrict] != "" {
		t.Fatalf("stored lists: %v", stored)
	}
	opt := DefaultOptions()
	opt.MoodStrict, opt.MoodRegular, opt.MoodLoose = 0.6, 0.5, 0.4
	got, err := Rederive(stored, opt)
	if err != nil {
		t.Fatal(err)
	}
	if got[KeyMoodStrict] != "happy" || got[KeyDerived] != "mood=0.6/0.5/0.4 top=0.1/5 cal=none" {
		t.Fatalf("retag: strict %q, derived %q", got[KeyMoodStrict], got[KeyDerived])
	}
	if got[ClassKey("mood_happy", "happy")] != stored[ClassKey("mood_happy", "happy")] {
		t.Fatal("a number changed")
	}
	if !NeedsRetag(stored, opt) || NeedsRetag(stored, DefaultOptions()) {
		t.Fatal("NeedsRetag: want true under the new thresholds, false under the old")
	}
}

// Stored tags without a version or a head's numbers (written by hand, cut
// short) are not re-derived: the file needs a full analysis.
func TestRederiveRefusesIncompleteTags(t *testing.T) {
	stored, err := Derive(constPreds(2, 0.3, nil), "v1", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(map[string]string){
		"no version":      func(m map[string]string) { delete(m, KeyVersion) },
		"no number":       func(m map[string]string) { delete(m, ClassKey("mood_sad", "sad")) },
		"number unparsed": func(m map[string]string) { m[ClassKey("danceability", "danceable")] = "0.5" },
	} {
		m := maps.Clone(stored)
		edit(m)
		if _, err := Rederive(m, DefaultOptions()); !errors.Is(err, ErrNotRederivable) {
			t.Errorf("%s: err = %v, want ErrNotRederivable", name, err)
		}
		if NeedsRetag(m, DefaultOptions()) {
			t.Errorf("%s: NeedsRetag = true", name)
		}
	}
}
