package store

import (
	"context"
	"math"
	"strconv"
	"strings"
)

// Browser is the read side the web pages use: one filtered, sorted page
// of the library, one file's stored tags, and summaries of every file's
// tags. Every store answers the same query alike (BrowseMatch, BrowseLess;
// the contract suite's Browse tests); how fast is the adapter's concern
// (SQLite keeps side tables and indexes for it).
type Browser interface {
	// Browse returns the files that match q (BrowseMatch), ordered by
	// BrowseLess, from q.Offset, at most q.Limit of them (q.Limit <= 0:
	// BrowseDefaultLimit), and how many match in all.
	Browse(ctx context.Context, q BrowseQuery) (BrowsePage, error)
	// FileTags returns the tags stored by the file's last completion
	// (empty when it was never completed); ErrNotFound when the store has
	// no file of that key.
	FileTags(ctx context.Context, key string) (map[string]string, error)
	// TagStats summarises every file's stored tags (TagStats).
	TagStats(ctx context.Context) (TagStats, error)
}

// Browse limits.
const (
	BrowseDefaultLimit = 50
	BrowseMaxLimit     = 500
	// HistogramBins is the number of equal bins TagStats splits [0, 1]
	// into; a score of exactly 1 counts in the last.
	HistogramBins = 20
)

// Statuses a BrowseQuery filters on: the classes of ClassOf, with
// "missing" for ClassInvalid (files not valid: gone at the last scan, or
// empty).
const (
	StatusTagged  = ClassTagged
	StatusFailed  = ClassFailed
	StatusPending = ClassPending
	StatusMissing = "missing"
)

// Mood tiers: the stored mood lists a BrowseQuery.Mood is looked up in.
const (
	TierStrict  = "strict"
	TierRegular = "regular"
	TierLoose   = "loose"
)

// Tag keys the Browser reads. The mood lists and top tags are lists joined
// by ListSep.
const (
	tagTopTags = "top_tags"
	ListSep    = "; "
)

// MoodKey is the stored tag holding the mood list of tier ("mood-strict").
func MoodKey(tier string) string { return "mood-" + tier }

// ScoreKey reports whether a stored tag key is a score the Browser
// indexes: the pooled score of a head's class ("happy_musicnn_mood_happy"),
// not its negative class ("not_happy_…", "non_…") nor its spread.
func ScoreKey(k string) bool {
	return strings.Contains(k, "_musicnn_") && !strings.HasPrefix(k, "not_") &&
		!strings.HasPrefix(k, "non_") && !strings.HasPrefix(k, "spread_")
}

// Sort fields of a BrowseQuery; a score key (ScoreKey) sorts by that score.
const (
	SortPath     = "path"
	SortTaggedAt = "tagged_at"
	SortStatus   = "status"
)

// ScoreRange keeps the files whose score Key lies in [Min, Max].
type ScoreRange struct {
	Key      string
	Min, Max float64
}

// BrowseQuery selects and orders files. Zero fields select everything.
type BrowseQuery struct {
	// Text: a case-insensitive (ASCII) substring of the path or of the
	// file's artist, title or album (FileInfo).
	Text string
	// Status: one of the Status constants; "" any.
	Status string
	// Mood: a label in the mood list of MoodTier ("" TierLoose, the
	// largest).
	Mood, MoodTier string
	// Genre: a label of the stored top tags (case-insensitive).
	Genre string
	// Scores: every range must hold; a file without the score fails it.
	Scores []ScoreRange
	// Sort: SortPath (""), SortTaggedAt, SortStatus or a score key (files
	// without it last); Desc reverses, keeping those without a score
	// last. Ties go by key, in the same direction (so that one index
	// serves both). Paths compare as bytes (ArangoDB: its server's
	// string order, as for keys).
	Sort string
	Desc bool
	// Offset and Limit bound the page.
	Offset, Limit int
}

// Normalized returns q with its defaults filled in (MoodTier, Sort,
// Limit clamped to 1..BrowseMaxLimit, Offset not negative) and Text,
// Genre and Mood lower-cased.
func (q BrowseQuery) Normalized() BrowseQuery {
	if q.MoodTier == "" {
		q.MoodTier = TierLoose
	}
	if q.Sort == "" {
		q.Sort = SortPath
	}
	if q.Limit <= 0 {
		q.Limit = BrowseDefaultLimit
	}
	q.Limit = min(q.Limit, BrowseMaxLimit)
	q.Offset = max(q.Offset, 0)
	q.Text, q.Genre, q.Mood = asciiLower(q.Text), asciiLower(q.Genre), asciiLower(q.Mood)
	return q
}

// asciiLower lower-cases ASCII letters only, as SQLite's LIKE and
// ArangoDB's LOWER of ASCII text do alike.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// BrowseRow is one file of a page with its stored tags and info.
type BrowseRow struct {
	File File
	Tags map[string]string
	Info FileInfo
}

// BrowsePage is one page of Browse.
type BrowsePage struct {
	Rows  []BrowseRow
	Total int // files matching the query, on every page
}

