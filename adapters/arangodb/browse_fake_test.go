package arangodb

import (
	"encoding/json"
	"maps"
	"slices"

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
			q := store.BrowseQuery{Text: str(b["text"]), Status: str(b["status"]), Mood: str(b["mood"]),
				Genre: str(b["genre"]), Sort: str(b["sort"]), Desc: desc, Offset: int(num(b["offset"])), Limit: int(num(b["limit"]))}
			q.MoodTier = map[string]string{store.MoodKey(store.TierStrict): store.TierStrict,
				store.MoodKey(store.TierRegular): store.TierRegular}[str(b["moodKey"])]
			for _, r := range b["scores"].([]any) {
				m := r.(map[string]any)
				q.Scores = append(q.Scores, store.ScoreRange{Key: str(m["key"]), Min: num(m["min"]), Max: num(m["max"])})
			}
			return fakeBrowse(f, q.Normalized()), nil
		}
	}
	emulations[qBrowse] = browse(false)
	emulations[qBrowseDesc] = browse(true)
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
					return fakeBrowse(f, q.Normalized()), nil
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
	emulations[qAllTags] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		var out []any
		for _, k := range slices.Sorted(maps.Keys(f.colls[colTags])) {
			out = append(out, f.colls[colTags][k]["tags"])
		}
		return out, nil
	}
}

// fakeBrowse answers a browse query by the rule: the files that match q
// (store.BrowseMatch), counted, ordered by store.BrowseLess and paged.
func fakeBrowse(f *fakeServer, q store.BrowseQuery) []any {
	var hits []store.BrowseRow
	docs := map[string]doc{}
	for k, d := range f.colls[colFiles] {
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
