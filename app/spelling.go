package app

import (
	"slices"
	"sort"
	"strings"

	"github.com/nomarr/nomarr/config"
)

// ownEnv are the NOMARR_* variables the project sets or reads for other
// purposes than configuration: the configuration file, the worker
// specification a main process hands its workers, and test switches
// (besides every name with a TEST word, such as NOMARR_TEST_ARANGO_URL).
var ownEnv = []string{"NOMARR_CONFIG", WorkerEnv, "NOMARR_PROPERTY_CHECKS", "NOMARR_SCAN_FILES", "NOMARR_WRITE_TRACES",
	"NOMARR_SQLITE_HELPER", "NOMARR_SQLITE_DB", "NOMARR_SQLITE_WORKER", "NOMARR_TAGWRITE_CHILD"}

// envWarnings returns a line for each NOMARR_* variable of environ (KEY=VALUE
// entries) that no configuration key reads, naming the closest key when
// one is an obvious typo. A worker never calls it: its environment is its
// main process's, already warned about.
func envWarnings(environ []string) []string {
	known := map[string]bool{}
	for _, k := range allKeys() {
		known["NOMARR_"+strings.ToUpper(k)] = true
	}
	var names []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, "NOMARR_")
		if !ok || known[name] || slices.Contains(ownEnv, name) || slices.Contains(strings.Split(rest, "_"), "TEST") {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var out []string
	for _, name := range slices.Compact(names) {
		line := "nomarr: ignoring " + name + ": not a configuration key"
		if k := closestKey(strings.TrimPrefix(name, "NOMARR_")); k != "" {
			line += " (did you mean NOMARR_" + strings.ToUpper(k) + "?)"
		}
		out = append(out, line)
	}
	return out
}

// closestKey returns the configuration key that name (any case, dashes or
// underscores) most likely misspells, or "" (Closest).
func closestKey(name string) string {
	return Closest(strings.ReplaceAll(strings.ToLower(name), "-", "_"), allKeys())
}

// Closest returns the candidate that name most likely misspells: the only
// one within two edits (a swap of neighbours is one) and fewer edits than
// a third of its length; "" when there is none or more than one. An alias
// and its key count as one.
func Closest(name string, candidates []string) string {
	best, bestD, tie := "", 3, false
	for _, k := range candidates {
		d := editDistance(name, k)
		if d > 2 || 3*d > len(k) {
			continue
		}
		canon := func(s string) string { return config.Canonical(strings.ReplaceAll(s, "-", "_")) }
		switch {
		case d < bestD:
			best, bestD, tie = k, d, false
		case d == bestD && canon(k) != canon(best):
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and swaps of neighbours, one each.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
