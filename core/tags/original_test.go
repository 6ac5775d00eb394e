package tags

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// ---------------------------------------------------------------------
// Comparison oracle: the original Nomarr's calibration (Python, GitHub
// xiaden/nomarr), transcribed for this test only; docs/decisions/
// tag-writing.md states the rule and where each part comes from. It is
// not used by Nomarr.
//
//   - origPercentileLinear: generate_minmax_calibration (first
//     generation): numpy.percentile(values, q), linear interpolation,
//     per label over the stored scores; labels with fewer than
//     origMinSamples scores are not calibrated.
//   - origPercentileHistogram: generate_calibration_from_histogram
//     (later generation): 10000 bins of width 0.0001 over [0, 1], a score
//     in bin min(floor(v/0.0001), 9999); the percentile is the lower edge
//     of the first bin whose cumulative count reaches q·n.
//   - origApply: apply_minmax_calibration: (v − p5)/(p95 − p5) clamped to
//     [0, 1]; p95 ≤ p5 keeps v.
//   - origTier: write_calibrated_tags_wf: the tier of a calibrated score,
//     strict ≥ 0.7, regular ≥ 0.5, loose ≥ 0.3.
//   - origMoodLists: aggregate_mood_tiers: a pair of opposite moods that
//     both reach a tier (any tier) is left out entirely; the lists are
//     nested (strict ⊂ regular ⊂ loose).
// ---------------------------------------------------------------------

const origMinSamples = 1000

var origTiers = [3]float64{0.7, 0.5, 0.3} // strict, regular, loose

func origPercentileLinear(vals []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(vals))
	h := (float64(len(s)) - 1) * q / 100
	lo := math.Floor(h)
	hi := math.Ceil(h)
	return s[int(lo)] + (h-lo)*(s[int(hi)]-s[int(lo)])
}

func origPercentileHistogram(vals []float64, q float64) float64 {
	const width = 1.0 / 10000
	counts := map[int]int{}
	for _, v := range vals {
		counts[min(max(int(math.Floor(v/width)), 0), 9999)]++
	}
	bins := make([]int, 0, len(counts))
	for b := range counts {
		bins = append(bins, b)
	}
	sort.Ints(bins)
	cum := 0
	for _, b := range bins {
		cum += counts[b]
		if float64(cum) >= float64(len(vals))*q/100 {
			return float64(b) * width
		}
	}
	return 1
}

func origApply(v, p5, p95 float64) float64 {
	if p95 <= p5 {
		return v
	}
	return max(0, min(1, (v-p5)/(p95-p5)))
}

// origTier is 3 (strict), 2 (regular), 1 (loose) or 0.
func origTier(v float64) int {
	for i, t := range origTiers {
		if v >= t {
			return 3 - i
		}
	}
	return 0
}

func origMoodLists(tier map[string]int) (strict, regular, loose []string) {
	out := map[string]int{}
	for l, t := range tier {
		out[l] = t
	}
	for _, c := range MoodConflicts {
		if tier[c[0]] > 0 && tier[c[1]] > 0 {
			out[c[0]], out[c[1]] = 0, 0
		}
	}
	for _, m := range Moods {
		t := out[m.Label]
		if t >= 3 {
			strict = append(strict, m.Label)
		}
		if t >= 2 {
			regular = append(regular, m.Label)
		}
		if t >= 1 {
			loose = append(loose, m.Label)
		}
	}
	return strict, regular, loose
}

// ---------------------------------------------------------------------

// nomarrConflicts applies MoodConflicts as moodLists does to tiers (3
// strict … 0 none): of a pair both tiered, the lower tier is dropped,
// both when equal. The result has no conflicting pair left, so the
// original's rule then changes nothing.
func nomarrConflicts(tier map[string]int) map[string]int {
	out := maps.Clone(tier)
	for _, c := range MoodConflicts {
		a, b := tier[c[0]], tier[c[1]]
		switch {
		case a == 0 || b == 0:
		case a > b:
			out[c[1]] = 0
		case b > a:
			out[c[0]] = 0
		default:
			out[c[0]], out[c[1]] = 0, 0
		}
	}
	return out
}

// originalLibrary is a library of stored scores, 4 decimals as written:
// per file, each head's two class scores (they sum to 1). The mood heads
// are skewed the way MusiCNN's are on real libraries (happy mostly low,
// relaxed mostly high, party in a narrow band, aggressive bimodal), and
// a spoken clip scores aggressive 0.86 and relaxed 0.93 at once.
func originalLibrary(files int) []map[string][2]float64 {
	r := rand.New(rand.NewPCG(25, 2020))
	gen := map[string]func() float64{
		"mood_happy":      func() float64 { return math.Pow(r.Float64(), 3) },
		"mood_sad":        func() float64 { return 0.2 + 0.6*r.Float64() },
		"mood_relaxed":    func() float64 { return 1 - math.Pow(r.Float64(), 3) },
		"mood_party":      func() float64 { return 0.45 + 0.1*r.Float64() },
		"mood_aggressive": func() float64 { return map[bool]float64{true: 0.1, false: 0.8}[r.IntN(3) > 0] + 0.15*r.Float64() },
	}
	lib := make([]map[string][2]float64, files)
	for i := range lib {
		f := map[string][2]float64{}
		for _, h := range Heads {
			g, ok := gen[h]
			if !ok {
				g = r.Float64
			}
			p := round4(g())
			// The score of the class Moods reads is p; the other 1 − p.
			c := 0
			for _, m := range Moods {
				if m.Head == h {
					c = m.Class
				}
			}
			var s [2]float64
			s[c], s[1-c] = p, round4(1-p)
			f[h] = s
		}
		lib[i] = f
	}
	lib[0]["mood_aggressive"] = [2]float64{0.86, 0.14}
	lib[0]["mood_relaxed"] = [2]float64{0.07, 0.93}
	return lib
}

