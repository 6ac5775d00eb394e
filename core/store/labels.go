package store

import (
	"slices"
	"strings"
)

// LabelTop is the prefix of a top-tag label ("top:rock"); a mood label's
// prefix is its tier ("strict:happy").
const LabelTop = "top"

// MoodLabel is the label of mood (lower case) in the list of tier.
func MoodLabel(tier, mood string) string { return tier + ":" + mood }

// GenreLabel is the label of a top tag (lower case).
func GenreLabel(genre string) string { return LabelTop + ":" + genre }

// LabelLists are the stored lists Labels reads, by the prefix their
// labels take (before a colon).
var LabelLists = []struct{ Prefix, Key string }{
	{TierStrict, MoodKey(TierStrict)},
	{TierRegular, MoodKey(TierRegular)},
	{TierLoose, MoodKey(TierLoose)},
	{LabelTop, tagTopTags},
}

// Labels are the labels of a file's stored tags that a BrowseQuery's mood
// and genre filters look for: MoodLabel of each label of each tier's mood
// list, then GenreLabel of each top tag; each lower-cased (ASCII) and
// trimmed, empty ones dropped, each once, in the order the lists give
// them. A file matches q's mood filter (q normalized) exactly when its
// Labels hold MoodLabel(q.MoodTier, q.Mood), and its genre filter when
// they hold GenreLabel(q.Genre) (QueryLabels): the rule of BrowseMatch,
// kept where an index can serve it. Never nil.
func Labels(tags map[string]string) []string {
	out := []string{}
	for _, l := range LabelLists {
		for _, v := range listLabels(tags[l.Key]) {
			out = append(out, l.Prefix+":"+v)
		}
	}
	return out
}

// QueryLabels are the labels a file's Labels must all hold to match q's
// mood and genre filters (q normalized); none when q has neither.
func QueryLabels(q BrowseQuery) []string {
	var out []string
	if q.Mood != "" {
		out = append(out, MoodLabel(q.MoodTier, q.Mood))
	}
	if q.Genre != "" {
		out = append(out, GenreLabel(q.Genre))
	}
	return out
}

// listLabels are the labels of a stored list: split (List), lower-cased
// (ASCII), empty ones dropped, each once.
func listLabels(list string) []string {
	var out []string
	for _, l := range List(asciiLower(list)) {
		if l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// AddLabel counts n files listing label (a Labels label): a mood tier's
// or the top tags'. A label of no known prefix is not counted.
func (s *TagStats) AddLabel(label string, n int) {
	prefix, l, ok := strings.Cut(label, ":")
	switch {
	case !ok || l == "":
		return
	case prefix == LabelTop:
		s.TopTags[l] += n
	case prefix == TierStrict || prefix == TierRegular || prefix == TierLoose:
		m := s.Moods[prefix]
		if m == nil {
			m = map[string]int{}
			s.Moods[prefix] = m
		}
		m[l] += n
	}
}
