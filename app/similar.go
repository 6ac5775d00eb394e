package app

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/vectorindex"
	"github.com/nomarr/nomarr/core/similar"
	"github.com/nomarr/nomarr/core/store"
)

// Errors of a similarity request about one file.
var (
	// ErrUnknownFile: the path names no file the store keeps.
	ErrUnknownFile = errors.New("not a file of the library (scan it first)")
	// ErrNoVector: the file has no track vector of this model set (not
	// analysed yet, or analysed by other models).
	ErrNoVector = errors.New("no track vector of this model set (tag it first)")
)

// Similar is a library's track vectors of one model set, in an index
// (vectorindex decides between exact search and its partition), with the
// files they belong to.
//
// It keeps no float32 copy of the vectors (800 MB at a million tracks):
// a track's vector is the index's (vectorindex.Index.Vector), and sums
// holds a checksum of each vector as read, so that a sync can tell
// whether the store still holds what was indexed.
//
// Invariants: the keys of the index, of sums and of files are the same;
// no vector of another model set is ever added. It is not safe for
// concurrent use except through its readers (Nearest, Mix, Path, File),
// which only read.
type Similar struct {
	ModelSet string
	index    *vectorindex.Index
	sums     map[string]uint64
	files    map[string]store.File
}

// vectorSum is a checksum of v's components (FNV-1a over their bits).
func vectorSum(v similar.Vector) uint64 {
	h := uint64(14695981039346656037)
	for _, x := range v.V {
		b := math.Float32bits(x)
		for range 4 {
			h ^= uint64(b & 0xff)
			h *= 1099511628211
			b >>= 8
		}
	}
	return h
}

// vector is key's vector as the index holds it; the key must be indexed.
func (s *Similar) vector(key string) similar.Vector {
	v, _ := s.index.Vector(key)
	return v
}

// LoadSimilar reads modelSet's track vectors and their files from the
// store, page by page, and builds the index. A vector whose file is no
// longer stored, or that cannot be normalised, is left out.
func LoadSimilar(ctx context.Context, st store.Store, modelSet string, cfg vectorindex.Config) (*Similar, error) {
	if modelSet == "" {
		return nil, errors.New("similar: no model set (the analyzer records none)")
	}
	vecs, files, err := readSimilar(ctx, st, modelSet)
	if err != nil {
		return nil, err
	}
	return buildSimilar(modelSet, vecs, files, cfg)
}

// readSimilar reads modelSet's track vectors, normalised, and the stored
// files they belong to: every key of vecs has a file in files and the
// other way round; a vector of another width than the first is left out.
func readSimilar(ctx context.Context, st store.Store, modelSet string) (map[string]similar.Vector, map[string]store.File, error) {
	vecs, files := map[string]similar.Vector{}, map[string]store.File{}
	dims := 0
	for after := ""; ; {
		page, err := st.TrackVectors(ctx, modelSet, after, ListBatch)
		if err != nil {
			return nil, nil, fmt.Errorf("similar: read track vectors: %w", err)
		}
		for _, tv := range page {
			v, err := similar.NewVector(modelSet, tv.Vector)
			if err != nil || (dims != 0 && len(v.V) != dims) {
				continue
			}
			dims = len(v.V)
			vecs[tv.FileKey] = v
		}
		if len(page) < ListBatch {
			break
		}
		after = page[len(page)-1].FileKey
	}
	for after := ""; ; {
		page, err := st.ListFiles(ctx, after, ListBatch)
		if err != nil {
			return nil, nil, fmt.Errorf("similar: read files: %w", err)
		}
		for _, f := range page {
			if _, ok := vecs[f.Key]; ok {
				files[f.Key] = f
			}
		}
		if len(page) < ListBatch {
			break
		}
		after = page[len(page)-1].Key
	}
	for k := range vecs {
		if _, ok := files[k]; !ok {
			delete(vecs, k)
		}
	}
	return vecs, files, nil
}

// buildSimilar indexes vecs (readSimilar's) and keeps their checksums.
func buildSimilar(modelSet string, vecs map[string]similar.Vector, files map[string]store.File, cfg vectorindex.Config) (*Similar, error) {
	s := &Similar{ModelSet: modelSet, sums: make(map[string]uint64, len(vecs)), files: files}
	items := make([]similar.Item, 0, len(vecs))
	dims := 1 // an empty index answers nothing
	for k, v := range vecs {
		items = append(items, similar.Item{Key: k, Vec: v})
		s.sums[k] = vectorSum(v)
		dims = len(v.V)
	}
	idx, err := vectorindex.Build(modelSet, dims, items, cfg)
	if err != nil {
		return nil, fmt.Errorf("similar: build the index: %w", err)
	}
	s.index = idx
	return s, nil
}

// holds reports whether s is modelSet's and holds exactly vecs, with
// the same paths as files (readSimilar's): an index built from them
// would answer as s does.
func (s *Similar) holds(modelSet string, vecs map[string]similar.Vector, files map[string]store.File) bool {
	if s.ModelSet != modelSet || len(s.sums) != len(vecs) {
		return false
	}
	for k, v := range vecs {
		had, ok := s.sums[k]
		if !ok || had != vectorSum(v) || s.files[k].Path != files[k].Path {
			return false
		}
	}
	return true
}

// Len is the number of tracks with a vector.
func (s *Similar) Len() int { return len(s.sums) }

// File returns a track's stored file.
func (s *Similar) File(key string) (store.File, bool) {
	f, ok := s.files[key]
	return f, ok
}

