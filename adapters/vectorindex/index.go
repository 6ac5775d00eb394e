// Package vectorindex answers "which tracks are closest to this vector"
// over a whole library: an exact scan of int8 codes for small libraries,
// an inverted-file index for large ones: k-means lists in a
// principal-component projection, whose int8 projected codes a query
// scans up to a budget before re-scoring the best candidates at full
// width. It holds the vectors of one model set and rejects any other.
package vectorindex

import (
	"errors"
	"fmt"
	"math"
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
var DefaultConfig = Config{ExactBelow: 20000, ProjDims: 48, Scan: 49152, Rerank: 1024, Seed: 1}

// scanShare caps a query's scan at 1/scanShare of the library, so a
// small library is not scanned half through by the default Scan.
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
// Each vector lives in a slot as int8 codes (similar.Quantize); every
// answer is scored against these codes in full width, never against the
// projection, which only chooses the candidates. Invariants: byKey[k] =
// s ⇔ keys[s] = k ≠ ""; a slot whose key is "" is dead and listed in
// free; with a partition, every live slot is in exactly one list and no
// dead slot is in any.
type Index struct {
	mu       sync.RWMutex
	cfg      Config
	modelSet string
	dims     int

	keys   []string
	codes  []int8 // slot s: codes[s*dims : (s+1)*dims]
	los    []float32
	scales []float32
	byKey  map[string]uint32
	free   []uint32

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
// one of the same key), partitioning once rather than as it grows.
func Build(modelSet string, dims int, items []similar.Item, cfg Config) (*Index, error) {
	x, err := New(modelSet, dims, cfg)
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, it := range items {
		if err := x.put(it.Key, it.Vec); err != nil {
			return nil, err
		}
	}
	if x.live() >= x.cfg.ExactBelow {
		if err := x.rebuild(); err != nil {
			return nil, err
		}
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
// fits the partition again before Add returns.
func (x *Index) Add(key string, v similar.Vector) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.put(key, v); err != nil {
		return err
	}
	if (x.part == nil && x.live() >= x.cfg.ExactBelow) || (x.part != nil && x.live() >= 2*x.builtAt) {
		return x.rebuild()
	}
	return nil
}

// Delete takes key out of the index (a track forgotten) and reports
// whether it was there.
func (x *Index) Delete(key string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.remove(key) {
		return false
	}
	if x.part != nil && x.live() < x.cfg.ExactBelow/2 {
		x.proj, x.part, x.builtAt = nil, nil, 0
	}
	return true
}

// put stores key's vector in a slot, freeing the slot it had, and files
// it in the partition if there is one.
func (x *Index) put(key string, v similar.Vector) error {
	if key == "" {
		return errors.New("vectorindex: empty key")
	}
	if err := x.check(v); err != nil {
		return err
	}
	q := similar.Quantize(v.V)
	if _, err := similar.Normalise(v.V); err != nil {
		return fmt.Errorf("vectorindex: %q: %w", key, err)
	}
	x.remove(key)
	var s uint32
	if n := len(x.free); n > 0 {
		s, x.free = x.free[n-1], x.free[:n-1]
		copy(x.codes[int(s)*x.dims:], q.Codes)
		x.los[s], x.scales[s], x.keys[s] = q.Lo, q.Scale, key
	} else {
		s = uint32(len(x.keys))
		x.codes = append(x.codes, q.Codes...)
		x.los = append(x.los, q.Lo)
		x.scales = append(x.scales, q.Scale)
		x.keys = append(x.keys, key)
	}
	x.byKey[key] = s
	if x.part != nil {
		full, p := make([]float32, x.dims), make([]float32, x.proj.dims())
		x.vector(int(s), full)
		x.proj.project(full, p)
		x.part.place(s, full, p)
	}
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

// vector decodes slot s to float32.
func (x *Index) vector(s int, out []float32) {
	lo, sc := x.los[s], x.scales[s]
	for j, c := range x.codes[s*x.dims : (s+1)*x.dims] {
		out[j] = lo + sc*float32(int(c)+128)
	}
}

// rebuild fits the projection and the centroids on an even sample of the
// live vectors and files every live slot.
func (x *Index) rebuild() error {
	n := x.live()
	step := max(len(x.keys)/sampleMax, 1)
	var sample [][]float32
	for s := 0; s < len(x.keys); s += step {
		if x.keys[s] == "" {
			continue
		}
		v := make([]float32, x.dims)
		x.vector(s, v)
		sample = append(sample, v)
	}
	p, err := fitProjection(sample, x.cfg.ProjDims)
	if err != nil {
		return fmt.Errorf("vectorindex: partition: %w", err)
	}
	for i, v := range sample {
		pv := make([]float32, p.dims())
		p.project(v, pv)
		sample[i] = pv
	}
	lists := x.cfg.Lists
	if lists == 0 {
		lists = int(math.Round(ListsPerRoot * math.Sqrt(float64(n))))
	}
	pt := fitPartition(sample, lists, x.cfg.Seed, p.mean)
	pd := p.dims()
	assign := make([]int32, len(x.keys))
	codes := make([]int8, len(x.keys)*pd)
	bias := make([]float32, len(x.keys))
	full, pv := make([]float32, x.dims), make([]float32, pd)
	for s, k := range x.keys {
		if k == "" {
			assign[s] = -1
			continue
		}
		x.vector(s, full)
		p.project(full, pv)
		c := pt.nearest(pv)
		assign[s] = int32(c)
		pt.encode(c, pv, codes[s*pd:(s+1)*pd])
		bias[s] = dot(pt.mean, full)
	}
	pt.fill(assign, codes, bias)
	x.proj, x.part, x.builtAt = p, pt, n
	return nil
}

// Query returns the k keys whose vectors are closest to q by cosine, best
// first, ties by key. Scores are those of the int8 codes. Below the
// threshold the answer is the exact top k of the codes. With a
// partition, the query scans the projected codes of the lists nearest
// to it until it has scanned Scan of them, keeps the Rerank best by the
// projection's estimate, and answers the top k of those by the
// full-width codes; an answer short of k falls back to the full scan.
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
	qq := similar.NewQuery(q.V)
	if x.part != nil {
		if hits := x.search(q.V, qq, k); len(hits) == want {
			return hits, nil
		}
	}
	top := similar.NewTopK(k)
	for s, key := range x.keys {
		if key != "" {
			x.offer(top, qq, s)
		}
	}
	return top.Hits(), nil
}

// search is the partitioned query. The projection's estimate of q·v is
// p·centroid + scale∘p·codes + mean·v, up to a constant of q: the
// centred dot product restricted to the principal components, plus the
// mean's share.
func (x *Index) search(v []float32, qq similar.Query, k int) []similar.Hit {
	pt := x.part
	sc := x.scratch.get(pt.dims, len(pt.centroids), max(x.cfg.Rerank, k))
	defer x.scratch.put(sc)
	x.proj.project(v, sc.p)
	for j, p := range sc.p {
		sc.qs[j] = p * pt.scale[j]
	}
	order := sc.order
	for c, cv := range pt.centroids {
		pc := dot(sc.p, cv)
		order = append(order, ranked{d: pt.norms[c] - 2*pc, dot: pc, c: int32(c)})
	}
	heapify(order)
	cand := sc.cand
	budget := min(x.cfg.Scan, max(x.live()/scanShare, 1))
	for scanned := 0; scanned < budget && len(order) > 0; {
		var r ranked
		r, order = popClosest(order)
		l := &pt.lists[r.c]
		cand = scanList(cand, l, sc.qs, r.dot)
		scanned += len(l.slots)
	}
	sc.order, sc.cand = order[:0], cand[:0]
	top := similar.NewTopK(k)
	for _, c := range cand {
		x.offer(top, qq, int(c.slot))
	}
	return top.Hits()
}

// offer scores slot s against q and offers it to top.
func (x *Index) offer(top *similar.TopK, q similar.Query, s int) {
	score := similar.DotQuantized(q, x.codes[s*x.dims:(s+1)*x.dims], x.los[s], x.scales[s])
	if !top.Full() || score >= top.Floor().Score {
		top.Offer(similar.Hit{Key: x.keys[s], Score: score})
	}
}
