package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/core/similar"
	"github.com/nomarr/nomarr/core/store"
)

// SimilarAPI answers the API's similarity routes (httpapi.Similarity)
// from a SimilarIndex and the store. A file argument is resolved by the
// store's keys and paths alone: no user path is ever opened or stat'ed.
type SimilarAPI struct {
	Index *SimilarIndex
	Store store.Store
	// Root is library_root ("" none: any absolute path the store keeps).
	// A path outside it is refused, a relative path is taken from it.
	Root string

	mu    sync.Mutex
	lists *playlistCache
}

// playlistCache is the last Playlists answer and the marker it was
// computed under.
type playlistCache struct {
	marker indexMarker
	at     time.Time
	lists  []httpapi.PlaylistPreview
}

var _ httpapi.Similarity = (*SimilarAPI)(nil)

// NewSimilarAPI is serve's SimilarAPI and the index service it reads:
// the host's model set as ScanModels reads it at each probe.
func NewSimilarAPI(s *Settings, st store.Store, log *slog.Logger) *SimilarAPI {
	root := s.Get("library_root")
	if root != "" {
		if abs, err := filepath.Abs(root); err == nil {
			root = abs
		}
	}
	return &SimilarAPI{
		Index: &SimilarIndex{Store: st, ModelSet: func() string { return ModelSetVersion(s) }, Log: log},
		Store: st,
		Root:  root,
	}
}

// current is the index now, or an error wrapping ErrUnavailable.
func (a *SimilarAPI) current() (*Similar, uint64, error) {
	s, gen, err := a.Index.Current()
	if err != nil {
		return nil, gen, fmt.Errorf("%w: %v", httpapi.ErrUnavailable, err)
	}
	return s, gen, nil
}

// storeKey is the form of a file key (library.Key: 32 hex digits).
var storeKey = regexp.MustCompile(`^[0-9a-f]{32}$`)

// resolve is the key of the track arg names, a key or a path, in s:
// ErrInvalid for a path outside the root (or relative without one),
// ErrNotFound for a file the store does not keep or that has no vector
// in s.
func (a *SimilarAPI) resolve(ctx context.Context, s *Similar, arg string) (string, error) {
	key := arg
	if !storeKey.MatchString(arg) {
		p := arg
		if !filepath.IsAbs(p) {
			if a.Root == "" {
				return "", fmt.Errorf("%w: %q is not an absolute path (no library_root to take it from)", httpapi.ErrInvalid, arg)
			}
			p = filepath.Join(a.Root, p)
		}
		p = filepath.Clean(p)
		if a.Root != "" && !within(a.Root, p) {
			return "", fmt.Errorf("%w: %q is outside the library root", httpapi.ErrInvalid, arg)
		}
		key = library.Key(p)
	}
	if _, ok := s.File(key); ok {
		return key, nil
	}
	_, err := a.Store.File(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", fmt.Errorf("%w: %q: %v", httpapi.ErrNotFound, arg, ErrUnknownFile)
	case err != nil:
		return "", fmt.Errorf("%w: %v", httpapi.ErrUnavailable, err)
	}
	return "", fmt.Errorf("%w: %q: %v", httpapi.ErrNotFound, arg, ErrNoVector)
}

// within reports whether the clean absolute path p is root or under it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// track is f on the wire.
func track(f store.File) httpapi.Track {
	artist, title := TrackTitle(f.Path)
	return httpapi.Track{Key: f.Key, Path: f.Path, Artist: artist, Title: title}
}

func tracksOf(files []store.File) []httpapi.Track {
	out := make([]httpapi.Track, len(files))
	for i, f := range files {
		out[i] = track(f)
	}
	return out
}

// Similar implements httpapi.Similarity.
func (a *SimilarAPI) Similar(ctx context.Context, file string, n int) (httpapi.TrackList, error) {
	s, gen, err := a.current()
	if err != nil {
		return httpapi.TrackList{}, err
	}
	key, err := a.resolve(ctx, s, file)
	if err != nil {
		return httpapi.TrackList{}, err
	}
	near, err := s.Nearest(key, n)
	if err != nil {
		return httpapi.TrackList{}, fmt.Errorf("similar: %w", err)
	}
	out := httpapi.TrackList{ModelSet: s.ModelSet, Generation: gen, Tracks: make([]httpapi.Track, len(near))}
	for i, x := range near {
		t := track(x.File)
		score := x.Score
		t.Score = &score
		out.Tracks[i] = t
	}
	return out, nil
}

