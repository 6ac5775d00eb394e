package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The similarity routes (docs/api.md, "Similar tracks, mixes, paths and
// playlists"): read access, answered by a Backend that also implements
// Similarity.
//
//	GET /api/v1/similar?file=F&n=20           Similarity.Similar
//	GET /api/v1/mix?seed=F&seed=G&n=30        Similarity.Mix
//	GET /api/v1/path?from=F&to=G&n=15         Similarity.Path
//	GET /api/v1/playlists                     Similarity.Playlists: names and sizes
//	GET /api/v1/playlists?name=NAME           one playlist's tracks
//
// Every list is paged by offset (default 0) and limit (default
// DefaultPageLimit, 1..MaxPageLimit); an answer says total and, when a
// later page exists, next_offset.

// ErrInvalid: a request the backend refuses as bad input (a path outside
// the library, the same track at both ends of a path) → 400.
var ErrInvalid = errors.New("invalid request")

// Bounds of the similarity routes' parameters.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
	// MaxTracks bounds n, the length of a similar list, mix or path.
	MaxTracks = 1000
	// MaxSeeds bounds the seeds of a mix.
	MaxSeeds = 50
	// MaxFileArg bounds a file parameter (a key or a path), in bytes.
	MaxFileArg = 4096
)

// Track is one track of a similarity answer.
type Track struct {
	Key    string `json:"key"`
	Path   string `json:"path"`
	Artist string `json:"artist,omitempty"`
	Title  string `json:"title"`
	// Score is the cosine to the query track (similar only).
	Score *float32 `json:"score,omitempty"`
}

// TrackList is a similar list, mix or path, whole: the handler pages it.
// Generation names the index state that answered (it changes whenever
// the index is rebuilt), so a client paging through can tell when two
// pages come from different states.
type TrackList struct {
	ModelSet   string
	Generation uint64
	Tracks     []Track
}

// PlaylistPreview is one playlist `nomarr playlists` would write: its
// name, the file name it would get (File + ".m3u8" and ".nsp") and its
// tracks, by path.
type PlaylistPreview struct {
	Name   string
	File   string
	Tracks []Track
}

// Similarity is what the similarity routes need. A Backend that does not
// implement it answers them 503. File arguments are a stored file's key
// or its path (absolute, or relative to the library root); an
// implementation resolves them by the store's keys and paths and never
// opens them. Errors: one wrapping ErrNotFound (no such file, or no
// vector of the current model set) → 404, ErrInvalid → 400,
// ErrUnavailable (no index yet, no model set, the store down) → 503.
type Similarity interface {
	// Similar is the n tracks closest to file's, best first, itself left out.
	Similar(ctx context.Context, file string, n int) (TrackList, error)
	// Mix is a mix of n tracks from the seeds (core/similar.Mix).
	Mix(ctx context.Context, seeds []string, n int) (TrackList, error)
	// Path is n tracks from one file to another (core/similar.Path).
	Path(ctx context.Context, from, to string, n int) (TrackList, error)
	// Playlists is what `nomarr playlists` would write now.
	Playlists(ctx context.Context) ([]PlaylistPreview, error)
}

// similarRoutes registers the similarity routes.
func (s *Server) similarRoutes(handle func(string, access, http.HandlerFunc)) {
	handle("GET /api/v1/similar", read, s.handleSimilar)
	handle("GET /api/v1/mix", read, s.handleMix)
	handle("GET /api/v1/path", read, s.handlePath)
	handle("GET /api/v1/playlists", read, s.handlePlaylists)
}

// badRequest is a refusal of the request's parameters.
type badRequest string

func (b badRequest) Error() string { return string(b) }

// similarity is the Backend's Similarity, or a 503.
func (s *Server) similarity(w http.ResponseWriter) (Similarity, bool) {
	sim, ok := s.b.(Similarity)
	if !ok {
		writeError(w, http.StatusServiceUnavailable, "similarity is not available on this server")
	}
	return sim, ok
}

// page is the offset and limit of a paged answer.
type page struct{ offset, limit int }

// pageOf reads offset and limit.
func pageOf(q url.Values) (page, error) {
	p := page{0, DefaultPageLimit}
	var err error
	if p.offset, err = intParam(q, "offset", 0, 0, int(^uint32(0)>>1)); err != nil {
		return p, err
	}
	p.limit, err = intParam(q, "limit", DefaultPageLimit, 1, MaxPageLimit)
	return p, err
}

