package sqlite

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/core/store"
)

// A text search finds what the rule finds
// (store.BrowseMatch: path, artist, title or album holding the text,
// ASCII case folded), whatever the text holds (other scripts and their
// cases, quotes, LIKE's wildcards, line breaks) and however the files and
// their info changed: info written, rewritten and deleted, a path changed
// by hand, files forgotten and found again.
func TestTextSearchAgreesWithTheRule(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	db := raw(t, path)
	rng := rand.New(rand.NewPCG(3, 14))
	words := []string{"Aurora", "aurora", "ÉCLAIR", "éclair", "Straße", "STRASSE", `say "hi"`, "50%_off", "a\nb", "Björk",
		"live", "Live at", "ab", "x", "Ωmega", "ωmega", "rock'n'roll", "dj_mix", "100%"}
	word := func() string { return words[rng.IntN(len(words))] }
	paths := map[string]string{}
	infos := map[string]store.FileInfo{}
	var keys []string
	for i := range 120 {
		k := fmt.Sprintf("k%03d", i)
		keys = append(keys, k)
		f := mkf(k)
		f.Path = fmt.Sprintf("/music/%s/%s %02d.flac", word(), word(), i)
		paths[k] = f.Path
		if _, err := s.UpsertFiles(bg, []store.File{f}); err != nil {
			t.Fatal(err)
		}
	}
	putInfo := func(k string) {
		info := store.FileInfo{Artist: word(), Title: word() + " " + word(), Album: word()}
		if err := s.PutFileInfo(bg, k, info); err != nil {
			t.Fatal(err)
		}
		infos[k] = info
	}
	for _, k := range keys[:90] {
		putInfo(k)
	}
	for _, k := range keys[:30] { // rewritten
		putInfo(k)
	}
	for _, k := range keys[30:40] { // a path changed by hand
		paths[k] = "/moved/" + word() + "/" + k + ".mp3"
		if _, err := db.Exec(`UPDATE library_files SET path = ? WHERE key = ?`, paths[k], k); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys[40:45] { // info deleted by hand
		if _, err := db.Exec(`DELETE FROM file_info WHERE file_key = ?`, k); err != nil {
			t.Fatal(err)
		}
		delete(infos, k)
	}
	if _, err := s.MarkMissing(bg, keys[45:55]); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ForgetMissing(bg, keys[45:55]); err != nil || n != 10 {
		t.Fatalf("ForgetMissing = %d, %v", n, err)
	}
	for _, k := range keys[45:55] {
		delete(infos, k)
	}
	for _, k := range keys[45:50] { // found again, without info
		f := mkf(k)
		f.Path = paths[k]
		if _, err := s.UpsertFiles(bg, []store.File{f}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys[50:55] {
		delete(paths, k)
	}

	texts := []string{"aurora", "AURORA", "éclair", "Éclair", "ÉCLAIR", "straße", "strasse", `"hi"`, `y "`, "%_o", "0%_",
		"a\nb", "björk", "BJÖRK", "live at", "ab", "x", "ωmega", "Ωmega", "'n'", "dj_", "/moved/", ".flac", "00%", "zzz", `"`}
	for _, w := range words { // and pieces of every word
		if r := []rune(w); len(r) > 3 {
			texts = append(texts, string(r[1:4]), strings.ToUpper(string(r[:3])))
		}
	}
	for _, text := range texts {
		q := store.BrowseQuery{Text: text, Limit: 200}.Normalized()
		var want []string
		for k, p := range paths {
			if store.BrowseMatch(q, store.BrowseRow{File: store.File{Key: k, Path: p}, Info: infos[k]}) {
				want = append(want, k)
			}
		}
		slices.SortFunc(want, func(a, b string) int { return strings.Compare(paths[a], paths[b]) })
		p, err := s.Browse(bg, q)
		if err != nil {
			t.Fatalf("Browse(%q): %v", text, err)
		}
		var got []string
		for _, r := range p.Rows {
			got = append(got, r.File.Key)
		}
		if !slices.Equal(got, want) || p.Total != len(want) {
			t.Errorf("text %q: Browse = %v (total %d), the rule %v", text, got, p.Total, want)
		}
		// Short pages of many matches are read in the path's order.
		for _, off := range []int{0, 2, 7} {
			pq := q
			pq.Offset, pq.Limit = off, 3
			p, err := s.Browse(bg, pq)
			if err != nil {
				t.Fatalf("Browse(%q, offset %d): %v", text, off, err)
			}
			var got []string
			for _, r := range p.Rows {
				got = append(got, r.File.Key)
			}
			if w := want[min(off, len(want)):min(off+3, len(want))]; !slices.Equal(got, w) || p.Total != len(want) {
				t.Errorf("text %q, offset %d: Browse = %v (total %d), the rule %v (total %d)", text, off, got, p.Total, w, len(want))
			}
		}
	}
}
