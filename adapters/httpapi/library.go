package httpapi

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
)

// LibraryStore is the store's read side the library pages use.
type LibraryStore interface {
	store.Browser
	File(ctx context.Context, key string) (store.File, error)
	FileInfo(ctx context.Context, key string) (store.FileInfo, error)
}

// LibraryBackend is a Backend that can read the library. One that
// implements it serves GET /api/v1/library, /api/v1/files/{key},
// /api/v1/files/{key}/audio and /api/v1/insights; without it they answer
// 503.
type LibraryBackend interface {
	Library() LibraryStore
}

// fileJSON is one file as the library pages show it.
type fileJSON struct {
	Key         string             `json:"key"`
	Path        string             `json:"path"`
	Status      string             `json:"status"` // store.StatusOf
	TaggedAt    time.Time          `json:"tagged_at,omitzero"`
	Version     string             `json:"tagged_version,omitempty"`
	Attempts    int                `json:"attempts"`
	CrashCount  int                `json:"crash_count"`
	LastError   string             `json:"last_error,omitempty"`
	NextRetryAt time.Time          `json:"next_retry_at,omitzero"`
	SkipUntil   time.Time          `json:"skip_until,omitzero"`
	Size        int64              `json:"size"`
	Artist      string             `json:"artist,omitempty"` // the file's own tags (store.FileInfo)
	Title       string             `json:"title,omitempty"`
	Album       string             `json:"album,omitempty"`
	DurationMs  int64              `json:"duration_ms,omitempty"`
	Moods       []string           `json:"moods"`    // the loose tier's labels
	TopTags     []string           `json:"top_tags"` // the model's top tags
	Genres      []string           `json:"genres"`   // those of TopTags that name a genre (tags.Genres)
	Scores      map[string]float64 `json:"scores"`   // store.ScoreKey tags
}

func newFileJSON(f store.File, t map[string]string, i store.FileInfo) fileJSON {
	out := fileJSON{Key: f.Key, Path: f.Path, Status: store.StatusOf(f), TaggedAt: f.LastTaggedAt, Version: f.TaggedVersion,
		Attempts: f.Attempts, CrashCount: f.CrashCount, LastError: f.LastError, NextRetryAt: f.NextRetryAt, SkipUntil: f.SkipUntil,
		Size: f.Size, Artist: i.Artist, Title: i.Title, Album: i.Album, DurationMs: i.DurationMs,
		Moods: nonNil(store.List(t[store.MoodKey(store.TierLoose)])), TopTags: nonNil(store.List(t[tags.KeyTopTags])),
		Genres: []string{}, Scores: map[string]float64{}}
	for _, l := range out.TopTags {
		if g, ok := tags.Genres[l]; ok {
			out.Genres = append(out.Genres, g)
		}
	}
	for k := range t {
		if store.ScoreKey(k) {
			if x, ok := store.Score(t, k); ok {
				out.Scores[k] = x
			}
		}
	}
	return out
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// library returns the backend's LibraryStore, or answers 503.
func (s *Server) library(w http.ResponseWriter) (LibraryStore, bool) {
	lb, ok := s.b.(LibraryBackend)
	if !ok || lb.Library() == nil {
		writeError(w, http.StatusServiceUnavailable, "this server has no library store")
		return nil, false
	}
	return lb.Library(), true
}

// storeError maps a store error: ErrNotFound 404, any other 503 (the
// store is down; its text is logged, not sent).
func (s *Server) storeError(w http.ResponseWriter, r *http.Request, op string, err error) {
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "no such file")
		return
	}
	if r.Context().Err() == nil {
		s.log.Warn("http api: store read failed", "op", op, "err", err)
	}
	writeError(w, http.StatusServiceUnavailable, op+" failed: the store is unavailable (see server log)")
}

// parseBrowse reads a library query; the error says what is wrong.
func parseBrowse(v map[string][]string) (store.BrowseQuery, error) {
	get := func(k string) string {
		if x := v[k]; len(x) > 0 {
			return strings.TrimSpace(x[0])
		}
		return ""
	}
	q := store.BrowseQuery{Text: get("q"), Status: get("status"), Mood: get("mood"), MoodTier: get("tier"),
		Genre: get("genre"), Sort: get("sort")}
	switch q.Status {
	case "", store.StatusTagged, store.StatusFailed, store.StatusPending, store.StatusMissing:
	default:
		return q, errors.New("status must be tagged, failed, pending or missing")
	}
	switch q.MoodTier {
	case "", store.TierStrict, store.TierRegular, store.TierLoose:
	default:
		return q, errors.New("tier must be strict, regular or loose")
	}
	// A genre name given as GENRE writes it ("Hip-Hop", "R&B") is the
	// top tag it comes from.
	for label, name := range tags.Genres {
		if strings.EqualFold(name, q.Genre) {
			q.Genre = label
		}
	}
	switch q.Sort {
	case "", store.SortPath, store.SortTaggedAt, store.SortStatus:
	default:
		if !store.ScoreKey(q.Sort) {
			return q, errors.New("sort must be path, tagged_at, status or a score key")
		}
	}
	switch get("order") {
	case "", "asc":
	case "desc":
		q.Desc = true
	default:
		return q, errors.New("order must be asc or desc")
	}
	for _, p := range []struct {
		name string
		dst  *int
		max  int
	}{{"offset", &q.Offset, 1 << 30}, {"limit", &q.Limit, store.BrowseMaxLimit}} {
		if s := get(p.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n > p.max {
				return q, errors.New(p.name + " must be an integer from 0 to " + strconv.Itoa(p.max))
			}
			*p.dst = n
		}
	}
	for _, sc := range v["score"] {
		parts := strings.Split(sc, ":")
		if len(parts) != 3 || !store.ScoreKey(parts[0]) {
			return q, errors.New("score must be KEY:MIN:MAX with a score key")
		}
		lo, err1 := strconv.ParseFloat(parts[1], 64)
		hi, err2 := strconv.ParseFloat(parts[2], 64)
		if err1 != nil || err2 != nil || lo > hi {
			return q, errors.New("score " + sc + ": MIN and MAX must be numbers, MIN ≤ MAX")
		}
		q.Scores = append(q.Scores, store.ScoreRange{Key: parts[0], Min: lo, Max: hi})
	}
	if len(q.Scores) > 16 {
		return q, errors.New("at most 16 score ranges")
	}
	return q, nil
}