// TestCalibrationAgainstOriginal feeds the same stored scores to
// NewCalibration and moodLists and to the original Nomarr's rule (the
// oracle above), and checks that they agree except where the rules
// differ on purpose, each difference counted and explained:
//
//   - the ranges equal the original's first generation (NumPy's linear
//     percentiles) rounded to 4 decimals, and lie within one score step
//     (plus its 0.0001 bin) of its later histogram generation;
//   - under the original's thresholds (0.7/0.5/0.3) every tier is the
//     original's, except where a scaled score lies within the ranges'
//     4-decimal rounding of a threshold; the original's tiers under
//     Nomarr's conflict rule are Nomarr's lists exactly;
//   - under the original's conflict rule the lists differ only in files
//     where both moods of a pair reach different tiers: Nomarr keeps the
//     higher one, the original drops both.
func TestCalibrationAgainstOriginal(t *testing.T) {
	const files = 1500 // ≥ origMinSamples, so the original calibrates every label
	lib := originalLibrary(files)
	scores := map[string][]float64{}
	for _, f := range lib {
		for _, h := range Heads {
			c := Classes[h]
			scores[ClassKey(h, c[0])] = append(scores[ClassKey(h, c[0])], f[h][0])
			scores[ClassKey(h, c[1])] = append(scores[ClassKey(h, c[1])], f[h][1])
		}
	}
	ours, err := NewCalibration("v", files, scores)
	if err != nil {
		t.Fatal(err)
	}

	// Ranges.
	origRange, histRange := map[string][2]float64{}, map[string][2]float64{}
	var maxHist float64
	for k, vs := range scores {
		if len(vs) < origMinSamples {
			t.Fatalf("%s: %d scores, the original would not calibrate it", k, len(vs))
		}
		lin := [2]float64{origPercentileLinear(vs, 5), origPercentileLinear(vs, 95)}
		origRange[k] = lin
		histRange[k] = [2]float64{origPercentileHistogram(vs, 5), origPercentileHistogram(vs, 95)}
		got := ours.Ranges[k]
		if got.Low != round4(lin[0]) || got.High != round4(lin[1]) {
			t.Errorf("%s: range [%v, %v], the original's linear percentiles [%v, %v]", k, got.Low, got.High, lin[0], lin[1])
		}
		s := slices.Sorted(slices.Values(vs))
		for i, q := range []float64{5, 95} {
			h := origPercentileHistogram(vs, q)
			r := q / 100 * float64(len(s)-1)
			nearest := int(math.Ceil(q/100*float64(len(s)))) - 1 // the histogram's rank
			lo := s[min(nearest, int(math.Floor(r)))] - 1e-4
			hi := s[max(nearest, int(math.Ceil(r)))]
			our := []float64{got.Low, got.High}[i]
			if h < lo-1e-12 || h > hi+1e-12 || our < lo || our > hi+5e-5 {
				t.Errorf("%s p%v: ours %v, histogram %v, outside the scores' step [%v, %v]", k, q, our, h, lo, hi)
			}
			maxHist = max(maxHist, math.Abs(our-h))
		}
	}

	// Tiers and lists, per file.
	opt := DefaultOptions()
	opt.MoodStrict, opt.MoodRegular, opt.MoodLoose = origTiers[0], origTiers[1], origTiers[2]
	opt.Calibration = ours
	var sameRule, conflicts, tierFlips, flipLists, histFlips int
	flipped := map[int]bool{}
	for i, f := range lib {
		heads := map[string][]pooled{}
		tier := map[string]int{}
		for _, h := range Heads {
			heads[h] = []pooled{{mean: f[h][0]}, {mean: f[h][1]}}
		}
		for _, m := range Moods {
			k := ClassKey(m.Head, Classes[m.Head][m.Class])
			v := f[m.Head][m.Class]
			tier[m.Label] = origTier(origApply(v, origRange[k][0], origRange[k][1]))
			if origTier(origApply(v, histRange[k][0], histRange[k][1])) != tier[m.Label] {
				histFlips++
			}
			// Our rounded range gives the same tier, unless the score
			// lies within the rounding of a threshold.
			if ot := origTier(ours.Scale(k, v)); ot != tier[m.Label] {
				a, b := ours.Scale(k, v), origApply(v, origRange[k][0], origRange[k][1])
				// Each end of the range moves by at most 0.00005.
				reach := 1e-4 / (origRange[k][1] - origRange[k][0])
				if math.Abs(a-b) > reach || !slices.ContainsFunc(origTiers[:], func(th float64) bool { return min(a, b) < th && th <= max(a, b) }) {
					t.Errorf("file %d %s: tier %d, the original's %d: scaled %v, the original %v", i, m.Label, ot, tier[m.Label], a, b)
				}
				tierFlips++
				flipped[i] = true
				t.Logf("file %d %s (score %v): scaled %.5f, the original %.5f: across a threshold by the ranges' rounding", i, m.Label, v, a, b)
			}
		}
		gs, gr, gl := moodLists(heads, opt)
		if flipped[i] {
			flipLists++
			continue
		}
		// The original's tiers under Nomarr's conflict rule are Nomarr's
		// lists exactly: the calibration and the tiers agree.
		ns, nr, nl := origMoodLists(nomarrConflicts(tier))
		if !slices.Equal(gs, ns) || !slices.Equal(gr, nr) || !slices.Equal(gl, nl) {
			t.Errorf("file %d: lists %q/%q/%q, the original's tiers %v give %q/%q/%q", i, gs, gr, gl, tier, ns, nr, nl)
		}
		ws, wr, wl := origMoodLists(tier)
		if slices.Equal(gs, ws) && slices.Equal(gr, wr) && slices.Equal(gl, wl) {
			sameRule++
			continue
		}
		// Under the original's conflict rule only a pair both tiered, at
		// different tiers, may differ.
		explained := false
		for _, c := range MoodConflicts {
			a, b := tier[c[0]], tier[c[1]]
			if a > 0 && b > 0 && a != b {
				explained = true
			}
		}
		if !explained {
			t.Errorf("file %d: lists %q/%q/%q, the original's %q/%q/%q; tiers %v", i, gs, gr, gl, ws, wr, wl, tier)
			continue
		}
		conflicts++
	}
	if lib0 := lib[0]; origTier(origApply(lib0["mood_aggressive"][0], origRange[ClassKey("mood_aggressive", "aggressive")][0],
		origRange[ClassKey("mood_aggressive", "aggressive")][1])) == 0 {
		t.Error("the spoken clip's aggressive 0.86 reaches no tier: the fixture does not exercise a conflict")
	}
	t.Logf("%d files: lists equal to the original's in %d, differing by the conflict rule in %d and by the ranges' rounding in %d "+
		"(%d of %d tiers across a threshold); ranges equal to NumPy's rounded to 4 decimals, at most %.4f from the histogram generation's, "+
		"whose ranges give %d other tiers than NumPy's",
		files, sameRule, conflicts, flipLists, tierFlips, files*len(Moods), maxHist, histFlips)
	if conflicts == 0 {
		t.Error("no file exercises the conflict rule: the comparison says nothing about it")
	}
}

