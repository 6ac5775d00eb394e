// Package vectorindex answers "which tracks are closest to this vector"
// over a whole library: an exact scan of float32 vectors for small
// libraries, an inverted-file index for large ones: k-means lists in a
// principal-component projection, whose int8 projected codes a query
// scans up to a budget before re-scoring the best candidates with them
// and an int8 code of what the projection leaves. It holds the vectors
// of one model set and rejects any other.
package vectorindex

import (
	"errors"
	"fmt"
	"sync"

	"github.com/nomarr/nomarr/core/similar"
)

// Config tunes an Index. Zero fields take the defaults of DefaultConfig.
type Config struct {
	// ExactBelow is the live-vector count under which queries scan every
	// vector; at or above it the index partitions them. The partition is
	// dropped only when the count falls under ExactBelow/2, so a library
	// at the threshold does not rebuild on every change.
	ExactBelow int
	// ProjDims is the width of the principal-component projection the
	// partition is computed in.
	ProjDims int
	// Lists is the number of partition lists; 0 means ListsPerRoot·√n
	// at build time.
	Lists int
	// Scan is the budget of a partitioned query, in projected codes: it
	// scans lists, nearest centroid first, until it has scanned Scan
	// codes (the last list in full), so its cost does not depend on how
	// uneven the lists are.
	Scan int
	// Rerank is how many of the scanned codes, best by the projection,
	// are scored again with the full-width codes for the answer.
	Rerank int
	// Seed seeds the k-means start, so one input builds one index.
	Seed uint64
}

// DefaultConfig holds the measured choices of docs/decisions/similarity.md.
var DefaultConfig = Config{ExactBelow: 20000, ProjDims: 48, Scan: 24576, Rerank: 512, Seed: 1}

// scanShare caps a query's scan at 1/scanShare of the library, so a
// small library is not scanned half through by the default Scan; the
// cap is never under Rerank, since scanning fewer codes than the
// re-rank keeps saves nothing.
const scanShare = 8

// ListsPerRoot sets the default list count, ListsPerRoot·√n.
const ListsPerRoot = 1

func (c Config) withDefaults() Config {
	d := DefaultConfig
	if c.ExactBelow > 0 {
		d.ExactBelow = c.ExactBelow
	}
	if c.ProjDims > 0 {
		d.ProjDims = c.ProjDims
	}
	if c.Lists > 0 {
		d.Lists = c.Lists
	}
	if c.Scan > 0 {
		d.Scan = c.Scan
	}
	if c.Rerank > 0 {
		d.Rerank = c.Rerank
	}
	if c.Seed != 0 {
		d.Seed = c.Seed
	}
	return d
}

// sampleMax bounds the vectors the projection and the centroids are
// fitted on.
const sampleMax = 20000

// Index is a k-nearest-neighbour index over the unit vectors of one model
// set, keyed by track. It is safe for concurrent use; Query runs under a
// read lock, Add and Delete under the write lock.
//
// Without a partition each vector lives in a slot as float32 and a
// query is exact. With one, each lives only as its list entry's codes
// (partition), and every answer is scored with the full code, never
// with the projection, which only chooses the candidates. Invariants:
// byKey[k] = s ⇔ keys[s] = k ≠ ""; a slot whose key is "" is dead and
// listed in free; vecs holds len(keys)·dims values without a partition
// and none with one; with a partition, every live slot is in exactly
// one list and no dead slot is in any.
type Index struct {
	mu       sync.RWMutex
	cfg      Config
	modelSet string
	dims     int

	keys  []string
	vecs  []float32 // slot s: vecs[s*dims : (s+1)*dims], without a partition
	byKey map[string]uint32
	free  []uint32

	proj    *projection
	part    *partition
	builtAt int // live count when the partition was fitted

	scratch scratchPool
}

// ErrModelSet is returned for a vector of another model set than the
// index's.
var ErrModelSet = similar.ErrModelSet

// New returns an empty index for vectors of modelSet, dims wide.
func New(modelSet string, dims int, cfg Config) (*Index, error) {
	if modelSet == "" || dims <= 0 {
		return nil, fmt.Errorf("vectorindex: model set %q, width %d", modelSet, dims)
	}
	return &Index{cfg: cfg.withDefaults(), modelSet: modelSet, dims: dims, byKey: map[string]uint32{}}, nil
}