// Mix implements httpapi.Similarity.
func (a *SimilarAPI) Mix(ctx context.Context, seeds []string, n int) (httpapi.TrackList, error) {
	s, gen, err := a.current()
	if err != nil {
		return httpapi.TrackList{}, err
	}
	keys := make([]string, 0, len(seeds))
	seen := map[string]bool{}
	for _, f := range seeds {
		k, err := a.resolve(ctx, s, f)
		if err != nil {
			return httpapi.TrackList{}, err
		}
		if seen[k] {
			return httpapi.TrackList{}, fmt.Errorf("%w: seed %q given twice", httpapi.ErrInvalid, f)
		}
		seen[k] = true
		keys = append(keys, k)
	}
	files, err := s.Mix(keys, n)
	if err != nil {
		return httpapi.TrackList{}, fmt.Errorf("mix: %w", err)
	}
	return httpapi.TrackList{ModelSet: s.ModelSet, Generation: gen, Tracks: tracksOf(files)}, nil
}

// Path implements httpapi.Similarity.
func (a *SimilarAPI) Path(ctx context.Context, from, to string, n int) (httpapi.TrackList, error) {
	s, gen, err := a.current()
	if err != nil {
		return httpapi.TrackList{}, err
	}
	ka, err := a.resolve(ctx, s, from)
	if err != nil {
		return httpapi.TrackList{}, err
	}
	kb, err := a.resolve(ctx, s, to)
	if err != nil {
		return httpapi.TrackList{}, err
	}
	if ka == kb {
		return httpapi.TrackList{}, fmt.Errorf("%w: from and to are the same track", httpapi.ErrInvalid)
	}
	files, err := s.Path(ka, kb, n)
	if errors.Is(err, similar.ErrOppositeEnds) {
		return httpapi.TrackList{}, fmt.Errorf("%w: %w", httpapi.ErrInvalid, err)
	}
	if err != nil {
		return httpapi.TrackList{}, fmt.Errorf("path: %w", err)
	}
	return httpapi.TrackList{ModelSet: s.ModelSet, Generation: gen, Tracks: tracksOf(files)}, nil
}

// ForgetPlaylists drops the cached Playlists answer: the next is
// computed again (a rule was saved).
func (a *SimilarAPI) ForgetPlaylists() {
	a.mu.Lock()
	a.lists = nil
	a.mu.Unlock()
}

// Playlists implements httpapi.Similarity: the playlists `nomarr
// playlists` writes, with the rules saved from the Playlists page
// (SavedPlaylistRules), by the host's model set.
// The answer is kept while the model set and the library counts stay
// as they were, for at most the index's Resync.
func (a *SimilarAPI) Playlists(ctx context.Context) ([]httpapi.PlaylistPreview, error) {
	m := indexMarker{modelSet: a.Index.ModelSet()}
	c, err := a.Store.Counts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", httpapi.ErrUnavailable, err)
	}
	m.counts = c
	resync := a.Index.Resync
	if resync <= 0 {
		resync = DefaultIndexResync
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if l := a.lists; l != nil && l.marker == m && time.Since(l.at) < resync {
		return l.lists, nil
	}
	rules, err := SavedPlaylistRules(ctx, a.Store)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", httpapi.ErrUnavailable, err)
	}
	lists, err := Playlists(ctx, a.Store, m.modelSet, rules)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", httpapi.ErrUnavailable, err)
	}
	out := make([]httpapi.PlaylistPreview, 0, len(lists))
	for _, p := range lists {
		if f := playlistFile(p.Name); f != "" {
			out = append(out, httpapi.PlaylistPreview{Name: p.Name, File: f, Tracks: tracksOf(p.Files)})
		}
	}
	a.lists = &playlistCache{marker: m, at: time.Now(), lists: out}
	return out, nil
}
