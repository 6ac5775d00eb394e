package arangodb

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"

	"github.com/nomarr/nomarr/core/store"
)

// The fake's emulations of browse.go's queries: the documents decoded as
// the adapter decodes them, the query rebuilt from the bind parameters
// and answered by the rule (store.BrowseMatch, store.BrowseLess), so the
// bind parameters and the answer's shape are checked; the AQL is checked
// against a real server only.
func init() {
	browse := func(desc bool) func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
			return fakeBrowse(f, browseBound(b, desc), nil), nil
		}
	}
	emulations[qBrowse] = browse(false)
	emulations[qBrowseDesc] = browse(true)
	// browseLabelAQL's texts: the file_tags documents whose stored labels
	// hold every bound label (the index's part, so that the labels the
	// adapter stores are what the contract suite checks), then the rule
	// without labels.
	for n := 1; n <= 2; n++ {
		for _, desc := range []bool{false, true} {
			emulations[browseLabelAQL(n, desc)] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
				want := []string{str(b["label0"])}
				if n == 2 {
					want = append(want, str(b["label1"]))
				}
				held := func(key string) bool {
					d, ok := f.colls[colTags][key]
					if !ok {
						return false
					}
					list, _ := d["labels"].([]any)
					for _, l := range want {
						if !slices.Contains(list, any(l)) {
							return false
						}
					}
					return true
				}
				return fakeBrowse(f, browseBound(b, desc), held), nil
			}
		}
	}
	// browseIndexed's texts: a sort and direction, with the status filter
	// or none and no other filter; the bind parameters are the page's
	// bounds and the status.
	for sort, ix := range browseIndexes {
		for _, desc := range []bool{false, true} {
			for _, status := range []bool{false, true} {
				emulations[browseIndexedAQL(ix.index, ix.attr, desc, status)] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
					q := store.BrowseQuery{Sort: sort, Desc: desc, Offset: int(num(b["offset"])), Limit: int(num(b["limit"]))}
					if status {
						q.Status = str(b["status"])
					}
					return fakeBrowse(f, q.Normalized(), nil), nil
				}
			}
		}
	}
	emulations[qFileTags] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		k := str(b["key"])
		if _, ok := f.colls[colFiles][k]; !ok {
			return nil, nil
		}
		var tags any
		if t, ok := f.colls[colTags][k]; ok {
			tags = t["tags"]
		}
		return []any{map[string]any{"tags": tags}}, nil
	}
	emulations[qTagStats] = fakeTagStats
	emulations[qIndexedToFill] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		var out []any
		for _, k := range slices.Sorted(maps.Keys(f.colls[colTags])) {
			d := f.colls[colTags][k]
			if k <= str(b["after"]) || d["labels"] != nil && d["scores"] != nil {
				continue
			}
			if len(out) == int(num(b["limit"])) {
				break
			}
			out = append(out, map[string]any{"key": k, "writes": d["writes"], "tags": d["tags"]})
		}
		return out, nil
	}
	emulations[qFillIndexed] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		n := 0
		for _, x := range b["docs"].([]any) {
			m := x.(map[string]any)
			d, ok := f.colls[colTags][str(m["key"])]
			if !ok || d["writes"] != m["writes"] {
				continue
			}
			f.colls[colTags][str(m["key"])] = with(d, "labels", m["labels"], "scores", m["scores"])
			n++
		}
		return []any{float64(n)}, nil
	}
}

// browseBound is the query of qBrowse's and browseLabelAQL's bind
// parameters, less the labels.
func browseBound(b map[string]any, desc bool) store.BrowseQuery {
	q := store.BrowseQuery{Text: str(b["text"]), Status: str(b["status"]), Sort: str(b["sort"]), Desc: desc,
		Offset: int(num(b["offset"])), Limit: int(num(b["limit"]))}
	for _, r := range b["scores"].([]any) {
		m := r.(map[string]any)
		q.Scores = append(q.Scores, store.ScoreRange{Key: str(m["key"]), Min: num(m["min"]), Max: num(m["max"])})
	}
	return q.Normalized()
}