// TestOriginalOracle pins the oracle to the original's documented
// behaviour on small inputs, so that a mistake in the transcription does
// not pass the comparison unnoticed.
func TestOriginalOracle(t *testing.T) {
	vs := []float64{0.1, 0.2, 0.3, 0.4, 0.5}
	// numpy.percentile([.1,.2,.3,.4,.5], 5) = 0.1 + 0.2·0.1 = 0.12; 95 → 0.48.
	if p := origPercentileLinear(vs, 5); math.Abs(p-0.12) > 1e-12 {
		t.Errorf("linear p5 = %v, want 0.12", p)
	}
	if p := origPercentileLinear(vs, 95); math.Abs(p-0.48) > 1e-12 {
		t.Errorf("linear p95 = %v, want 0.48", p)
	}
	// Histogram: cumulative 1 ≥ 0.25 at the first score's bin. 0.1/0.0001
	// is 1000 in floating point, 0.29/0.0001 2899.9999999999995: bin 2899,
	// whose lower edge is 0.2899.
	if p := origPercentileHistogram(vs, 5); math.Abs(p-0.1) > 1e-12 {
		t.Errorf("histogram p5 = %v, want 0.1", p)
	}
	if p := origPercentileHistogram([]float64{0.29, 0.5}, 5); math.Abs(p-0.2899) > 1e-12 {
		t.Errorf("histogram p5 of 0.29 = %v, want 0.2899 (its floating-point bin)", p)
	}
	if p := origPercentileHistogram([]float64{1, 1}, 95); math.Abs(p-0.9999) > 1e-12 {
		t.Errorf("histogram p95 of 1.0 = %v, want 0.9999 (the last bin)", p)
	}
	if math.Abs(origApply(0.3, 0.2, 0.4)-0.5) > 1e-12 || origApply(0.1, 0.2, 0.4) != 0 || origApply(0.9, 0.2, 0.4) != 1 || origApply(0.3, 0.4, 0.4) != 0.3 {
		t.Error("origApply")
	}
	s, r, l := origMoodLists(map[string]int{"happy": 3, "sad": 1, "party": 2, "relaxed": 1})
	if !slices.Equal(s, nil) || !slices.Equal(r, []string{"party"}) || !slices.Equal(l, []string{"party", "relaxed"}) {
		t.Errorf("origMoodLists = %q %q %q", s, r, l)
	}
}