// StatusOf is a file's status as a BrowseQuery names it.
func StatusOf(f File) string {
	if c := ClassOf(f); c != ClassInvalid {
		return c
	}
	return StatusMissing
}

// List splits a stored list tag.
func List(v string) []string {
	if v == "" {
		return nil
	}
	out := strings.Split(v, ListSep)
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// Score reads a stored score (ok false: absent or not a number).
func Score(tags map[string]string, key string) (float64, bool) {
	v, ok := tags[key]
	if !ok {
		return 0, false
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	return x, err == nil && !math.IsNaN(x)
}

// BrowseMatch reports whether a file (r.File) with its stored tags and
// info matches q (q normalized). It is the rule every store's Browse
// applies.
func BrowseMatch(q BrowseQuery, r BrowseRow) bool {
	f, tags := r.File, r.Tags
	if q.Status != "" && StatusOf(f) != q.Status {
		return false
	}
	if q.Text != "" {
		hit := strings.Contains(asciiLower(f.Path), q.Text)
		for _, v := range []string{r.Info.Artist, r.Info.Title, r.Info.Album} {
			hit = hit || strings.Contains(asciiLower(v), q.Text)
		}
		if !hit {
			return false
		}
	}
	if q.Mood != "" && !inList(tags[MoodKey(q.MoodTier)], q.Mood) {
		return false
	}
	if q.Genre != "" && !inList(tags[tagTopTags], q.Genre) {
		return false
	}
	for _, r := range q.Scores {
		x, ok := Score(tags, r.Key)
		if !ok || x < r.Min || x > r.Max {
			return false
		}
	}
	return true
}

func inList(list, label string) bool {
	for _, v := range List(list) {
		if asciiLower(v) == label {
			return true
		}
	}
	return false
}

// BrowseLess orders two matching files as q asks (q normalized).
func BrowseLess(q BrowseQuery, a, b BrowseRow) bool {
	c := 0
	switch q.Sort {
	case SortPath:
		c = strings.Compare(a.File.Path, b.File.Path)
	case SortTaggedAt:
		c = cmpInt(zeroMs(a.File), zeroMs(b.File))
	case SortStatus:
		c = strings.Compare(StatusOf(a.File), StatusOf(b.File))
	default:
		x, okA := Score(a.Tags, q.Sort)
		y, okB := Score(b.Tags, q.Sort)
		switch {
		case okA != okB: // without a score: last, whatever the direction
			return okA
		case okA && x < y:
			c = -1
		case okA && x > y:
			c = 1
		}
	}
	if c == 0 {
		c = strings.Compare(a.File.Key, b.File.Key)
	}
	if q.Desc {
		c = -c
	}
	return c < 0
}

// zeroMs is a tagging time in milliseconds, 0 for none.
func zeroMs(f File) int64 {
	if f.LastTaggedAt.IsZero() {
		return 0
	}
	return f.LastTaggedAt.UnixMilli()
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TagStats summarises the stored tags of every file that has any.
type TagStats struct {
	// Files is how many files have stored tags.
	Files int
	// Histograms counts, per score key (ScoreKey), the files whose score
	// falls in each of HistogramBins equal bins of [0, 1] (scores outside
	// are clamped in).
	Histograms map[string][]int
	// Moods counts, per tier and mood label (lower case), the files
	// listing it.
	Moods map[string]map[string]int
	// TopTags counts, per top-tag label (lower case), the files listing
	// it.
	TopTags map[string]int
}

// NewTagStats returns empty stats.
func NewTagStats() TagStats {
	return TagStats{Histograms: map[string][]int{}, Moods: map[string]map[string]int{}, TopTags: map[string]int{}}
}

// Bin is the histogram bin of score x.
func Bin(x float64) int {
	return min(max(int(x*HistogramBins), 0), HistogramBins-1)
}

// Add counts one file's tags (a store that reads every document uses it).
func (s *TagStats) Add(tags map[string]string) {
	s.Files++
	for k := range tags {
		if !ScoreKey(k) {
			continue
		}
		if x, ok := Score(tags, k); ok {
			s.AddScore(k, x, 1)
		}
	}
	for _, tier := range []string{TierStrict, TierRegular, TierLoose} {
		s.AddLabels(tier, tags[MoodKey(tier)])
	}
	s.AddLabels("", tags[tagTopTags])
}

// AddScore counts n scores x of key.
func (s *TagStats) AddScore(key string, x float64, n int) {
	h := s.Histograms[key]
	if h == nil {
		h = make([]int, HistogramBins)
		s.Histograms[key] = h
	}
	h[Bin(x)] += n
}

// AddLabels counts one file's stored list, a mood tier's or the top tags'
// (tier ""): each of its labels (lower-cased, ASCII) once, however often
// the list repeats it.
func (s *TagStats) AddLabels(tier, list string) {
	for _, l := range listLabels(list) {
		if tier == "" {
			s.TopTags[l]++
			continue
		}
		m := s.Moods[tier]
		if m == nil {
			m = map[string]int{}
			s.Moods[tier] = m
		}
		m[l]++
	}
}
