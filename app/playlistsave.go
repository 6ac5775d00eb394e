package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/core/store"
)

// MetaPlaylistRules is the meta key holding the playlist rules saved from
// the Playlists page, as a rules file writes them (a YAML list of
// PlaylistRule).
const MetaPlaylistRules = "playlists:rules"

// SavedPlaylistRules are the rules saved from the Playlists page, in the
// order saved; none when nothing was saved.
func SavedPlaylistRules(ctx context.Context, st store.Meta) ([]PlaylistRule, error) {
	v, ok, err := st.GetMeta(ctx, MetaPlaylistRules)
	if err != nil || !ok {
		return nil, err
	}
	var rules []PlaylistRule
	if err := yaml.Unmarshal([]byte(v), &rules); err != nil {
		return nil, fmt.Errorf("the saved playlist rules (meta %s): %w", MetaPlaylistRules, err)
	}
	return rules, nil
}

// MaxSavedPlaylists bounds the rules saved from the Playlists page.
const MaxSavedPlaylists = 200

// PlaylistSaver saves the Playlists page's rules (httpapi.PlaylistSaver):
// each save stores the rule with the saved ones (one of the same name is
// replaced) and writes, into Dir only, what `nomarr playlists --out Dir`
// writes with those rules: a playlist per mood label and one per saved
// rule, M3U8 and NSP (WritePlaylists, so a file there that nomarr did not
// write is never written over).
type PlaylistSaver struct {
	Store store.Store
	// Dir is playlists_dir; "" answers every save ErrUnavailable.
	Dir      string
	ModelSet func() string
	// Saved, when set, is called after each save (the API's playlist
	// list is computed again).
	Saved func()

	mu sync.Mutex
}

// SavePlaylist implements httpapi.PlaylistSaver. A rule's tier defaults
// to loose, as the library page's.
func (p *PlaylistSaver) SavePlaylist(ctx context.Context, r httpapi.SaveRule) (httpapi.SavedPlaylist, error) {
	var out httpapi.SavedPlaylist
	if p.Dir == "" {
		return out, fmt.Errorf("%w: set playlists_dir to save playlists", httpapi.ErrUnavailable)
	}
	if strings.HasPrefix(strings.ToLower(r.Name), "mood - ") {
		return out, fmt.Errorf("%w: names starting with \"Mood - \" are the mood playlists'", httpapi.ErrInvalid)
	}
	rule := PlaylistRule{Name: r.Name, Mood: r.Mood, Tier: r.Tier, Genre: r.Genre, Score: r.Score, Min: r.Min, Max: r.Max}
	if rule.Tier == "" {
		rule.Tier = "loose"
	}
	if rule.Score != "" && rule.Min == nil && rule.Max == nil {
		return out, fmt.Errorf("%w: a score needs min or max", httpapi.ErrInvalid)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rules, err := SavedPlaylistRules(ctx, p.Store)
	if err != nil {
		return out, fmt.Errorf("%w: %v", httpapi.ErrUnavailable, err)
	}
	replaced := false
	for i := range rules {
		if rules[i].Name == rule.Name {
			rules[i], replaced = rule, true
		}
	}
	if !replaced {
		if len(rules) >= MaxSavedPlaylists {
			return out, fmt.Errorf("%w: %d playlists are saved already, the most kept: save one under an existing name to replace it",
				httpapi.ErrInvalid, MaxSavedPlaylists)
		}
		rules = append(rules, rule)
	}
	doc, err := yaml.Marshal(rules)
	if err != nil {
		return out, err
	}
	lists, err := Playlists(ctx, p.Store, p.ModelSet(), rules)
	if err != nil {
		return out, fmt.Errorf("%w: %v", httpapi.ErrUnavailable, err)
	}
	written, err := WritePlaylists(p.Dir, lists)
	if err != nil {
		if errors.Is(err, errForeignPlaylist) {
			return out, fmt.Errorf("%w: %v", httpapi.ErrInvalid, err)
		}
		return out, fmt.Errorf("writing the playlists into playlists_dir: %w", err)
	}
	if err := p.Store.SetMeta(ctx, MetaPlaylistRules, string(doc)); err != nil {
		return out, fmt.Errorf("%w: the playlists are written, but the rule is not stored: %v", httpapi.ErrUnavailable, err)
	}
	if p.Saved != nil {
		p.Saved()
	}
	out = httpapi.SavedPlaylist{Name: rule.Name, File: playlistFile(rule.Name), Written: written}
	for _, l := range lists {
		if l.Name == rule.Name {
			out.Tracks = len(l.Files)
		}
	}
	for i, w := range out.Written {
		out.Written[i] = filepath.Base(w)
	}
	return out, nil
}

// calibrationState reads, for Insights, the configured calibration mode,
// the model set in use and the calibration stored in st.
func calibrationState(s *Settings, st store.Meta) func(context.Context) (httpapi.CalibrationState, error) {
	return func(ctx context.Context) (httpapi.CalibrationState, error) {
		c, err := ReadCalibration(ctx, st)
		if err != nil {
			return httpapi.CalibrationState{}, err
		}
		return httpapi.CalibrationState{Mode: s.Get("calibration"), ModelSet: ModelSetVersion(s), Stored: c}, nil
	}
}