// fakeTagStats answers qTagStats: the grouped rows of the files with tags
// and a file document, their scores by the rule (store.ScoreKey, the
// bound notation, store.Bin) and their stored labels as stored.
func fakeTagStats(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
	number, err := regexp.Compile(str(b["number"]))
	if err != nil {
		return nil, &fakeErr{400, 1575, "bad regex: " + err.Error()}
	}
	type group struct {
		kind, key string
		bin       int
	}
	counts := map[group]int{}
	for k, d := range f.colls[colTags] {
		if _, ok := f.colls[colFiles][k]; !ok {
			continue
		}
		counts[group{kind: "file"}]++
		tags := fakeTags(f, k)
		for key, v := range tags {
			if !store.ScoreKey(key) || !number.MatchString(v) {
				continue
			}
			x, ok := store.Score(tags, key)
			if !ok {
				return nil, &fakeErr{500, 1, "fake: the bound notation accepts " + strconv.Quote(v) + ", which store.Score refuses"}
			}
			counts[group{"score", key, store.Bin(x)}]++
		}
		list, _ := d["labels"].([]any)
		for _, l := range list {
			counts[group{kind: "label", key: str(l)}]++
		}
	}
	var out []any
	for g, n := range counts {
		row := map[string]any{"kind": g.kind, "key": nil, "bin": nil, "n": float64(n)}
		if g.kind != "file" {
			row["key"] = g.key
		}
		if g.kind == "score" {
			row["bin"] = float64(g.bin)
		}
		out = append(out, row)
	}
	return out, nil
}

// fakeBrowse answers a browse query by the rule: the files (those keep
// holds, when given) that match q (store.BrowseMatch), counted, ordered
// by store.BrowseLess and paged.
func fakeBrowse(f *fakeServer, q store.BrowseQuery, keep func(key string) bool) []any {
	var hits []store.BrowseRow
	docs := map[string]doc{}
	for k, d := range f.colls[colFiles] {
		if keep != nil && !keep(k) {
			continue
		}
		r := store.BrowseRow{File: fakeFile(d), Tags: fakeTags(f, k), Info: fakeInfo(f, k)}
		if store.BrowseMatch(q, r) {
			hits = append(hits, r)
			docs[k] = d
		}
	}
	slices.SortFunc(hits, func(a, c store.BrowseRow) int {
		if store.BrowseLess(q, a, c) {
			return -1
		}
		return 1
	})
	rows := []any{}
	for _, h := range hits[min(q.Offset, len(hits)):] {
		if len(rows) == q.Limit {
			break
		}
		info := any(map[string]any{})
		if d, ok := f.colls[colInfo][h.File.Key]; ok {
			info = d
		}
		rows = append(rows, map[string]any{"file": docs[h.File.Key], "tags": f.colls[colTags][h.File.Key]["tags"], "info": info})
	}
	return []any{map[string]any{"total": float64(len(hits)), "rows": rows}}
}

// fakeFile decodes a stored file document as the adapter does.
func fakeFile(d doc) store.File {
	var fd fileDoc
	b, _ := json.Marshal(d)
	_ = json.Unmarshal(b, &fd)
	return fd.file()
}

// fakeTags is a file's stored tags.
func fakeTags(f *fakeServer, key string) map[string]string {
	out := map[string]string{}
	if t, ok := f.colls[colTags][key]; ok {
		if m, ok := t["tags"].(map[string]any); ok {
			for k, v := range m {
				out[k] = str(v)
			}
		}
	}
	return out
}

// fakeInfo is a file's info as the adapter decodes it.
func fakeInfo(f *fakeServer, k string) store.FileInfo {
	d, ok := f.colls[colInfo][k]
	if !ok {
		return store.FileInfo{}
	}
	b, _ := json.Marshal(d)
	var i infoDoc
	_ = json.Unmarshal(b, &i)
	return i.info()
}

func init() {
	emulations[qPutInfo] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		k := str(b["key"])
		if _, ok := f.colls[colFiles][k]; !ok {
			return nil, nil
		}
		f.colls[colInfo][k] = doc{"_key": k, "artist": b["artist"], "title": b["title"], "album": b["album"], "duration_ms": b["duration_ms"]}
		return []any{1}, nil
	}
	emulations[qFileInfo] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		k := str(b["key"])
		if _, ok := f.colls[colFiles][k]; !ok {
			return nil, nil
		}
		if d, ok := f.colls[colInfo][k]; ok {
			return []any{d}, nil
		}
		return []any{map[string]any{}}, nil
	}
	emulations[qForgetInfo] = keyedRemove(colInfo)
}
