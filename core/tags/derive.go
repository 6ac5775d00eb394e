package tags

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Tag keys (docs/design.md §9). A key is stored without the "nom:" namespace; the
// file writer adds it per format (TXXX "nom:<key>", MP4
// "----:com.apple.iTunes:nom:<key>", Vorbis comment "NOM_<KEY>").
//
// The names follow the original (Python) Nomarr, whose deterministic model
// key was "{label}_{backbone}_{model_stem}" with the label normalised from
// "non_*" to "not_*" (normalize_tag_label), and whose human tags were
// "mood-strict", "mood-regular", "mood-loose" and "nom_version".
const (
	// KeyVersion holds the model-set version (short hash of the model files).
	KeyVersion = "nom_version"
	// KeyTopTags holds the MSD top-50 tags whose pooled score reaches
	// Options.TopThreshold, highest first, at most Options.TopMax of them.
	KeyTopTags = "top_tags"
	// KeyMoodStrict, KeyMoodRegular and KeyMoodLoose hold the mood label
	// lists; strict ⊆ regular ⊆ loose.
	KeyMoodStrict  = "mood-strict"
	KeyMoodRegular = "mood-regular"
	KeyMoodLoose   = "mood-loose"
)

// Backbone is the backbone name used in the per-class keys.
const Backbone = "musicnn"

// ListSep joins the values of list tags (top tags, mood lists).
const ListSep = "; "

// Write modes (config write_mode, docs/design.md §9 step 5).
const (
	// ModeNone writes nothing into files.
	ModeNone = "none"
	// ModeMinimal writes the three mood lists, nom_version and derived.
	ModeMinimal = "minimal"
	// ModeFull writes every derived tag.
	ModeFull = "full"
)

// Label returns the key label of a class name: "non_*" becomes "not_*" as in
// the original system ("non_happy" → "not_happy"); other names are unchanged.
func Label(class string) string {
	if rest, ok := strings.CutPrefix(class, "non_"); ok {
		return "not_" + rest
	}
	return class
}

// ClassKey is the key of the pooled score of one class of one head:
// "<label>_musicnn_<head-stem>", e.g. "not_happy_musicnn_mood_happy".
func ClassKey(head, class string) string { return Label(class) + "_" + Backbone + "_" + head }

// SpreadKey is the key of a head's spread (standard deviation of its patch
// scores): "spread_musicnn_<head-stem>".
func SpreadKey(head string) string { return "spread_" + Backbone + "_" + head }

// Options tune Derive.
type Options struct {
	// TopThreshold is the least pooled MSD score a tag needs to be listed in
	// top_tags. MusiCNN's MSD sigmoid outputs are small for all but the few
	// tags that fit (a rock track scores rock ≈ 0.5, most other tags < 0.05),
	// so 0.1 keeps the fitting tags and drops the noise floor.
	TopThreshold float64
	// TopMax caps the number of top tags (0 lists none).
	TopMax int
	// MoodStrict, MoodRegular and MoodLoose are the least pooled score of a
	// mood class for the strict, regular and loose lists. They must satisfy
	// 0 ≤ MoodLoose ≤ MoodRegular ≤ MoodStrict ≤ 1. Loose starts at 0.5 (the
	// head says "more likely than not"); 0.6 and 0.7 ask for a clearer vote.
	MoodStrict, MoodRegular, MoodLoose float64
	// StandardTags (config standard_tags) are the standard fields written
	// next to the nom keys (Standard): FieldMood, FieldGenre, each at most
	// once; none writes only the nom keys.
	StandardTags []string
	// MoodTier (config mood_tier) is the mood list written into MOOD:
	// KeyMoodStrict, KeyMoodRegular or KeyMoodLoose. Needed when
	// StandardTags holds FieldMood.
	MoodTier string
	// Calibration (config calibration: library), when set, scales each
	// mood class's score by the library's range before the tiers apply;
	// nil applies them to the scores as they are.
	Calibration *Calibration
}

// DefaultOptions returns TopThreshold 0.1, TopMax 5, mood thresholds
// 0.7 (strict), 0.6 (regular), 0.5 (loose), and MOOD written from the
// regular list (DefaultStandardTags).
func DefaultOptions() Options {
	return Options{TopThreshold: 0.1, TopMax: 5, MoodStrict: 0.7, MoodRegular: 0.6, MoodLoose: 0.5,
		StandardTags: slices.Clone(DefaultStandardTags), MoodTier: KeyMoodRegular}
}

// Validate reports whether the options are usable.
func (o Options) Validate() error {
	in01 := func(name string, v float64) error {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return fmt.Errorf("tags: %s = %v, want a value in [0, 1]", name, v)
		}
		return nil
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"TopThreshold", o.TopThreshold}, {"MoodStrict", o.MoodStrict}, {"MoodRegular", o.MoodRegular}, {"MoodLoose", o.MoodLoose}} {
		if err := in01(c.name, c.v); err != nil {
			return err
		}
	}
	if o.TopMax < 0 {
		return fmt.Errorf("tags: TopMax = %d, want ≥ 0", o.TopMax)
	}
	if o.MoodLoose > o.MoodRegular || o.MoodRegular > o.MoodStrict {
		return fmt.Errorf("tags: mood thresholds strict %v, regular %v, loose %v: want strict ≥ regular ≥ loose",
			o.MoodStrict, o.MoodRegular, o.MoodLoose)
	}
	if err := o.Calibration.Validate(); err != nil {
		return err
	}
	return o.validateStandard()
}

