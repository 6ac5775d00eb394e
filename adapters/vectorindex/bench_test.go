package vectorindex

import (
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/hnsw"

	"github.com/nomarr/nomarr/core/similar"
)

// benchSizes are the library sizes of BenchmarkIndex:
// NOMARR_TEST_INDEX_SIZES (comma-separated), default 100,000; a million
// takes minutes (drawing the vectors, the build, the exact answers).
func benchSizes(b *testing.B) []int {
	s := os.Getenv("NOMARR_TEST_INDEX_SIZES")
	if s == "" {
		return []int{100_000}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("NOMARR_TEST_INDEX_SIZES=%q: want sizes like 100000,1000000", s)
		}
		out = append(out, n)
	}
	return out
}

// benchKinds are the indexes BenchmarkIndex measures side by side:
// NOMARR_TEST_INDEX_KINDS, default "ivf" (this package); "hnsw" adds
// github.com/coder/hnsw over the same vectors, up to 100,000 of them
// (its graph alone needs about 1 GB at a million).
func benchKinds() []string {
	if s := os.Getenv("NOMARR_TEST_INDEX_KINDS"); s != "" {
		return strings.Split(s, ",")
	}
	return []string{"ivf"}
}

// searcher is what BenchmarkIndex measures: one built index.
type searcher func(q similar.Vector, k int) ([]similar.Hit, error)

// BenchmarkIndex builds an index over a synthetic library (synth_test.go)
// and reports build time, the heap it holds after the build, query
// latency p50/p99 over 1,000 fresh queries and recall@10 against exact
// float32 search over 200 of them. Run it on one core, once:
//
//	go test ./adapters/vectorindex -run '^$' -bench Index -benchtime 1x -cpu 1 -timeout 60m
//
// with NOMARR_TEST_INDEX_SIZES=100000,1000000 for a million too, and
// NOMARR_TEST_INDEX_KINDS=ivf,hnsw for the HNSW graph beside it.
func BenchmarkIndex(b *testing.B) {
	for _, n := range benchSizes(b) {
		var (
			items   []similar.Item
			queries []similar.Vector
			exact   [][]similar.Hit
		)
		prepare := func(b *testing.B) {
			if items != nil {
				return
			}
			l := newLibrary(5, similar.Dims, n/200)
			items = l.items(n)
			queries = make([]similar.Vector, 1000)
			for i := range queries {
				queries[i] = l.vector()
			}
			exact = make([][]similar.Hit, 200)
			for i := range exact {
				var err error
				if exact[i], err = similar.Nearest(queries[i], items, 10); err != nil {
					b.Fatal(err)
				}
			}
		}
		for _, kind := range benchKinds() {
			b.Run(fmt.Sprintf("%s/%d", kind, n), func(b *testing.B) {
				if kind == "hnsw" && n > 100_000 {
					b.Skip("the HNSW graph of a million vectors needs about 1 GB; measured up to 100,000")
				}
				prepare(b)
				for b.Loop() {
					measureIndex(b, kind, items, queries, exact)
				}
			})
		}
	}
}

func measureIndex(b *testing.B, kind string, items []similar.Item, queries []similar.Vector, exact [][]similar.Hit) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	var search searcher
	var keep any
	switch kind {
	case "ivf":
		x, err := Build(set, similar.Dims, items, Config{})
		if err != nil {
			b.Fatal(err)
		}
		search, keep = x.Query, x
	case "hnsw":
		g := buildHNSW(items)
		search, keep = func(q similar.Vector, k int) ([]similar.Hit, error) {
			var hits []similar.Hit
			for _, nd := range g.Search(q.V, k) {
				hits = append(hits, similar.Hit{Key: nd.Key, Score: similar.Dot(q.V, nd.Value)})
			}
			return hits, nil
		}, g
	default:
		b.Fatalf("NOMARR_TEST_INDEX_KINDS: unknown index %q (ivf, hnsw)", kind)
	}
	build := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)

	lat := make([]time.Duration, len(queries))
	for i, q := range queries {
		t0 := time.Now()
		if _, err := search(q, 10); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	slices.Sort(lat)
	var sum float64
	for i, want := range exact {
		got, err := search(queries[i], 10)
		if err != nil {
			b.Fatal(err)
		}
		sum += recall(got, want)
	}
	b.ReportMetric(build.Seconds(), "build-s")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "heap-MiB")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(sum/float64(len(exact)), "recall@10")
	runtime.KeepAlive(keep)
}

// buildHNSW puts items in a coder/hnsw graph with its defaults (M 16,
// EfSearch 20) raised to EfSearch 100, cosine distance, full width,
// levels drawn from a fixed seed.
func buildHNSW(items []similar.Item) *hnsw.Graph[string] {
	g := hnsw.NewGraph[string]()
	g.Distance = hnsw.CosineDistance
	g.EfSearch = 100
	g.Rng = rand.New(rand.NewSource(1))
	for _, it := range items {
		g.Add(hnsw.MakeNode(it.Key, it.Vec.V))
	}
	return g
}
