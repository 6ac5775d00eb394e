package tags

import (
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestPercentileMatchesLinearInterpolation(t *testing.T) {
	s := []float64{0.1, 0.2, 0.4, 0.8}
	for _, c := range []struct{ p, want float64 }{
		{0, 0.1}, {100, 0.8}, {50, 0.3}, {5, 0.115}, {95, 0.74}, {33.333333333333336, 0.2},
	} {
		if got := Percentile(s, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Percentile(%v, %v) = %v, want %v", s, c.p, got, c.want)
		}
	}
	if got := Percentile([]float64{0.42}, 95); got != 0.42 {
		t.Errorf("one value: %v", got)
	}
}

var calKey = ClassKey("mood_happy", "happy")

// Scaling by a calibration keeps the order of scores, takes the
// library's 5th percentile to 0 and its 95th to 1, and stays in [0, 1].
func TestCalibrationScaleProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		score := rapid.Map(rapid.Float64Range(0, 1), round4)
		vs := rapid.SliceOfN(score, 1, 200).Draw(t, "scores")
		c, err := NewCalibration("v1", len(vs), map[string][]float64{calKey: vs})
		if err != nil {
			t.Fatal(err)
		}
		r := c.Ranges[calKey]
		s := slices.Clone(vs)
		sort.Float64s(s)
		if r.Low > r.High || r.Low < s[0] || r.High > s[len(s)-1] {
			t.Fatalf("range %v outside the scores [%v, %v]", r, s[0], s[len(s)-1])
		}
		a, b := score.Draw(t, "a"), score.Draw(t, "b")
		if a > b {
			a, b = b, a
		}
		sa, sb := c.Scale(calKey, a), c.Scale(calKey, b)
		if sa > sb {
			t.Fatalf("not monotone: %v → %v, %v → %v", a, sa, b, sb)
		}
		if sa < 0 || sb > 1 {
			t.Fatalf("outside [0, 1]: %v, %v", sa, sb)
		}
		if r.High-r.Low >= MinCalRange {
			if got := c.Scale(calKey, r.Low); got != 0 {
				t.Fatalf("p5 %v scales to %v", r.Low, got)
			}
			if got := c.Scale(calKey, r.High); math.Abs(got-1) > 1e-12 {
				t.Fatalf("p95 %v scales to %v", r.High, got)
			}
			if got := c.Scale(calKey, 0); got != 0 {
				t.Fatalf("0 scales to %v", got)
			}
			if got := c.Scale(calKey, 1); got != 1 {
				t.Fatalf("1 scales to %v", got)
			}
		} else if got := c.Scale(calKey, a); got != a {
			t.Fatalf("an empty range changed %v to %v", a, got)
		}
		// Other keys, and no calibration, keep the score.
		if got := c.Scale(ClassKey("mood_sad", "sad"), a); got != a {
			t.Fatalf("key without a range: %v → %v", a, got)
		}
		var none *Calibration
		if got := none.Scale(calKey, a); got != a {
			t.Fatalf("nil calibration: %v → %v", a, got)
		}
	})
}

// A library whose happy scores sit between 0.2 and 0.4 (a badly
// calibrated head) gets its top tracks into the strict list once
// calibrated, and none without.
func TestCalibrationMovesTiers(t *testing.T) {
	var vs []float64
	for i := range 101 {
		vs = append(vs, 0.2+0.002*float64(i))
	}
	c, err := NewCalibration("v1", len(vs), map[string][]float64{calKey: vs})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Ranges[calKey]; r.Low != 0.21 || r.High != 0.39 {
		t.Fatalf("range %+v, want [0.21, 0.39]", r)
	}
	preds := constPreds(1, 0.3, map[string]float32{"mood_happy": 0.38, "mood_sad": 0.9})
	plain, err := Derive(preds, "v1", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	opt := DefaultOptions()
	opt.Calibration = c
	cal, err := Derive(preds, "v1", opt)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain[KeyMoodLoose], "happy") {
		t.Errorf("uncalibrated loose = %q", plain[KeyMoodLoose])
	}
	if !strings.Contains(cal[KeyMoodStrict], "happy") {
		t.Errorf("calibrated strict = %q", cal[KeyMoodStrict])
	}
	if plain[calKey] != cal[calKey] {
		t.Errorf("calibration changed the written number: %q → %q", plain[calKey], cal[calKey])
	}
	if cal[KeyDerived] != "mood=0.7/0.6/0.5 top=0.1/5 cal=library:"+c.ID() {
		t.Errorf("derived = %q", cal[KeyDerived])
	}
}

func TestCalibrationRoundTripAndValidation(t *testing.T) {
	c, err := NewCalibration("v1", 3, map[string][]float64{calKey: {0.1, 0.5, 0.9}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseCalibration(s)
	if err != nil || back.ID() != c.ID() || back.Files != 3 {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	for name, bad := range map[string]string{
		"not JSON":      "{",
		"no version":    `{"ranges":{}}`,
		"unknown key":   `{"version":"v","ranges":{"polka":{"p5":0,"p95":1}}}`,
		"low above":     `{"version":"v","ranges":{"happy_musicnn_mood_happy":{"p5":0.6,"p95":0.5}}}`,
		"outside [0,1]": `{"version":"v","ranges":{"happy_musicnn_mood_happy":{"p5":0,"p95":1.5}}}`,
	} {
		if _, err := ParseCalibration(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := NewCalibration("v1", 1, map[string][]float64{"top_tags": {0.5}}); err == nil {
		t.Error("a key that is not a class key accepted")
	}
	if _, err := NewCalibration("v1", 1, map[string][]float64{calKey: {math.NaN()}}); err == nil {
		t.Error("NaN accepted")
	}
	other, _ := NewCalibration("v2", 3, map[string][]float64{calKey: {0.1, 0.5, 0.9}})
	if other.ID() == c.ID() {
		t.Error("another model set's calibration has the same ID")
	}
}

// A class whose library scores barely differ is not stretched: happy at
// 0.0001–0.0002 over the library must not make a file scoring 0.0002
// happy for certain.
func TestNarrowRangeKeepsScores(t *testing.T) {
	key := ClassKey("mood_happy", "happy")
	var vs []float64
	for i := range 40 {
		vs = append(vs, 0.0001*float64(1+i%2))
	}
	c, err := NewCalibration("v1", len(vs), map[string][]float64{key: vs})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Scale(key, 0.0002); got != 0.0002 {
		t.Fatalf("a range of %v scaled 0.0002 to %v", c.Ranges[key], got)
	}
	wide := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}
	c, err = NewCalibration("v1", len(wide), map[string][]float64{key: wide})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Scale(key, 0.9); got != 1 {
		t.Fatalf("a range of %v scaled its top score to %v, want 1", c.Ranges[key], got)
	}
}
