package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
)

// PlaylistRule is one playlist of the user's rules file: the tracks whose
// stored tags match every condition given.
type PlaylistRule struct {
	Name string `yaml:"name"`
	// Mood is a label of the mood tier Tier (strict, regular, loose;
	// default regular).
	Mood string `yaml:"mood"`
	Tier string `yaml:"tier"`
	// Genre is one of the file's top tags.
	Genre string `yaml:"genre"`
	// Score is a stored score key (e.g. happy_musicnn_mood_happy) whose
	// value lies in [Min, Max].
	Score string   `yaml:"score"`
	Min   *float64 `yaml:"min"`
	Max   *float64 `yaml:"max"`
}

// tierKey is the stored tag key of a mood tier.
func tierKey(tier string) (string, error) {
	switch tier {
	case "", "regular":
		return tags.KeyMoodRegular, nil
	case "strict":
		return tags.KeyMoodStrict, nil
	case "loose":
		return tags.KeyMoodLoose, nil
	}
	return "", fmt.Errorf("tier %q: strict, regular or loose", tier)
}

// LoadPlaylistRules reads a rules file: a YAML list of PlaylistRule.
func LoadPlaylistRules(path string) ([]PlaylistRule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rules []PlaylistRule
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, r := range rules {
		if strings.TrimSpace(r.Name) == "" {
			return nil, fmt.Errorf("%s: rule %d has no name", path, i+1)
		}
		if _, err := tierKey(r.Tier); err != nil {
			return nil, fmt.Errorf("%s: rule %q: %w", path, r.Name, err)
		}
		if r.Mood == "" && r.Genre == "" && r.Score == "" {
			return nil, fmt.Errorf("%s: rule %q selects every track (give mood, genre or score)", path, r.Name)
		}
		if (r.Min != nil || r.Max != nil) != (r.Score != "") {
			return nil, fmt.Errorf("%s: rule %q: min and max go with score", path, r.Name)
		}
	}
	return rules, nil
}

// matches reports whether a file's stored tags fit r.
func (r PlaylistRule) matches(t map[string]string) bool {
	if r.Mood != "" {
		key, _ := tierKey(r.Tier)
		if !slices.Contains(splitList(t[key]), r.Mood) {
			return false
		}
	}
	if r.Genre != "" && !slices.Contains(splitList(t[tags.KeyTopTags]), r.Genre) {
		return false
	}
	if r.Score != "" {
		v, err := strconv.ParseFloat(t[r.Score], 64)
		if err != nil || (r.Min != nil && v < *r.Min) || (r.Max != nil && v > *r.Max) {
			return false
		}
	}
	return true
}

func splitList(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, tags.ListSep)
}

// Playlist is one playlist's name, the rule that selects it and its
// tracks, by path.
type Playlist struct {
	Name  string
	Rule  PlaylistRule
	Files []store.File
}