// Mood is one mood label and the head class it is read from.
type Mood struct {
	Label string // the label in the mood lists, e.g. "happy"
	Head  string // head stem, e.g. "mood_happy"
	Class int    // index of the class in Classes[Head]
}

// Moods are the labels of the mood lists: the positive class of each of the
// five mood heads, in alphabetical order (the order of the lists).
var Moods = []Mood{
	{"aggressive", "mood_aggressive", 0},
	{"happy", "mood_happy", 0},
	{"party", "mood_party", 1},
	{"relaxed", "mood_relaxed", 1},
	{"sad", "mood_sad", 1},
}

// MoodConflicts are pairs of mood labels that contradict each other. When
// both reach a tier, the one that reaches the higher tier keeps its tier and
// the other is dropped from every list; when both reach the same highest
// tier, both are dropped (the models disagree, so neither is trusted). Since
// this is decided on each label's highest tier, before the lists are built,
// the lists stay nested.
var MoodConflicts = [][2]string{{"happy", "sad"}, {"aggressive", "relaxed"}}

// probTolerance is how far outside [0, 1] a score may stray by float rounding
// before Derive calls it not a probability (logits passed by mistake).
const probTolerance = 1e-4

// ErrEmpty is returned by Derive for predictions without patches.
var ErrEmpty = errors.New("tags: empty predictions")

// Keys returns every key Derive can produce, sorted. Readers of formats that
// lose the case or the '-' of a key (Vorbis comments) map names back with it.
func Keys() []string {
	keys := []string{KeyVersion, KeyDerived, KeyTopTags, KeyMoodStrict, KeyMoodRegular, KeyMoodLoose}
	for _, h := range Heads {
		c := Classes[h]
		keys = append(keys, ClassKey(h, c[0]), ClassKey(h, c[1]), SpreadKey(h))
	}
	sort.Strings(keys)
	return keys
}

// pooled is the mean and standard deviation of one column over the patches,
// the mean rounded to the 4 decimals that are written.
type pooled struct{ mean, spread float64 }

// pool pools column col of rows; rows are checked to have width w and hold
// probabilities.
func pool(name string, rows [][]float32, w int) ([]pooled, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: %s has no patches", ErrEmpty, name)
	}
	sum := make([]float64, w)
	for i, r := range rows {
		if len(r) != w {
			return nil, fmt.Errorf("tags: %s patch %d has %d scores, want %d", name, i, len(r), w)
		}
		for j, v := range r {
			x := float64(v)
			if math.IsNaN(x) || x < -probTolerance || x > 1+probTolerance {
				return nil, fmt.Errorf("tags: %s patch %d score %d = %v is not a probability in [0, 1]", name, i, j, v)
			}
			sum[j] += x
		}
	}
	n := float64(len(rows))
	out := make([]pooled, w)
	for j := range out {
		mean := sum[j] / n
		var ss float64
		for _, r := range rows {
			d := float64(r[j]) - mean
			ss += d * d
		}
		out[j] = pooled{mean: round4(clamp01(mean)), spread: round4(clamp01(math.Sqrt(ss / n)))}
	}
	return out, nil
}

