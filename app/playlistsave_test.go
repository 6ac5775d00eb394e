package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/nomarr/nomarr/adapters/httpapi"
)

// TestPlaylistSaverWritesIntoItsFolder: a saved rule is written, with the
// mood playlists and the rules saved before, as M3U8 and NSP into the
// configured folder; a rule of the same name replaces the earlier one; a
// file there that nomarr did not write is refused and nothing is stored;
// without a folder nothing is written.
func TestPlaylistSaverWritesIntoItsFolder(t *testing.T) {
	st := simStore(t)
	dir := t.TempDir()
	forgot := 0
	p := &PlaylistSaver{Store: st, Dir: dir, ModelSet: func() string { return "m1" }, Saved: func() { forgot++ }}
	ctx := t.Context()
	lo := 0.0
	got, err := p.SavePlaylist(ctx, httpapi.SaveRule{Name: "Happy ones", Mood: "happy", Tier: "regular"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Tracks != 2 || got.File != "Happy ones" || !slices.Contains(got.Written, "Happy ones.m3u8") || !slices.Contains(got.Written, "Happy ones.nsp") {
		t.Fatalf("saved %+v", got)
	}
	m3u, err := os.ReadFile(filepath.Join(dir, "Happy ones.m3u8"))
	if err != nil || !strings.Contains(string(m3u), "a.flac") || !strings.Contains(string(m3u), "b.flac") || strings.Contains(string(m3u), "c.flac") {
		t.Fatalf("m3u8: %q %v", m3u, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "Mood - sad.m3u8")); err != nil {
		t.Errorf("the mood playlists are not written: %v", err)
	}
	if _, err := p.SavePlaylist(ctx, httpapi.SaveRule{Name: "Sad", Mood: "sad", Tier: "regular"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SavePlaylist(ctx, httpapi.SaveRule{Name: "Happy ones", Mood: "party", Tier: "regular", Score: "x_musicnn_y", Min: &lo}); err != nil {
		t.Fatal(err)
	}
	rules, err := SavedPlaylistRules(ctx, st)
	if err != nil || len(rules) != 2 || rules[0].Name != "Happy ones" || rules[0].Mood != "party" || rules[1].Name != "Sad" {
		t.Fatalf("stored rules %+v %v", rules, err)
	}
	if forgot != 3 {
		t.Errorf("Saved called %d times, want 3", forgot)
	}
	if err := os.WriteFile(filepath.Join(dir, "Mine.m3u8"), []byte("#EXTM3U\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = p.SavePlaylist(ctx, httpapi.SaveRule{Name: "Mine", Mood: "happy"})
	if !errors.Is(err, httpapi.ErrInvalid) {
		t.Fatalf("over a foreign file: %v, want ErrInvalid", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "Mine.m3u8")); string(b) != "#EXTM3U\n" {
		t.Errorf("the foreign file changed: %q", b)
	}
	if rules, _ := SavedPlaylistRules(ctx, st); len(rules) != 2 {
		t.Errorf("a refused save stored its rule: %+v", rules)
	}
	for _, r := range []httpapi.SaveRule{{Name: "Mood - happy", Mood: "happy"}, {Name: "S", Score: "x_musicnn_y"}} {
		if _, err := p.SavePlaylist(ctx, r); !errors.Is(err, httpapi.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", r, err)
		}
	}
	many := make([]PlaylistRule, MaxSavedPlaylists)
	for i := range many {
		many[i] = PlaylistRule{Name: fmt.Sprintf("R%d", i), Mood: "happy", Tier: "loose"}
	}
	doc, _ := yaml.Marshal(many)
	if err := st.SetMeta(ctx, MetaPlaylistRules, string(doc)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SavePlaylist(ctx, httpapi.SaveRule{Name: "One more", Mood: "happy"}); !errors.Is(err, httpapi.ErrInvalid) {
		t.Errorf("past %d rules: %v, want ErrInvalid", MaxSavedPlaylists, err)
	}
	if _, err := p.SavePlaylist(ctx, httpapi.SaveRule{Name: "R7", Mood: "sad"}); err != nil {
		t.Errorf("replacing a rule at the bound: %v", err)
	}
	none := &PlaylistSaver{Store: st, ModelSet: func() string { return "m1" }}
	if _, err := none.SavePlaylist(ctx, httpapi.SaveRule{Name: "X", Mood: "happy"}); !errors.Is(err, httpapi.ErrUnavailable) {
		t.Errorf("without playlists_dir: %v, want ErrUnavailable", err)
	}
}
