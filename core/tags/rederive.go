package tags

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrNotRederivable: stored tags that Rederive cannot work from (no
// model-set version, a head's numbers missing or not as Num writes them).
// Such a file needs a full analysis.
var ErrNotRederivable = errors.New("tags: stored tags cannot be re-derived")

// Rederive derives again, under opt, the tags of stored, the tags a
// completion stored (Derive's result under other options), without the
// models: the mood lists from the stored class numbers (thresholds and
// calibration of opt), top_tags from the stored list, and derived.
//
// The MSD scores behind top_tags are not stored, so the list can only be
// cut: it is kept as stored, at most opt.TopMax long. That is the list
// opt gives when stored was derived under opt's top-tag threshold and a
// count at least opt.TopMax, or when the stored list is shorter than its
// own count (every tag over the threshold is in it). Otherwise (another
// threshold, or a longer count than the stored list was cut to) derived
// names the threshold and count the list does follow — the stored
// threshold, the lower of the two counts — so that it never claims
// options the list was not derived under.
//
// The result holds the keys of Keys with a value, as Derive writes them;
// the numbers and nom_version are stored's. stored is not modified.
// ErrNotRederivable when stored lacks nom_version or a head's numbers.
func Rederive(stored map[string]string, opt Options) (map[string]string, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if stored[KeyVersion] == "" {
		return nil, fmt.Errorf("%w: no %s", ErrNotRederivable, KeyVersion)
	}
	heads := make(map[string][]pooled, len(Heads))
	for _, h := range Heads {
		c := Classes[h]
		s := make([]pooled, 2)
		for i, key := range []string{ClassKey(h, c[0]), ClassKey(h, c[1])} {
			v, ok := written(stored[key])
			if !ok {
				return nil, fmt.Errorf("%w: %s = %q", ErrNotRederivable, key, stored[key])
			}
			s[i].mean = v
		}
		heads[h] = s
	}
	out := make(map[string]string, 3*len(Heads)+5)
	for _, k := range Keys() {
		if v := stored[k]; v != "" {
			out[k] = v
		}
	}
	delete(out, KeyMoodStrict)
	delete(out, KeyMoodRegular)
	delete(out, KeyMoodLoose)
	strict, regular, loose := moodLists(heads, opt)
	for k, l := range map[string][]string{KeyMoodStrict: strict, KeyMoodRegular: regular, KeyMoodLoose: loose} {
		if len(l) > 0 {
			out[k] = strings.Join(l, ListSep)
		}
	}
	follows := opt
	var top []string
	if v := stored[KeyTopTags]; v != "" {
		top = strings.Split(v, ListSep)
	}
	was := storedTop(stored)
	if len(top) > opt.TopMax {
		top = top[:opt.TopMax]
	}
	exact := was.threshold == opt.TopThreshold && (opt.TopMax <= was.max || len(top) < was.max)
	if !exact {
		follows.TopThreshold, follows.TopMax = was.threshold, min(was.max, opt.TopMax)
	}
	delete(out, KeyTopTags)
	if len(top) > 0 {
		out[KeyTopTags] = strings.Join(top, ListSep)
	}
	out[KeyDerived] = Derivation(follows)
	return out, nil
}

// topDerivation is the top-tag threshold and count a list was derived
// under.
type topDerivation struct {
	threshold float64
	max       int
}

// storedTop reads the top-tag threshold and count from stored's derived
// (Derivation's "top=T/N"); a file without it, or with one that does not
// parse, counts as derived under the fixed defaults, as Reuse takes it.
func storedTop(stored map[string]string) topDerivation {
	def := DefaultOptions()
	d := topDerivation{threshold: def.TopThreshold, max: def.TopMax}
	for _, f := range strings.Fields(stored[KeyDerived]) {
		v, ok := strings.CutPrefix(f, "top=")
		if !ok {
			continue
		}
		t, n, ok := strings.Cut(v, "/")
		if !ok {
			return d
		}
		th, err1 := strconv.ParseFloat(t, 64)
		mx, err2 := strconv.Atoi(n)
		if err1 != nil || err2 != nil || mx < 0 {
			return d
		}
		return topDerivation{threshold: th, max: mx}
	}
	return d
}

// NeedsRetag reports whether a retag under opt would change stored, the
// tags a completion stored: Rederive's result differs from them (other
// mood lists, a shorter top_tags, another derived). Stored tags Rederive
// cannot work from need a full analysis, not a retag: false.
func NeedsRetag(stored map[string]string, opt Options) bool {
	out, err := Rederive(stored, opt)
	if err != nil {
		return false
	}
	for k, v := range out {
		if stored[k] != v {
			return true
		}
	}
	for _, k := range []string{KeyMoodStrict, KeyMoodRegular, KeyMoodLoose, KeyTopTags} {
		if _, ok := out[k]; !ok && stored[k] != "" {
			return true
		}
	}
	return false
}
