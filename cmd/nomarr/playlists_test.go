package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/analyzer"
	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/store"
)

// completeWith records, straight into the SQLite store of data, a
// completion of each path with its tags, by the noop analyzer's model set.
func completeWith(t *testing.T, data string, tagsOf map[string]map[string]string) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(data, "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	for p, tags := range tagsOf {
		c := store.Claim{FileKey: library.Key(p), WorkerID: "i/w0", ClaimedAt: now, LeaseUntil: now.Add(time.Minute)}
		if _, err := st.Claim(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		if err := st.Complete(t.Context(), store.Ref{FileKey: c.FileKey, WorkerID: c.WorkerID},
			store.Completion{Tags: tags, Version: analyzer.NoopVersion, At: now}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPlaylists: a playlist per regular mood label and per rule, as
// M3U8 files that ffprobe opens with paths that exist and as Navidrome
// smart playlists; a re-run replaces its own files, deletes those it no
// longer writes, and never touches a file it did not write.
func TestPlaylists(t *testing.T) {
	bin := nomarrBinary(t)
	lib, data := t.TempDir(), t.TempDir()
	paths := toneFiles(t, lib, "Ann/One/a.flac", "Ann/One/b.flac", "Bob/Two/c.flac")
	nomarr := cli(t, bin, data)
	nomarr(0, "scan", lib)
	completeWith(t, data, map[string]map[string]string{
		paths[0]: {"mood-regular": "happy; party", "top_tags": "rock; pop", "happy_musicnn_mood_happy": "0.91"},
		paths[1]: {"mood-regular": "happy", "top_tags": "jazz", "happy_musicnn_mood_happy": "0.65"},
		paths[2]: {"mood-regular": "sad", "mood-strict": "sad", "top_tags": "rock"},
	})
	rules := filepath.Join(lib, "rules.yaml")
	if err := os.WriteFile(rules, []byte("- name: Very happy rock\n  genre: rock\n  score: happy_musicnn_mood_happy\n  min: 0.8\n"+
		"- name: Strictly sad\n  mood: sad\n  tier: strict\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "lists")
	noop := func(code int, args ...string) (string, string) {
		t.Helper()
		return nomarr(code, append(args, "--analyzer", "noop")...)
	}
	noop(0, "playlists", "--out", out, "--rules", rules)
	want := map[string][]string{
		"Mood - happy": {paths[0], paths[1]}, "Mood - party": {paths[0]}, "Mood - sad": {paths[2]},
		"Very happy rock": {paths[0]}, "Strictly sad": {paths[2]},
	}
	for name, files := range want {
		m3u := filepath.Join(out, name+".m3u8")
		ffprobeOpens(t, m3u)
		if got := playlistPaths(t, m3u); strings.Join(got, " ") != strings.Join(files, " ") {
			t.Errorf("%s = %q, want %q", name, got, files)
		}
		b, err := os.ReadFile(filepath.Join(out, name+".nsp"))
		var doc struct {
			Name string           `json:"name"`
			All  []map[string]any `json:"all"`
		}
		if err != nil || json.Unmarshal(b, &doc) != nil || doc.Name != name || len(doc.All) == 0 {
			t.Errorf("%s.nsp: %s %v", name, b, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(out, "Very happy rock.nsp"))
	if !strings.Contains(string(b), `"toptags": "rock"`) || !strings.Contains(string(b), `"happymusicnnmoodhappy": [`) {
		t.Errorf("rule's smart playlist: %s", b)
	}

	// Again, the party mood gone and a file of someone else's there.
	completeAgain := map[string]map[string]string{paths[0]: {"mood-regular": "happy"}}
	nomarr(0, "scan", lib)
	st, err := sqlite.Open(filepath.Join(data, "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Retag(t.Context(), []string{library.Key(paths[0])}, "other"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	completeWith(t, data, completeAgain)
	mine := filepath.Join(out, "mine.m3u8")
	if err := os.WriteFile(mine, []byte("#EXTM3U\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noop(0, "playlists", "--out", out)
	if _, err := os.Stat(filepath.Join(out, "Mood - party.m3u8")); err == nil {
		t.Error("a playlist no longer written is still there")
	}
	if _, err := os.Stat(filepath.Join(out, "Very happy rock.nsp")); err == nil {
		t.Error("a rule's playlist no longer written is still there")
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "#EXTM3U\n" {
		t.Errorf("a file not written by nomarr was touched: %q %v", b, err)
	}
	// A file of the same name as one it would write, but not its own.
	if err := os.WriteFile(filepath.Join(out, "Strictly sad.m3u8"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errb := noop(1, "playlists", "--out", out, "--rules", rules); !strings.Contains(errb, "not written by nomarr playlists") {
		t.Errorf("overwriting a foreign file: %q", errb)
	}
	noop(2, "playlists")
	bad := filepath.Join(lib, "bad.yaml")
	os.WriteFile(bad, []byte("- name: all\n"), 0o644)
	noop(2, "playlists", "--out", out, "--rules", bad)
}