// Playlists are, for each label of the regular mood tier found in the
// stored tags, a playlist "Mood - LABEL", then one per user rule; tracks
// by path. Only valid files of the model set version count.
func Playlists(ctx context.Context, st store.Store, version string, rules []PlaylistRule) ([]Playlist, error) {
	files := map[string]store.File{}
	for after := ""; ; {
		page, err := st.ListFiles(ctx, after, ListBatch)
		if err != nil {
			return nil, fmt.Errorf("playlists: read files: %w", err)
		}
		for _, f := range page {
			if f.IsValid {
				files[f.Key] = f
			}
		}
		if len(page) < ListBatch {
			break
		}
		after = page[len(page)-1].Key
	}
	moods := map[string][]store.File{}
	byRule := make([][]store.File, len(rules))
	for after := ""; ; {
		page, err := st.ListTags(ctx, after, ListBatch)
		if err != nil {
			return nil, fmt.Errorf("playlists: read tags: %w", err)
		}
		for _, ft := range page {
			f, ok := files[ft.FileKey]
			if !ok || (version != "" && ft.Version != version) {
				continue
			}
			for _, m := range splitList(ft.Tags[tags.KeyMoodRegular]) {
				moods[m] = append(moods[m], f)
			}
			for i, r := range rules {
				if r.matches(ft.Tags) {
					byRule[i] = append(byRule[i], f)
				}
			}
		}
		if len(page) < ListBatch {
			break
		}
		after = page[len(page)-1].FileKey
	}
	byPath := func(fs []store.File) []store.File {
		sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
		return fs
	}
	var out []Playlist
	for _, m := range slices.Sorted(mapKeys(moods)) {
		out = append(out, Playlist{Name: "Mood - " + m, Rule: PlaylistRule{Mood: m, Tier: "regular"}, Files: byPath(moods[m])})
	}
	for i, r := range rules {
		out = append(out, Playlist{Name: r.Name, Rule: r, Files: byPath(byRule[i])})
	}
	return out, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// PlaylistMarker is the line that opens every M3U8 file nomarr
// playlists writes, after #EXTM3U; PlaylistManifest, in the output
// folder, lists every file it wrote there. A re-run replaces and deletes
// only files the manifest lists, and refuses to write over any other.
const (
	PlaylistMarker   = "#NOMARR-PLAYLIST"
	PlaylistManifest = ".nomarr-playlists"
)

// nspTag is the Navidrome custom tag a stored key is declared as
// (docs/commands.md): its letters and digits, "mood-regular" →
// "moodregular".
func nspTag(key string) string { return nonAlnum.ReplaceAllString(strings.ToLower(key), "") }

var nonAlnum = regexp.MustCompile(`[^a-z0-9]`)

// nsp is a Navidrome smart playlist selecting p's tracks through the
// declared custom tags.
func nsp(p Playlist) ([]byte, error) {
	var all []map[string]any
	if p.Rule.Mood != "" {
		key, _ := tierKey(p.Rule.Tier)
		all = append(all, map[string]any{"contains": map[string]any{nspTag(key): p.Rule.Mood}})
	}
	if p.Rule.Genre != "" {
		all = append(all, map[string]any{"contains": map[string]any{nspTag(tags.KeyTopTags): p.Rule.Genre}})
	}
	if p.Rule.Score != "" {
		lo, hi := 0.0, 1.0
		if p.Rule.Min != nil {
			lo = *p.Rule.Min
		}
		if p.Rule.Max != nil {
			hi = *p.Rule.Max
		}
		all = append(all, map[string]any{"inTheRange": map[string]any{nspTag(p.Rule.Score): []float64{lo, hi}}})
	}
	return json.MarshalIndent(map[string]any{
		"name": p.Name, "comment": "written by nomarr playlists; re-running it replaces this file",
		"all": all, "sort": "title", "order": "asc",
	}, "", "  ")
}

// playlistFile is p's file name without extension: its name, with path
// separators and leading dots replaced.
func playlistFile(name string) string {
	n := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, name)
	return strings.TrimLeft(n, ".")
}

// errForeignPlaylist: a file WritePlaylists would write is not one it
// wrote before.
var errForeignPlaylist = errors.New("not written by nomarr playlists")

// WritePlaylists writes, in dir, NAME.m3u8 and NAME.nsp for each
// playlist, deletes the files of an earlier run that this one no longer
// writes, and records what it wrote in the manifest. A file there that
// the manifest does not list is never written over: an error, nothing
// written.
func WritePlaylists(dir string, lists []Playlist) (written []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	manifest := filepath.Join(dir, PlaylistManifest)
	ours := map[string]bool{}
	if b, err := os.ReadFile(manifest); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" {
				ours[l] = true
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	type out struct {
		name string
		data []byte
	}
	var outs []out
	for _, p := range lists {
		base := playlistFile(p.Name)
		if base == "" {
			continue
		}
		var m bytes.Buffer
		if err := WriteM3U(&m, dir, p.Files, PlaylistMarker); err != nil {
			return nil, err
		}
		j, err := nsp(p)
		if err != nil {
			return nil, err
		}
		outs = append(outs, out{base + ".m3u8", m.Bytes()}, out{base + ".nsp", append(j, '\n')})
	}
	for _, o := range outs {
		if _, err := os.Lstat(filepath.Join(dir, o.name)); err == nil && !ours[o.name] {
			return nil, fmt.Errorf("%s: %w (not in %s): left alone; move it or choose another --out",
				filepath.Join(dir, o.name), errForeignPlaylist, PlaylistManifest)
		}
	}
	now := map[string]bool{}
	for _, o := range outs {
		tmp := filepath.Join(dir, "."+o.name+".tmp")
		if err := os.WriteFile(tmp, o.data, 0o644); err != nil {
			return written, err
		}
		if err := os.Rename(tmp, filepath.Join(dir, o.name)); err != nil {
			return written, err
		}
		now[o.name] = true
		written = append(written, o.name)
	}
	for name := range ours {
		if !now[name] && filepath.Base(name) == name {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return written, err
			}
		}
	}
	list := slices.Sorted(mapKeys(now))
	return written, os.WriteFile(manifest, []byte(strings.Join(list, "\n")+"\n"), 0o644)
}
