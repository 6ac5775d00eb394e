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
			q = q.Normalized()
			var hits []store.BrowseRow
			docs := map[string]doc{}
			for k, d := range f.colls[colFiles] {
				file, tags := fakeFile(d), fakeTags(f, k)
				if store.BrowseMatch(q, file, tags) {
					hits = append(hits, store.BrowseRow{File: file, Tags: tags})
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
				rows = append(rows, map[string]any{"file": docs[h.File.Key], "tags": f.colls[colTags][h.File.Key]["tags"]})
			}
			return []any{map[string]any{"total": float64(len(hits)), "rows": rows}}, nil
		}
	}
	emulations[qBrowse] = browse(false)
	emulations[qBrowseDesc] = browse(true)
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