// ResolveFile finds the stored file at path (made absolute; through
// symbolic links when the path as given is not stored): ErrUnknownFile
// when the store keeps none.
func ResolveFile(ctx context.Context, st store.Store, path string) (store.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return store.File{}, err
	}
	tries := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		tries = append(tries, real)
	}
	for _, p := range tries {
		f, err := st.File(ctx, library.Key(p))
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return store.File{}, fmt.Errorf("store: %w", err)
		}
	}
	if _, err := os.Stat(abs); err != nil {
		return store.File{}, fmt.Errorf("%s: %w", path, err)
	}
	return store.File{}, fmt.Errorf("%s: %w", path, ErrUnknownFile)
}

// Seed returns the key of the stored file at path, which must have a
// vector (ErrUnknownFile, ErrNoVector).
func (s *Similar) Seed(ctx context.Context, st store.Store, path string) (string, error) {
	f, err := ResolveFile(ctx, st, path)
	if err != nil {
		return "", err
	}
	if _, ok := s.sums[f.Key]; !ok {
		return "", fmt.Errorf("%s: %w", path, ErrNoVector)
	}
	return f.Key, nil
}

// Neighbour is a track close to a query, with its cosine.
type Neighbour struct {
	File  store.File
	Score float32
}

// Nearest returns the n tracks closest to key's, best first, itself left
// out.
func (s *Similar) Nearest(key string, n int) ([]Neighbour, error) {
	q, ok := s.index.Vector(key)
	if !ok {
		return nil, ErrNoVector
	}
	hits, err := s.index.Query(q, n+1)
	if err != nil {
		return nil, err
	}
	out := make([]Neighbour, 0, n)
	for _, h := range hits {
		if h.Key != key && len(out) < n {
			out = append(out, Neighbour{File: s.files[h.Key], Score: h.Score})
		}
	}
	return out, nil
}

// PlaylistRules are the rules of a mix or path: MusiCNN's near-duplicate
// cosine, some diversity, and at most 2 tracks of one artist and 3 of one
// album in a row (TrackOf's artist and album).
var PlaylistRules = similar.Rules{Diversity: 0.3, NearDuplicate: 0.98, MaxArtistRun: 2, MaxAlbumRun: 3}

// TrackOf is a track with the artist and album the run caps look at.
// Neither is stored (the store keeps the tags nomarr writes, not the
// file's own), so they come from the library's folder layout,
// …/ARTIST/ALBUM/FILE: the folder holding the file is its album, the one
// above it its artist.
func (s *Similar) TrackOf(key string) similar.Track {
	f := s.files[key]
	album := filepath.Dir(f.Path)
	return similar.Track{Item: similar.Item{Key: key, Vec: s.vector(key)}, Artist: filepath.Dir(album), Album: album}
}

// candidates are the tracks closest to any of qs, at most n per query.
func (s *Similar) candidates(qs []string, n int) ([]similar.Track, error) {
	seen := map[string]bool{}
	var out []similar.Track
	for _, q := range qs {
		hits, err := s.index.Query(s.vector(q), n)
		if err != nil {
			return nil, err
		}
		for _, h := range hits {
			if !seen[h.Key] {
				seen[h.Key] = true
				out = append(out, s.TrackOf(h.Key))
			}
		}
	}
	return out, nil
}

// Mix is similar.Mix of n tracks from seeds (keys with vectors) over the
// candidates closest to them (10 per track asked for, per seed).
func (s *Similar) Mix(seeds []string, n int) ([]store.File, error) {
	var st []similar.Track
	for _, k := range seeds {
		if _, ok := s.sums[k]; !ok {
			return nil, ErrNoVector
		}
		st = append(st, s.TrackOf(k))
	}
	cands, err := s.candidates(seeds, 10*max(n, 1))
	if err != nil {
		return nil, err
	}
	keys, err := similar.Mix(st, cands, n, PlaylistRules)
	if err != nil {
		return nil, err
	}
	return s.filesOf(keys), nil
}

// Path is similar.Path of n tracks from a to b over the candidates
// closest to the waypoints.
func (s *Similar) Path(a, b string, n int) ([]store.File, error) {
	for _, k := range []string{a, b} {
		if _, ok := s.sums[k]; !ok {
			return nil, ErrNoVector
		}
	}
	if a == b {
		return nil, errors.New("path: both ends are the same track")
	}
	seen := map[string]bool{}
	var cands []similar.Track
	for i := range max(n, 2) {
		w := similar.Slerp(s.vector(a).V, s.vector(b).V, float64(i)/float64(max(n-1, 1)))
		hits, err := s.index.Query(similar.Vector{ModelSet: s.ModelSet, V: w}, 10)
		if err != nil {
			return nil, err
		}
		for _, h := range hits {
			if !seen[h.Key] {
				seen[h.Key] = true
				cands = append(cands, s.TrackOf(h.Key))
			}
		}
	}
	rules := PlaylistRules
	rules.Diversity = 0
	keys, err := similar.Path(s.TrackOf(a), s.TrackOf(b), cands, n, rules)
	if err != nil {
		return nil, err
	}
	return s.filesOf(keys), nil
}

func (s *Similar) filesOf(keys []string) []store.File {
	out := make([]store.File, len(keys))
	for i, k := range keys {
		out[i] = s.files[k]
	}
	return out
}

// TrackTitle is a file's artist and title for a playlist line: its
// folder layout's artist (TrackOf) and its name without the extension.
func TrackTitle(path string) (artist, title string) {
	title = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	artist = filepath.Base(filepath.Dir(filepath.Dir(path)))
	if artist == "/" || artist == "." {
		artist = ""
	}
	return artist, title
}
