package arangodb

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/nomarr/nomarr/core/store"
)

// The fake's emulations of scores.go's queries, as browse_fake_test.go's:
// each selects by the scores the adapter stored in file_tags (the index's
// part, so that the contract suite checks the written field), then
// answers by the rule or, for the parts of a score-sorted page, by what
// the query text says (order by the stored score then key, from either
// end; the files without the score in key order).
func init() {
	for _, ix := range scoreIndexes {
		for _, desc := range []bool{false, true} {
			emulations[browseRangeAQL(ix, desc)] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
				in := func(key string) bool {
					x, ok := fakeScore(f, key, ix.key)
					return ok && x >= num(b["min"]) && x <= num(b["max"])
				}
				return fakeBrowse(f, browseBound(b, desc), in), nil
			}
			for _, status := range []bool{false, true} {
				emulations[scoreHeadAQL(ix, desc, status)] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
					return fakeScoreHead(f, b, ix.key, desc, status), nil
				}
				emulations[scoreRestAQL(ix, desc, status)] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
					return fakeScoreRest(f, b, ix.key, desc, status), nil
				}
			}
		}
		for _, status := range []bool{false, true} {
			emulations[scoreCountAQL(ix, status)] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
				n := 0
				for k := range f.colls[colTags] {
					if _, ok := fakeScore(f, k, ix.key); ok && (!status || fakeHasStatus(f, k, str(b["status"]))) {
						n++
					}
				}
				return []any{float64(n)}, nil
			}
		}
	}
}

// fakeScore is the score key stored in file_tags.scores of file k.
func fakeScore(f *fakeServer, k, key string) (float64, bool) {
	scores, _ := f.colls[colTags][k]["scores"].(map[string]any)
	v, ok := scores[key]
	return num(v), ok && v != nil
}

// fakeHasStatus: file k exists and has the status.
func fakeHasStatus(f *fakeServer, k, status string) bool {
	d, ok := f.colls[colFiles][k]
	return ok && store.StatusOf(fakeFile(d)) == status
}

// fakeRow is a browse row of file k as the queries return it.
func fakeRow(f *fakeServer, k string) map[string]any {
	tags, info := any(map[string]any{}), any(map[string]any{})
	if t := f.colls[colTags][k]["tags"]; t != nil {
		tags = t
	}
	if d, ok := f.colls[colInfo][k]; ok {
		info = d
	}
	return map[string]any{"file": f.colls[colFiles][k], "tags": tags, "info": info}
}

// fakeScoreHead answers scoreHeadAQL: the files with the stored score (and
// the status), by score then key, reversed for desc, paged; the total as
// browseCount counts it.
func fakeScoreHead(f *fakeServer, b map[string]any, key string, desc, status bool) []any {
	type hit struct {
		k string
		x float64
	}
	var hits []hit
	for k := range f.colls[colTags] {
		x, ok := fakeScore(f, k, key)
		_, file := f.colls[colFiles][k]
		if ok && file && (!status || fakeHasStatus(f, k, str(b["status"]))) {
			hits = append(hits, hit{k, x})
		}
	}
	slices.SortFunc(hits, func(a, c hit) int {
		if a.x != c.x {
			return map[bool]int{true: -1, false: 1}[a.x < c.x]
		}
		return strings.Compare(a.k, c.k)
	})
	if desc {
		slices.Reverse(hits)
	}
	rows := []any{}
	for _, h := range hits[min(int(num(b["offset"])), len(hits)):] {
		if len(rows) == int(num(b["limit"])) {
			break
		}
		rows = append(rows, fakeRow(f, h.k))
	}
	total := len(f.colls[colFiles])
	if status {
		total = 0
		for k := range f.colls[colFiles] {
			if fakeHasStatus(f, k, str(b["status"])) {
				total++
			}
		}
	}
	return []any{map[string]any{"total": float64(total), "rows": rows}}
}

// fakeScoreRest answers scoreRestAQL: the files without the stored score
// (and with the status), in key order, reversed for desc, from @skip, at
// most @limit.
func fakeScoreRest(f *fakeServer, b map[string]any, key string, desc, status bool) []any {
	keys := slices.Sorted(maps.Keys(f.colls[colFiles]))
	if desc {
		slices.Reverse(keys)
	}
	var out []any
	skip := int(num(b["skip"]))
	for _, k := range keys {
		if _, ok := fakeScore(f, k, key); ok || status && !fakeHasStatus(f, k, str(b["status"])) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if len(out) == int(num(b["limit"])) {
			break
		}
		out = append(out, fakeRow(f, k))
	}
	return out
}

// scoreAQLs are scores.go's query texts, each with a name.
func scoreAQLs() map[string]string {
	out := map[string]string{}
	for _, ix := range scoreIndexes {
		for _, desc := range []bool{false, true} {
			d := " desc=" + strconv.FormatBool(desc)
			out[ix.name+" range"+d] = browseRangeAQL(ix, desc)
			for _, status := range []bool{false, true} {
				sd := d + " status=" + strconv.FormatBool(status)
				out[ix.name+" head"+sd] = scoreHeadAQL(ix, desc, status)
				out[ix.name+" rest"+sd] = scoreRestAQL(ix, desc, status)
			}
		}
		for _, status := range []bool{false, true} {
			out[ix.name+" count status="+strconv.FormatBool(status)] = scoreCountAQL(ix, status)
		}
	}
	return out
}