// intParam is q's name, an integer in [lo, hi], def when absent.
func intParam(q url.Values, name string, def, lo, hi int) (int, error) {
	vs, ok := q[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(vs[0]))
	if len(vs) != 1 || err != nil || n < lo || n > hi {
		return 0, badRequest(name + " must be one integer from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi))
	}
	return n, nil
}

// fileParams are q's name values, each a file argument: at least least,
// at most most.
func fileParams(q url.Values, name string, least, most int) ([]string, error) {
	vs := q[name]
	if len(vs) < least || len(vs) > most {
		if least == most {
			return nil, badRequest(name + " must be given once (a file's key or path)")
		}
		return nil, badRequest(name + " must be given " + strconv.Itoa(least) + " to " + strconv.Itoa(most) + " times")
	}
	for _, v := range vs {
		if v == "" || len(v) > MaxFileArg || strings.ContainsRune(v, 0) {
			return nil, badRequest(name + " must be a file's key or path, 1 to " + strconv.Itoa(MaxFileArg) + " bytes, without NUL")
		}
	}
	return vs, nil
}

// pageOfList is one page of a list answer.
type pageOfList struct {
	Total      int  `json:"total"`
	Offset     int  `json:"offset"`
	Limit      int  `json:"limit"`
	NextOffset *int `json:"next_offset,omitempty"`
}

// cut is p's slice of n items: [from, to) and the paging fields.
func (p page) cut(n int) (from, to int, meta pageOfList) {
	from, to = min(p.offset, n), min(p.offset+p.limit, n)
	meta = pageOfList{Total: n, Offset: p.offset, Limit: p.limit}
	if to < n {
		next := to
		meta.NextOffset = &next
	}
	return from, to, meta
}

// trackPage is the body of the similar, mix and path answers.
type trackPage struct {
	ModelSet   string `json:"model_set"`
	Generation uint64 `json:"generation"`
	pageOfList
	Tracks []Track `json:"tracks"`
}

// answerTracks pages list, or answers err.
func (s *Server) answerTracks(w http.ResponseWriter, r *http.Request, op string, p page, list TrackList, err error) {
	if err != nil {
		s.similarError(w, r, op, err)
		return
	}
	from, to, meta := p.cut(len(list.Tracks))
	tracks := list.Tracks[from:to:to]
	if tracks == nil {
		tracks = []Track{}
	}
	writeJSON(w, http.StatusOK, trackPage{ModelSet: list.ModelSet, Generation: list.Generation, pageOfList: meta, Tracks: tracks})
}

// similarError answers a parameter or backend error: badRequest and
// ErrInvalid 400, the rest as backendError.
func (s *Server) similarError(w http.ResponseWriter, r *http.Request, op string, err error) {
	var bad badRequest
	switch {
	case errors.As(err, &bad):
		writeError(w, http.StatusBadRequest, bad.Error())
	case errors.Is(err, ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, ErrUnavailable):
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		s.backendError(w, r, op, err)
	}
}

// fileArg is a query parameter naming library files: min to max of them.
type fileArg struct {
	name     string
	min, max int
}

// serveTracks answers a route that lists tracks: it checks the page, each
// of args and n (default nDefault, from nMin to MaxTracks), refusing bad
// input with a 400, then pages what list answers for the files (one
// slice per arg, in order) and n.
func (s *Server) serveTracks(w http.ResponseWriter, r *http.Request, op string, args []fileArg, nDefault, nMin int,
	list func(ctx context.Context, sim Similarity, files [][]string, n int) (TrackList, error)) {
	sim, ok := s.similarity(w)
	if !ok {
		return
	}
	q := r.URL.Query()
	p, err := pageOf(q)
	files := make([][]string, len(args))
	for i, a := range args {
		if err == nil {
			files[i], err = fileParams(q, a.name, a.min, a.max)
		}
	}
	n := 0
	if err == nil {
		n, err = intParam(q, "n", nDefault, nMin, MaxTracks)
	}
	if err != nil {
		s.similarError(w, r, op, err)
		return
	}
	tracks, err := list(r.Context(), sim, files, n)
	s.answerTracks(w, r, op, p, tracks, err)
}

func (s *Server) handleSimilar(w http.ResponseWriter, r *http.Request) {
	s.serveTracks(w, r, "similar", []fileArg{{"file", 1, 1}}, 20, 1,
		func(ctx context.Context, sim Similarity, f [][]string, n int) (TrackList, error) {
			return sim.Similar(ctx, f[0][0], n)
		})
}

func (s *Server) handleMix(w http.ResponseWriter, r *http.Request) {
	s.serveTracks(w, r, "mix", []fileArg{{"seed", 1, MaxSeeds}}, 30, 1,
		func(ctx context.Context, sim Similarity, f [][]string, n int) (TrackList, error) {
			return sim.Mix(ctx, f[0], n)
		})
}

func (s *Server) handlePath(w http.ResponseWriter, r *http.Request) {
	s.serveTracks(w, r, "path", []fileArg{{"from", 1, 1}, {"to", 1, 1}}, 15, 2,
		func(ctx context.Context, sim Similarity, f [][]string, n int) (TrackList, error) {
			return sim.Path(ctx, f[0][0], f[1][0], n)
		})
}

// playlistJSON is one playlist of the list.
type playlistJSON struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Tracks int    `json:"tracks"`
}

// handlePlaylists lists the playlists (names, file names, sizes), or
// with name one playlist's tracks, paged either way.
func (s *Server) handlePlaylists(w http.ResponseWriter, r *http.Request) {
	sim, ok := s.similarity(w)
	if !ok {
		return
	}
	q := r.URL.Query()
	p, err := pageOf(q)
	if err == nil && q.Has("name") && (len(q["name"]) != 1 || q.Get("name") == "") {
		err = badRequest("name must be given once, not empty")
	}
	if err != nil {
		s.similarError(w, r, "playlists", err)
		return
	}
	lists, err := sim.Playlists(r.Context())
	if err != nil {
		s.similarError(w, r, "playlists", err)
		return
	}
	if !q.Has("name") {
		from, to, meta := p.cut(len(lists))
		out := make([]playlistJSON, 0, to-from)
		for _, l := range lists[from:to] {
			out = append(out, playlistJSON{Name: l.Name, File: l.File, Tracks: len(l.Tracks)})
		}
		writeJSON(w, http.StatusOK, struct {
			pageOfList
			Playlists []playlistJSON `json:"playlists"`
		}{meta, out})
		return
	}
	name := q.Get("name")
	for _, l := range lists {
		if l.Name != name {
			continue
		}
		from, to, meta := p.cut(len(l.Tracks))
		tracks := l.Tracks[from:to:to]
		if tracks == nil {
			tracks = []Track{}
		}
		writeJSON(w, http.StatusOK, struct {
			Name string `json:"name"`
			File string `json:"file"`
			pageOfList
			Tracks []Track `json:"tracks"`
		}{l.Name, l.File, meta, tracks})
		return
	}
	writeError(w, http.StatusNotFound, "no playlist named "+strconv.Quote(name))
}
