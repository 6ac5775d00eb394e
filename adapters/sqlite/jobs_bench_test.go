package sqlite

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// BenchmarkNeedsVector: an idle worker's look for files that need a
// vector (a batch of 8 from the start) on a library of benchFiles files
// tagged by one model set: every one with its vector (what an idle
// daemon finds on each idle look), and every second one without (the
// backfill under way). Also CountJobs, which /api/v1/info asks at most
// every 2 min.
func BenchmarkNeedsVector(b *testing.B) {
	s := openT(b, tempDB(b))
	files := make([]store.File, 0, benchFiles)
	for i := range benchFiles {
		f := mkf(fmt.Sprintf("%08x", i))
		f.NeedsTagging, f.Tagged, f.TaggedVersion = false, true, "v1"
		files = append(files, f)
	}
	for chunk := range slices.Chunk(files, 10_000) {
		if _, err := s.UpsertFiles(bg, chunk); err != nil {
			b.Fatal(err)
		}
	}
	vec := encodeVector(make([]float32, 200))
	for _, tc := range []struct {
		name string
		fill string // which files get a vector (?1: a vector)
	}{
		{"none-missing", `INSERT OR REPLACE INTO track_vectors (file_key, model_set, vector) SELECT key, 'v1', ?1 FROM library_files`},
		{"half-missing", `DELETE FROM track_vectors WHERE rowid % 2 = 0 AND ?1 IS NOT NULL`},
	} {
		if _, err := s.w.ExecContext(bg, tc.fill, vec); err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			for range b.N {
				start := time.Now()
				fs, err := s.NeedsVector(bg, t0, "v1", "", 8)
				ds = append(ds, time.Since(start))
				if err != nil || (tc.name == "half-missing") != (len(fs) > 0) {
					b.Fatalf("NeedsVector = %d files, %v", len(fs), err)
				}
			}
			b.ReportMetric(float64(percentile(ds, 0.50).Nanoseconds())/1e6, "p50-ms")
		})
		b.Run(tc.name+"/count", func(b *testing.B) {
			for range b.N {
				if _, err := s.CountJobs(bg, "v1"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
