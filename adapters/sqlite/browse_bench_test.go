package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// browseLibrary fills a store with n files, 90 % of them tagged with tags
// of a completion's shape (scores of eight heads, the mood lists, top
// tags, an artist, title and album), 3 % failed, the rest pending, written straight into the tables
// in one transaction (the triggers fill the side tables as a completion
// would).
func browseLibrary(tb testing.TB, n int) *Store {
	s, err := Open(filepath.Join(tb.TempDir(), "browse.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	files := make([]store.File, n)
	for i := range files {
		files[i] = store.File{Key: fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15),
			Path: fmt.Sprintf("/music/Artist %04d/Album %02d/%02d Track.flac", i/40, (i/10)%4, i%10),
			Size: int64(1000 + i), MtimeMs: 1_700_000_000_000, NeedsTagging: true, IsValid: true}
	}
	for c := range slices.Chunk(files, 10_000) {
		if _, err := s.UpsertFiles(bg, c); err != nil {
			tb.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	heads := []string{"happy_musicnn_mood_happy", "sad_musicnn_mood_sad", "party_musicnn_mood_party", "relaxed_musicnn_mood_relaxed",
		"aggressive_musicnn_mood_aggressive", "danceable_musicnn_danceability", "female_musicnn_gender", "acoustic_musicnn_mood_acoustic"}
	genres := []string{"rock", "pop", "jazz", "electronic", "metal", "folk", "soul", "dance", "indie", "ambient"}
	moods := []string{"happy", "sad", "party", "relaxed", "aggressive"}
	err = s.withTx(bg, func(tx *sql.Tx) error {
		for i, f := range files {
			if i%100 >= 93 {
				continue // pending
			}
			if i%100 >= 90 {
				if _, err := tx.ExecContext(bg, `UPDATE library_files SET failed = 1, last_error = 'decode' WHERE key = ?`, f.Key); err != nil {
					return err
				}
				continue
			}
			tags := map[string]string{"nom_version": "v1"}
			var loose []string
			for _, h := range heads {
				x := rng.Float64()
				tags[h] = fmt.Sprintf("%.4f", x)
				tags["not_"+h] = fmt.Sprintf("%.4f", 1-x)
				tags["spread_musicnn_"+h] = "0.1000"
			}
			for _, m := range moods {
				if rng.IntN(3) == 0 {
					loose = append(loose, m)
				}
			}
			tags["mood-loose"] = joinList(loose)
			tags["mood-regular"] = joinList(loose[:len(loose)/2])
			tags["mood-strict"] = joinList(loose[:len(loose)/3])
			tags["top_tags"] = joinList([]string{genres[rng.IntN(len(genres))], genres[rng.IntN(len(genres))]})
			doc, _ := json.Marshal(tags)
			if _, err := tx.ExecContext(bg, `UPDATE library_files SET tagged = 1, needs_tagging = 0, tagged_version = 'v1',
				last_tagged_at = ? WHERE key = ?`, 1_700_000_000_000+int64(i), f.Key); err != nil {
				return err
			}
			if _, err := tx.ExecContext(bg, `INSERT INTO file_tags (file_key, tags, version, written_at) VALUES (?, ?, 'v1', 0)`, f.Key, string(doc)); err != nil {
				return err
			}
			if _, err := tx.ExecContext(bg, `INSERT INTO file_info (file_key, artist, title, album, duration_ms) VALUES (?, ?, ?, ?, 240000)`,
				f.Key, bandNames[i%len(bandNames)], fmt.Sprintf("Song %d", i), fmt.Sprintf("Record %d", i/10)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := s.w.ExecContext(bg, `ANALYZE`); err != nil {
		tb.Fatal(err)
	}
	return s
}

// bandNames are the tagged files' artists, in turn: a search for one
// matches a fifth of them.
var bandNames = []string{"Nina Quartet", "Miles Ensemble", "Aurora Voices", "Bjorn Collective", "Kate Harmonics"}

func joinList(v []string) string {
	out := ""
	for i, x := range v {
		if i > 0 {
			out += store.ListSep
		}
		out += x
	}
	return out
}

// browseQueries are the pages the library page asks for most: filtered
// and sorted by a score, searched (a few matches, a fifth of the files),
// filtered by genre and score range, a deep page of everything, a
// status, a mood of another tier by time.
var browseQueries = []struct {
	name string
	q    store.BrowseQuery
}{
	{"mood", store.BrowseQuery{Status: store.StatusTagged, Mood: "happy", Sort: "happy_musicnn_mood_happy", Desc: true}},
	{"text", store.BrowseQuery{Text: "artist 0123", Sort: store.SortPath}},
	{"text-wide", store.BrowseQuery{Text: "aurora", Sort: store.SortPath}},
	{"genre-score", store.BrowseQuery{Genre: "rock", Scores: []store.ScoreRange{{Key: "danceable_musicnn_danceability", Min: 0.5, Max: 1}}, Offset: 500}},
	{"path", store.BrowseQuery{Sort: store.SortPath, Offset: 50_000}},
	{"status", store.BrowseQuery{Status: store.StatusFailed, Sort: store.SortPath, Desc: true}},
	{"mood-time", store.BrowseQuery{Mood: "sad", MoodTier: store.TierRegular, Sort: store.SortTaggedAt, Desc: true, Offset: 200}},
}

// BenchmarkBrowse: a filtered, sorted page of 50 on a 100,000-file
// library (NOMARR_BENCH_FILES), built once per run, the queries of
// browseQueries in turn; reports p50 and p99 latency of them all, and
// the p99 of each.
func BenchmarkBrowse(b *testing.B) {
	s := browseLibrary(b, benchFiles)
	var all []time.Duration
	each := make([][]time.Duration, len(browseQueries))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		j := i % len(browseQueries)
		q := browseQueries[j].q
		start := time.Now()
		p, err := s.Browse(bg, q)
		d := time.Since(start)
		all, each[j] = append(all, d), append(each[j], d)
		if err != nil || p.Total == 0 {
			b.Fatalf("Browse(%+v) = %d rows of %d, %v", q, len(p.Rows), p.Total, err)
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(percentile(all, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(all, 0.99)), "p99-ms")
	for j, ds := range each {
		b.ReportMetric(ms(percentile(ds, 0.99)), browseQueries[j].name+"-p99-ms")
	}
}

// BenchmarkTagStats: the insights page's summary at 100,000 files.
func BenchmarkTagStats(b *testing.B) {
	s := browseLibrary(b, benchFiles)
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.TagStats(bg); err != nil {
			b.Fatal(err)
		}
	}
}