func (s *Server) handleLibrary(w http.ResponseWriter, r *http.Request) {
	lib, ok := s.library(w)
	if !ok {
		return
	}
	q, err := parseBrowse(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	page, err := lib.Browse(r.Context(), q)
	if err != nil {
		s.storeError(w, r, "library", err)
		return
	}
	n := q.Normalized()
	out := struct {
		Total  int        `json:"total"`
		Offset int        `json:"offset"`
		Limit  int        `json:"limit"`
		Files  []fileJSON `json:"files"`
	}{page.Total, n.Offset, n.Limit, make([]fileJSON, 0, len(page.Rows))}
	for _, row := range page.Rows {
		out.Files = append(out.Files, newFileJSON(row.File, row.Tags, row.Info))
	}
	writeJSON(w, http.StatusOK, out)
}

// lookup reads the file named by the route's {key} and its tags.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (store.File, map[string]string, bool) {
	lib, ok := s.library(w)
	if !ok {
		return store.File{}, nil, false
	}
	key := r.PathValue("key")
	f, err := lib.File(r.Context(), key)
	if err != nil {
		s.storeError(w, r, "file", err)
		return store.File{}, nil, false
	}
	t, err := lib.FileTags(r.Context(), key)
	if err != nil {
		s.storeError(w, r, "file", err)
		return store.File{}, nil, false
	}
	return f, t, true
}

func (s *Server) handleFile(w http.ResponseWriter, r *http.Request) {
	f, t, ok := s.lookup(w, r)
	if !ok {
		return
	}
	lib, _ := s.library(w)
	info, err := lib.FileInfo(r.Context(), f.Key)
	if err != nil {
		s.storeError(w, r, "file", err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		File fileJSON          `json:"file"`
		Tags map[string]string `json:"tags"`
	}{newFileJSON(f, t, info), t})
}

// handleAudio serves the file's audio with Range support
// (http.ServeContent). The path is the one the store holds for the key:
// nothing of the request reaches the file system but the key, looked up.
func (s *Server) handleAudio(w http.ResponseWriter, r *http.Request) {
	f, _, ok := s.lookup(w, r)
	if !ok {
		return
	}
	fh, err := os.Open(f.Path)
	if err != nil {
		writeError(w, http.StatusNotFound, "the file is not readable on this host")
		return
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil || !st.Mode().IsRegular() {
		writeError(w, http.StatusNotFound, "the file is not readable on this host")
		return
	}
	ct := mime.TypeByExtension(strings.ToLower(filepath.Ext(f.Path)))
	if ct == "" {
		ct = audioTypes[strings.ToLower(filepath.Ext(f.Path))]
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, max-age=60")
	http.ServeContent(w, r, "", st.ModTime(), fh)
}

// audioTypes are the media types of the formats the scanner takes, where
// the system's table may lack them.
var audioTypes = map[string]string{
	".flac": "audio/flac", ".mp3": "audio/mpeg", ".ogg": "audio/ogg", ".opus": "audio/ogg", ".m4a": "audio/mp4",
	".wav": "audio/wav", ".aiff": "audio/aiff", ".wma": "audio/x-ms-wma", ".ape": "audio/x-ape", ".wv": "audio/x-wavpack",
}

// insightsJSON is the body of GET /api/v1/insights.
type insightsJSON struct {
	Files      int                       `json:"files"`
	Bins       int                       `json:"bins"`
	Histograms map[string][]int          `json:"histograms"`
	Moods      map[string]map[string]int `json:"moods"`
	Genres     map[string]int            `json:"genres"`
	TopTags    map[string]int            `json:"top_tags"`
	// Calibration: null when the server cannot say.
	Calibration *calibrationJSON `json:"calibration"`
}

func (s *Server) handleInsights(w http.ResponseWriter, r *http.Request) {
	lib, ok := s.library(w)
	if !ok {
		return
	}
	st, err := lib.TagStats(r.Context())
	if err != nil {
		s.storeError(w, r, "insights", err)
		return
	}
	out := insightsJSON{Files: st.Files, Bins: store.HistogramBins, Histograms: st.Histograms, Moods: st.Moods,
		Genres: map[string]int{}, TopTags: st.TopTags, Calibration: s.calibration(r.Context())}
	for label, n := range st.TopTags {
		for l, g := range tags.Genres {
			if strings.EqualFold(l, label) {
				out.Genres[g] += n
			}
		}
	}
	for _, tier := range []string{store.TierStrict, store.TierRegular, store.TierLoose} {
		if out.Moods[tier] == nil {
			out.Moods[tier] = map[string]int{}
		}
	}
	writeJSON(w, http.StatusOK, out)
}
