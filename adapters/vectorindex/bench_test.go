package vectorindex

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/similar"
)

// BenchmarkIndex builds an index of 100k and 1M synthetic track vectors
// and reports build time, heap held by the index after the build, query
// latency p50/p99 over 1,000 fresh queries, and recall@10 against the
// exact float32 search over 100 of them. Run it on one core, once:
//
//	go test ./adapters/vectorindex -run '^$' -bench Index -benchtime 1x -cpu 1 -timeout 30m
func BenchmarkIndex(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			l := newLibrary(5, similar.Dims, n/200)
			items := l.items(n)
			queries := make([]similar.Vector, 1000)
			for i := range queries {
				queries[i] = l.vector()
			}
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				start := time.Now()
				x, err := Build(set, similar.Dims, items, Config{})
				if err != nil {
					b.Fatal(err)
				}
				build := time.Since(start)
				runtime.GC()
				runtime.ReadMemStats(&after)

				lat := make([]time.Duration, len(queries))
				for i, q := range queries {
					t0 := time.Now()
					if _, err := x.Query(q, 10); err != nil {
						b.Fatal(err)
					}
					lat[i] = time.Since(t0)
				}
				slices.Sort(lat)
				var sum float64
				for _, q := range queries[:100] {
					got, _ := x.Query(q, 10)
					exact, _ := similar.Nearest(q, items, 10)
					sum += recall(got, exact)
				}
				b.ReportMetric(build.Seconds(), "build-s")
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(sum/100, "recall@10")
				runtime.KeepAlive(x)
			}
		})
	}
}
