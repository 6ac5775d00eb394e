package sqlite

import (
	"database/sql"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// statsTags are a completion's tags with one score per head and the
// lists (labels repeated and in mixed case on purpose).
func statsTags(happy, sad float64, strict, loose, top string) map[string]string {
	return map[string]string{
		"happy_musicnn_mood_happy": fmt.Sprintf("%.4f", happy), "non_happy_musicnn_mood_happy": fmt.Sprintf("%.4f", 1-happy),
		"sad_musicnn_mood_sad": fmt.Sprintf("%.4f", sad), "spread_musicnn_mood_sad": "0.1",
		store.MoodKey(store.TierStrict): strict, store.MoodKey(store.TierRegular): strict,
		store.MoodKey(store.TierLoose): loose, "top_tags": top, "nom_version": "v1",
	}
}

// recountStats is TagStats by the rule, from the stored tags: every file
// that has both a row and stored tags, counted by store.TagStats.Add.
func recountStats(t *testing.T, db *sql.DB) store.TagStats {
	t.Helper()
	st := store.NewTagStats()
	for _, doc := range strings1(t, db, `SELECT t.tags FROM file_tags t JOIN library_files f ON f.key = t.file_key ORDER BY t.file_key`) {
		tags, err := decodeTags(doc)
		if err != nil {
			t.Fatal(err)
		}
		st.Add(tags)
	}
	return st
}

// sideRecount compares the kept counts with a recount of the side
// tables they count (rows counted down to 0 equal no row).
func sideRecount(t *testing.T, db *sql.DB) error {
	t.Helper()
	pairs := []struct{ kept, recount string }{
		{`SELECT key || '/' || bin || '=' || n FROM browse_bins WHERE n <> 0 ORDER BY 1`,
			`SELECT key || '/' || ` + scoreBin("value") + ` || '=' || count(*) FROM browse_scores GROUP BY key, ` + scoreBin("value") + ` ORDER BY 1`},
		{`SELECT name || '=' || n FROM browse_counts WHERE n <> 0 ORDER BY 1`,
			`SELECT name || '=' || n FROM (SELECT label AS name, count(*) AS n FROM browse_labels GROUP BY label
				UNION ALL SELECT '` + countFiles + `', count(*) FROM browse_tags b JOIN library_files f ON f.key = b.file_key) WHERE n <> 0 ORDER BY 1`},
	}
	for _, p := range pairs {
		if kept, want := strings1(t, db, p.kept), strings1(t, db, p.recount); !slices.Equal(kept, want) {
			return fmt.Errorf("kept %v, a recount gives %v", kept, want)
		}
	}
	return nil
}

// Every way a file's tags or its row change (completions, a second
// completion, retag marks, missing, forgotten, a rescan that finds a
// change, rows edited or deleted by hand) keeps TagStats equal to a count
// of the stored tags, and the kept counts equal to a recount.
func TestTagStatsCountsEqualARecount(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	db := raw(t, path)
	check := func(step string, byRule bool) {
		t.Helper()
		if err := sideRecount(t, db); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		got, err := s.TagStats(bg)
		if err != nil {
			t.Fatalf("%s: TagStats: %v", step, err)
		}
		if !byRule {
			return
		}
		if want := recountStats(t, db); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: TagStats = %+v, counting the stored tags gives %+v", step, got, want)
		}
	}
	check("empty", true)

	var keys []string
	for i := range 30 {
		keys = append(keys, fmt.Sprintf("k%02d", i))
	}
	seed(t, s, keys...)
	complete := func(k string, tags map[string]string, now time.Time) {
		t.Helper()
		tagT(t, s, k, store.Completion{Tags: tags, Version: "v1", At: now})
	}
	moods := []string{"happy", "Sad", "party; party", "", "HAPPY; sad"}
	genres := []string{"rock; pop", "Rock", "jazz;  rock ", ""}
	for i, k := range keys[:24] {
		complete(k, statsTags(float64(i)/24, float64(24-i)/25, moods[i%len(moods)], moods[(i+1)%len(moods)]+"; relaxed", genres[i%len(genres)]), t0)
	}
	check("completions", true)

	for i, k := range keys[:6] { // analysed again: new tags replace the old
		if n, err := s.Retag(bg, []string{k}, "v2"); err != nil || n != 1 {
			t.Fatalf("Retag(%s) = %d, %v", k, n, err)
		}
		complete(k, statsTags(1-float64(i)/7, 0.999, "aggressive", "aggressive; happy", "metal"), t0.Add(time.Hour))
	}
	check("second completions", true)

	if _, err := s.MarkMissing(bg, keys[6:9]); err != nil {
		t.Fatal(err)
	}
	check("marked missing", true)
	if n, err := s.ForgetMissing(bg, keys[6:8]); err != nil || n != 2 {
		t.Fatalf("ForgetMissing = %d, %v", n, err)
	}
	check("forgotten", true)
	changed := mkf(keys[10])
	changed.Size++
	if _, err := s.UpsertFiles(bg, []store.File{changed}); err != nil {
		t.Fatal(err)
	}
	check("rescan found a change", true)

	for _, q := range []string{
		`UPDATE file_tags SET tags = json_set(tags, '$.happy_musicnn_mood_happy', '0.05') WHERE file_key = 'k12'`,
		`UPDATE file_tags SET tags = json_set(tags, '$."mood-loose"', 'calm; calm; Calm') WHERE file_key = 'k13'`,
		`DELETE FROM file_tags WHERE file_key = 'k14'`,
		`INSERT INTO file_tags (file_key, tags, version, written_at) VALUES ('k25', '{"happy_musicnn_mood_happy": "2.5", "top_tags": "rock"}', 'v1', 0)`,
		`UPDATE library_files SET failed = 1 WHERE key = 'k15'`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		check(strings.Fields(q)[0]+" by hand", true)
	}
	// A row deleted by hand leaves its tags behind: the histograms still
	// count them (browse_scores follows file_tags alone), the lists and
	// Files do not.
	if _, err := db.Exec(`DELETE FROM library_files WHERE key = 'k16'`); err != nil {
		t.Fatal(err)
	}
	check("row deleted by hand", false)
	if _, err := db.Exec(`DELETE FROM file_tags`); err != nil {
		t.Fatal(err)
	}
	check("every file's tags deleted", true)
	if got, _ := s.TagStats(bg); got.Files != 0 || len(got.Histograms) != 0 || len(got.TopTags) != 0 || len(got.Moods) != 0 {
		t.Fatalf("TagStats with no tags = %+v", got)
	}
}

