package store

import "math"

// Scores are a file's stored scores as numbers: each tag that ScoreKey
// accepts and Score reads as a finite number. A file matches a
// ScoreRange of finite bounds exactly when Scores holds the range's key
// within them (the rule of BrowseMatch, kept where an index can serve
// it), and two files compare by a score as BrowseLess compares them
// whenever neither stores it as ±Inf: Scores leaves ±Inf out (no finite
// range holds it; BrowseLess ranks it as a score, at an end, where an
// order read from Scores puts it with the files that have none). Never
// nil.
func Scores(tags map[string]string) map[string]float64 {
	out := map[string]float64{}
	for k := range tags {
		if !ScoreKey(k) {
			continue
		}
		if x, ok := Score(tags, k); ok && !math.IsInf(x, 0) {
			out[k] = x
		}
	}
	return out
}