// Build returns an index holding items (a later item replaces an earlier
// one of the same key). From ExactBelow items on it fits the partition
// once, from the items' own vectors, and holds no float32 copy of them.
func Build(modelSet string, dims int, items []similar.Item, cfg Config) (*Index, error) {
	x, err := New(modelSet, dims, cfg)
	if err != nil {
		return nil, err
	}
	var src []int // slot → index in items
	for i, it := range items {
		if it.Key == "" {
			return nil, errors.New("vectorindex: empty key")
		}
		if err := x.check(it.Vec); err != nil {
			return nil, fmt.Errorf("vectorindex: %q: %w", it.Key, err)
		}
		if _, err := similar.Normalise(it.Vec.V); err != nil {
			return nil, fmt.Errorf("vectorindex: %q: %w", it.Key, err)
		}
		if s, ok := x.byKey[it.Key]; ok {
			src[s] = i
			continue
		}
		x.byKey[it.Key] = uint32(len(x.keys))
		x.keys = append(x.keys, it.Key)
		src = append(src, i)
	}
	get := func(s int, out []float32) { copy(out, items[src[s]].Vec.V) }
	if x.live() >= x.cfg.ExactBelow {
		if err := x.fit(get); err != nil {
			return nil, err
		}
		return x, nil
	}
	x.vecs = make([]float32, len(x.keys)*dims)
	for s := range x.keys {
		get(s, x.vecs[s*dims:(s+1)*dims])
	}
	return x, nil
}

// ModelSet is the model-set version of every vector in the index.
func (x *Index) ModelSet() string { return x.modelSet }

// live is the number of keys in the index. The caller holds a lock.
func (x *Index) live() int { return len(x.byKey) }

// Len is the number of keys in the index.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.live()
}

// Partitioned reports whether queries scan partition lists rather than
// every vector.
func (x *Index) Partitioned() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.part != nil
}

// check rejects a vector the index cannot hold or compare.
func (x *Index) check(v similar.Vector) error {
	if v.ModelSet != x.modelSet {
		return fmt.Errorf("vectorindex: %w: index holds %q, vector is of %q", ErrModelSet, x.modelSet, v.ModelSet)
	}
	if len(v.V) != x.dims {
		return fmt.Errorf("vectorindex: %w: index holds %d, vector has %d", similar.ErrDims, x.dims, len(v.V))
	}
	return nil
}

// Add puts key's vector in the index, replacing the one it had (a track
// tagged again). Crossing ExactBelow, or doubling since the last fit,
// fits the partition again before Add returns; a refit starts from the
// decoded full codes, so a vector refitted r times carries r codes'
// rounding.
func (x *Index) Add(key string, v similar.Vector) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.put(key, v); err != nil {
		return err
	}
	switch {
	case x.part == nil && x.live() >= x.cfg.ExactBelow:
		if err := x.fit(x.vector); err != nil {
			return err
		}
		x.vecs = nil
	case x.part != nil && x.live() >= 2*x.builtAt:
		return x.fit(x.vector)
	}
	return nil
}

// Delete takes key out of the index (a track forgotten) and reports
// whether it was there. Falling under ExactBelow/2 drops the partition
// and decodes every vector.
func (x *Index) Delete(key string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.remove(key) {
		return false
	}
	if x.part != nil && x.live() < x.cfg.ExactBelow/2 {
		vecs := make([]float32, len(x.keys)*x.dims)
		for s, k := range x.keys {
			if k != "" {
				x.vector(s, vecs[s*x.dims:(s+1)*x.dims])
			}
		}
		x.vecs, x.proj, x.part, x.builtAt = vecs, nil, nil, 0
	}
	return true
}

// put stores key's vector in a slot, freeing the slot it had: as
// float32 without a partition, filed in a list with one.
func (x *Index) put(key string, v similar.Vector) error {
	if key == "" {
		return errors.New("vectorindex: empty key")
	}
	if err := x.check(v); err != nil {
		return err
	}
	if _, err := similar.Normalise(v.V); err != nil {
		return fmt.Errorf("vectorindex: %q: %w", key, err)
	}
	x.remove(key)
	var s uint32
	if n := len(x.free); n > 0 {
		s, x.free = x.free[n-1], x.free[:n-1]
		x.keys[s] = key
	} else {
		s = uint32(len(x.keys))
		x.keys = append(x.keys, key)
		if x.part == nil {
			x.vecs = append(x.vecs, make([]float32, x.dims)...)
		}
	}
	x.byKey[key] = s
	if x.part == nil {
		copy(x.vecs[int(s)*x.dims:], v.V)
		return nil
	}
	p := make([]float32, x.proj.dims())
	x.proj.project(v.V, p)
	x.part.place(s, v.V, p)
	return nil
}

// remove frees key's slot and reports whether key was there.
func (x *Index) remove(key string) bool {
	s, ok := x.byKey[key]
	if !ok {
		return false
	}
	delete(x.byKey, key)
	x.keys[s] = ""
	x.free = append(x.free, s)
	if x.part != nil {
		x.part.unplace(s)
	}
	return true
}

