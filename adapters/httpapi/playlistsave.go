package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nomarr/nomarr/core/store"
)

// SaveRule is a playlist rule the Playlists page saves: the tracks whose
// stored tags hold every condition given (app.PlaylistRule).
type SaveRule struct {
	Name  string   `json:"name"`
	Mood  string   `json:"mood,omitempty"`
	Tier  string   `json:"tier,omitempty"`
	Genre string   `json:"genre,omitempty"`
	Score string   `json:"score,omitempty"`
	Min   *float64 `json:"min,omitempty"`
	Max   *float64 `json:"max,omitempty"`
}

// SavedPlaylist is what a save wrote: the playlist's name, its file name
// without extension (File + ".m3u8" and ".nsp"), its number of tracks
// and every file the save wrote in the playlists folder.
type SavedPlaylist struct {
	Name    string   `json:"name"`
	File    string   `json:"file"`
	Tracks  int      `json:"tracks"`
	Written []string `json:"written"`
}

// PlaylistSaver saves a rule as a playlist into the server's configured
// playlists folder (never a path from the request). A Backend that
// implements it serves POST /api/v1/playlists. Errors: ErrInvalid → 400,
// ErrUnavailable (no folder configured, the store down) → 503.
type PlaylistSaver interface {
	SavePlaylist(ctx context.Context, r SaveRule) (SavedPlaylist, error)
}

// MaxPlaylistName bounds a saved playlist's name, in bytes.
const MaxPlaylistName = 200

// check reports what is wrong with r, if anything.
func (r SaveRule) check() error {
	name := strings.TrimSpace(r.Name)
	switch {
	case name == "":
		return errors.New("name is required")
	case len(name) > MaxPlaylistName:
		return errors.New("name is longer than 200 bytes")
	case !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl):
		return errors.New("name must be text without control characters")
	case strings.TrimLeft(name, ".") == "" || strings.ContainsAny(name, `/\`):
		return errors.New(`name must not contain / or \ nor be only dots`)
	}
	switch r.Tier {
	case "", store.TierStrict, store.TierRegular, store.TierLoose:
	default:
		return errors.New("tier must be strict, regular or loose")
	}
	if r.Mood == "" && r.Genre == "" && r.Score == "" {
		return errors.New("the rule selects every track: give a mood, a genre or a score range")
	}
	if r.Score != "" && !store.ScoreKey(r.Score) {
		return errors.New("score must be a score key")
	}
	if (r.Min != nil || r.Max != nil) && r.Score == "" {
		return errors.New("min and max go with score")
	}
	if r.Min != nil && r.Max != nil && *r.Min > *r.Max {
		return errors.New("min must not exceed max")
	}
	return nil
}

// handleSavePlaylist: POST /api/v1/playlists with a SaveRule as JSON.
func (s *Server) handleSavePlaylist(w http.ResponseWriter, r *http.Request) {
	ps, ok := s.b.(PlaylistSaver)
	if !ok {
		writeError(w, http.StatusServiceUnavailable, "this server cannot save playlists")
		return
	}
	var rule SaveRule
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rule); err != nil {
		writeError(w, http.StatusBadRequest, "body must be a JSON playlist rule: "+err.Error())
		return
	}
	rule.Name = strings.TrimSpace(rule.Name)
	rule.Mood, rule.Genre = strings.ToLower(strings.TrimSpace(rule.Mood)), strings.ToLower(strings.TrimSpace(rule.Genre))
	if err := rule.check(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	saved, err := ps.SavePlaylist(r.Context(), rule)
	if err != nil {
		s.similarError(w, r, "save playlist", err)
		return
	}
	writeJSON(w, http.StatusOK, saved)
}
