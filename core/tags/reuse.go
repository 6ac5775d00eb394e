package tags

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// Reuse decides whether the tags of ours already in an audio file stand for
// an analysis by the model set of version, and returns them when they do.
// A library moved or renamed, a store lost and started afresh, a second host
// with its own store: each sees files it already tagged as new, and
// analysing them again costs seconds each for tags the file already holds.
//
// The file's tags are reused only when they are a complete, consistent
// result of Derive with these options:
//
//   - nom_version is version (another model set's scores are not these);
//   - derived is Derivation(opt): the lists were derived under these
//     thresholds and this calibration (a file without it, tagged before
//     the key existed, was derived under the fixed defaults, and counts
//     as derived under them);
//   - both class numbers and the spread of every head are there, each a
//     number in [0, 1] written as Num writes it, a spread at most 0.5 (a
//     set written by write_mode minimal lacks them, so it is analysed
//     again);
//   - the three mood lists are the ones the numbers give under opt (absent
//     means empty), so lists edited by hand, or derived under other
//     thresholds, are not taken for this analysis;
//   - top_tags, when there, lists distinct MSD tags, at most opt.TopMax.
//     The MSD scores behind it are not written, so a list derived under
//     another top-tag threshold cannot be told apart.
//
// The result holds the keys of Keys found in file with a value, nothing
// else (Derive leaves an empty list out too), and derived; ok is
// false (and the result nil) when any condition fails. file is not
// modified.
func Reuse(file map[string]string, version string, opt Options) (map[string]string, bool) {
	if version == "" || file[KeyVersion] != version || opt.Validate() != nil {
		return nil, false
	}
	derived := Derivation(opt)
	if d, ok := file[KeyDerived]; ok && d != derived || !ok && derived != legacyDerivation {
		return nil, false
	}
	heads := make(map[string][]pooled, len(Heads))
	for _, h := range Heads {
		c := Classes[h]
		s := make([]pooled, 2)
		for i, key := range []string{ClassKey(h, c[0]), ClassKey(h, c[1])} {
			v, ok := written(file[key])
			if !ok {
				return nil, false
			}
			s[i].mean = v
		}
		// A standard deviation of scores in [0, 1] is at most 0.5.
		if v, ok := written(file[SpreadKey(h)]); !ok || v > 0.5 {
			return nil, false
		}
		heads[h] = s
	}
	strict, regular, loose := moodLists(heads, opt)
	for k, l := range map[string][]string{KeyMoodStrict: strict, KeyMoodRegular: regular, KeyMoodLoose: loose} {
		if file[k] != strings.Join(l, ListSep) {
			return nil, false
		}
	}
	if top, ok := file[KeyTopTags]; ok {
		names := strings.Split(top, ListSep)
		if len(names) > opt.TopMax {
			return nil, false
		}
		for i, n := range names {
			if !slices.Contains(MSDTop50, n) || slices.Contains(names[:i], n) {
				return nil, false
			}
		}
	}
	out := make(map[string]string, 3*len(Heads)+5)
	for _, k := range Keys() {
		if v := file[k]; v != "" {
			out[k] = v
		}
	}
	out[KeyDerived] = derived
	return out, true
}

// written parses a score as Num writes it: a number in [0, 1] with exactly
// 4 decimals (never NaN, never -0, which clamp01 turns into 0).
func written(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0 && v <= 1) || math.Signbit(v) || Num(v) != s {
		return 0, false
	}
	return v, true
}