// vector writes live slot s's vector into out: the float32 copy, or the
// decoded full code.
func (x *Index) vector(s int, out []float32) {
	if x.part == nil {
		copy(out, x.vecs[s*x.dims:(s+1)*x.dims])
		return
	}
	x.part.vector(uint32(s), out)
}

// Vector returns key's vector as the index holds it, and whether key is
// in the index: exact without a partition, the decoded full code with
// one (within the code's rounding of the vector added).
func (x *Index) Vector(key string) (similar.Vector, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s, ok := x.byKey[key]
	if !ok {
		return similar.Vector{}, false
	}
	out := make([]float32, x.dims)
	x.vector(int(s), out)
	return similar.Vector{ModelSet: x.modelSet, V: out}, true
}

// Query returns the k keys whose vectors are closest to q by cosine, best
// first, ties by key. Without a partition the answer is exact. With one,
// the query scans the projected codes of the lists nearest to it until
// it has scanned Scan of them, keeps the Rerank best by the projection's
// estimate, and answers the top k of those by the full codes, whose
// scores it returns; an answer short of k scans every list.
func (x *Index) Query(q similar.Vector, k int) ([]similar.Hit, error) {
	if err := x.check(q); err != nil {
		return nil, err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	want := min(k, x.live())
	if want <= 0 {
		return nil, nil
	}
	if x.part != nil {
		budget := min(x.cfg.Scan, max(x.live()/scanShare, x.cfg.Rerank))
		if hits := x.search(q.V, k, budget); len(hits) == want {
			return hits, nil
		}
		return x.search(q.V, k, x.live()), nil
	}
	top := similar.NewTopK(k)
	for s, key := range x.keys {
		if key == "" {
			continue
		}
		score := similar.Dot(q.V, x.vecs[s*x.dims:(s+1)*x.dims])
		if !top.Full() || score >= top.Floor().Score {
			top.Offer(similar.Hit{Key: key, Score: score})
		}
	}
	return top.Hits(), nil
}

// search is the partitioned query with a scan budget. With p the
// query's projection, its estimate of q·v from the projected code is
// p·centroid + (p∘scale)·code + mean·v, up to a constant of q: the
// centred dot product restricted to the principal components, plus the
// mean's share. The answer's score is q·v̂ for the decoded v̂ = mean +
// Wᵀp̂ + fscale∘full: q·mean + Wq·centroid + (Wq∘scale)·code +
// (q∘fscale)·full, where Wq = p + W·mean.
func (x *Index) search(v []float32, k, budget int) []similar.Hit {
	pt := x.part
	sc := x.scratch.get(pt.pdims, pt.dims, len(pt.centroids), max(x.cfg.Rerank, k))
	defer x.scratch.put(sc)
	x.proj.project(v, sc.p)
	for j, p := range sc.p {
		sc.qs[j] = p * pt.scale[j]
		sc.wq[j] = p + x.proj.offset[j]
		sc.qw[j] = sc.wq[j] * pt.scale[j]
	}
	for j, q := range v {
		sc.qf[j] = q * pt.fscale[j]
	}
	order := sc.order
	for c, cv := range pt.centroids {
		pc := dot(sc.p, cv)
		order = append(order, ranked{d: pt.norms[c] - 2*pc, dot: pc, c: int32(c)})
	}
	heapify(order)
	cand, probed := sc.cand, sc.probed
	for scanned := 0; scanned < budget && len(order) > 0; {
		var r ranked
		r, order = popClosest(order)
		l := &pt.lists[r.c]
		cand = scanList(cand, l, sc.qs, r.dot, int32(len(probed)))
		probed = append(probed, r.c)
		scanned += len(l.slots)
	}
	top := similar.NewTopK(k)
	base, qm := sc.base[:0], dot(v, x.proj.mean)
	for _, c := range probed {
		base = append(base, qm+dot(sc.wq, pt.centroids[c]))
	}
	pd, d := pt.pdims, pt.dims
	for _, c := range cand {
		l, i := &pt.lists[probed[c.probe]], int(c.pos)
		score := base[c.probe] + dotCodes(sc.qw, l.codes[i*pd:(i+1)*pd]) + dotCodes(sc.qf, l.full[i*d:(i+1)*d])
		if !top.Full() || score >= top.Floor().Score {
			top.Offer(similar.Hit{Key: x.keys[l.slots[i]], Score: score})
		}
	}
	sc.order, sc.cand, sc.probed, sc.base = order[:0], cand[:0], probed[:0], base[:0]
	return top.Hits()
}