func clamp01(x float64) float64 {
	switch {
	case x <= 0: // also turns -0 into +0, so no "-0.0000" is written
		return 0
	case x > 1:
		return 1
	}
	return x
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// Num formats a score as written: 4 decimals.
func Num(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }

// Derive pools a track's patch predictions (mean and spread per column) and
// returns its tags:
//
//   - "<label>_musicnn_<head-stem>" for each class of each of the nine heads:
//     the mean score, 4 decimals (ClassKey);
//   - "spread_musicnn_<head-stem>" for each head: the larger standard
//     deviation over the patches of its two class scores, 4 decimals;
//   - "top_tags": the MSD top-50 tags whose mean reaches opt.TopThreshold,
//     highest first (ties in MSD order), at most opt.TopMax, joined by "; ";
//     absent when none qualifies;
//   - "mood-strict", "mood-regular", "mood-loose": the labels of Moods whose
//     mean, scaled by opt.Calibration when set, reaches opt.MoodStrict /
//     MoodRegular / MoodLoose, conflicts
//     resolved as MoodConflicts says, alphabetical, joined by "; "; absent
//     when empty. Each label is placed at its highest tier and listed in that
//     tier and every looser one, so strict ⊆ regular ⊆ loose by construction;
//   - "nom_version": version;
//   - "derived": Derivation(opt), the options the lists were derived under.
//
// Comparisons use the rounded means, so a list agrees with the numbers
// written next to it. Errors: invalid options, an empty version, no patches,
// a missing or unknown head, rows of the wrong width, patch counts that
// differ between the backbone and the heads, scores that are not
// probabilities (NaN, or outside [0, 1] beyond rounding).
func Derive(p Predictions, version string, opt Options) (map[string]string, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if version == "" {
		return nil, errors.New("tags: empty model-set version")
	}
	msd, err := pool("MSD", p.MSD, len(MSDTop50))
	if err != nil {
		return nil, err
	}
	for h := range p.Heads {
		if _, ok := Classes[h]; !ok {
			return nil, fmt.Errorf("tags: unknown head %q", h)
		}
	}
	out := make(map[string]string, 3*len(Heads)+5)
	heads := make(map[string][]pooled, len(Heads))
	for _, h := range Heads {
		rows, ok := p.Heads[h]
		if !ok {
			return nil, fmt.Errorf("tags: head %q missing", h)
		}
		if len(rows) != len(p.MSD) {
			return nil, fmt.Errorf("tags: head %q has %d patches, the backbone %d", h, len(rows), len(p.MSD))
		}
		s, err := pool("head "+h, rows, 2)
		if err != nil {
			return nil, err
		}
		heads[h] = s
		c := Classes[h]
		out[ClassKey(h, c[0])] = Num(s[0].mean)
		out[ClassKey(h, c[1])] = Num(s[1].mean)
		out[SpreadKey(h)] = Num(max(s[0].spread, s[1].spread))
	}

	if top := topTags(msd, opt); len(top) > 0 {
		out[KeyTopTags] = strings.Join(top, ListSep)
	}
	strict, regular, loose := moodLists(heads, opt)
	for k, l := range map[string][]string{KeyMoodStrict: strict, KeyMoodRegular: regular, KeyMoodLoose: loose} {
		if len(l) > 0 {
			out[k] = strings.Join(l, ListSep)
		}
	}
	out[KeyVersion] = version
	out[KeyDerived] = Derivation(opt)
	return out, nil
}

func topTags(msd []pooled, opt Options) []string {
	idx := make([]int, 0, len(msd))
	for i, s := range msd {
		if s.mean >= opt.TopThreshold {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return msd[idx[a]].mean > msd[idx[b]].mean })
	if len(idx) > opt.TopMax {
		idx = idx[:opt.TopMax]
	}
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = MSDTop50[j]
	}
	return out
}

// Tiers of a mood label: none, loose, regular, strict.
const (
	tierNone = iota
	tierLoose
	tierRegular
	tierStrict
)

func moodLists(heads map[string][]pooled, opt Options) (strict, regular, loose []string) {
	tier := make(map[string]int, len(Moods))
	for _, m := range Moods {
		v := opt.Calibration.Scale(ClassKey(m.Head, Classes[m.Head][m.Class]), heads[m.Head][m.Class].mean)
		switch {
		case v >= opt.MoodStrict:
			tier[m.Label] = tierStrict
		case v >= opt.MoodRegular:
			tier[m.Label] = tierRegular
		case v >= opt.MoodLoose:
			tier[m.Label] = tierLoose
		default:
			tier[m.Label] = tierNone
		}
	}
	for _, c := range MoodConflicts {
		a, b := tier[c[0]], tier[c[1]]
		switch {
		case a == tierNone || b == tierNone:
		case a > b:
			tier[c[1]] = tierNone
		case b > a:
			tier[c[0]] = tierNone
		default:
			tier[c[0]], tier[c[1]] = tierNone, tierNone
		}
	}
	for _, m := range Moods { // alphabetical
		t := tier[m.Label]
		if t >= tierStrict {
			strict = append(strict, m.Label)
		}
		if t >= tierRegular {
			regular = append(regular, m.Label)
		}
		if t >= tierLoose {
			loose = append(loose, m.Label)
		}
	}
	return strict, regular, loose
}

// minimalKeys are the keys written in ModeMinimal.
var minimalKeys = []string{KeyMoodStrict, KeyMoodRegular, KeyMoodLoose, KeyVersion, KeyDerived}

// WriteSet selects from all (Derive's result) the tags that go into the
// audio file under write_mode mode:
//
//   - "none": nothing (an empty map). The caller must then not touch the file
//     at all (docs/design.md §9: tags are written "unless write_mode is none"); handing
//     the empty set to a writer would instead remove the nom tags already in
//     the file.
//   - "minimal": the mood lists (those present), nom_version and derived —
//     the tags a player uses for playlists, plus the model set and the
//     options that produced them, so a stale file can be recognised.
//   - "full": every tag of all.
//
// The result is a new map; all is not modified. An unknown mode is an error.
func WriteSet(all map[string]string, mode string) (map[string]string, error) {
	switch mode {
	case ModeNone:
		return map[string]string{}, nil
	case ModeMinimal:
		out := make(map[string]string, len(minimalKeys))
		for k, v := range all {
			if slices.Contains(minimalKeys, k) {
				out[k] = v
			}
		}
		return out, nil
	case ModeFull:
		out := make(map[string]string, len(all))
		for k, v := range all {
			out[k] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("tags: write mode %q: want %s, %s or %s", mode, ModeNone, ModeMinimal, ModeFull)
}