// A file whose side tables were built without the counts (by a program
// before them) gets them at its next open for writing, from the rows
// already there.
func TestTagStatsCountsBuiltOnOpen(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	seed(t, s, "a", "b", "c")
	for i, k := range []string{"a", "b", "c"} {
		tagT(t, s, k, store.Completion{Tags: statsTags(float64(i)/3, 0.5, "happy", "happy; sad", "rock"), Version: "v1", At: t0})
	}
	want, err := s.TagStats(bg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := raw(t, path)
	for _, q := range []string{
		`DROP TRIGGER browse_bins_insert`, `DROP TRIGGER browse_bins_delete`,
		`DROP TRIGGER browse_counts_insert`, `DROP TRIGGER browse_counts_delete`,
		`DROP TRIGGER browse_labels_file_insert`, `DROP TRIGGER browse_labels_file_delete`,
		`DROP TRIGGER browse_files_tags_insert`, `DROP TRIGGER browse_files_tags_delete`,
		`DROP TABLE browse_bins`, `DROP TABLE browse_counts`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s = openT(t, path)
	got, err := s.TagStats(bg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || got.Files != 3 || got.Moods[store.TierLoose]["sad"] != 3 {
		t.Fatalf("TagStats after the counts were built = %+v, want %+v", got, want)
	}
	if err := sideRecount(t, db); err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(got.Histograms)); !slices.Equal(keys, []string{"happy_musicnn_mood_happy", "sad_musicnn_mood_sad"}) {
		t.Fatalf("histograms of %v", keys)
	}
}
