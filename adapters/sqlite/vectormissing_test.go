package sqlite

import (
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// undoVectorMissing takes vector_missing out of a closed database, as a
// program before it left the file.
var undoVectorMissing = slices.Concat(dropTriggers("vector_missing_file_insert", "vector_missing_file_delete",
	"vector_missing_file_update", "vector_missing_vector_insert", "vector_missing_vector_delete",
	vectorMissingTrigger), []string{`DROP TABLE IF EXISTS vector_missing`})

// vectorMissingByRule lists "key/model set" of every file that needs a
// vector, from the tables alone.
func vectorMissingByRule(t *testing.T, db *sql.DB) []string {
	t.Helper()
	return strings1(t, db, `SELECT f.key || '/' || f.tagged_version FROM library_files f WHERE `+vectorMissingCond("f")+` ORDER BY 1`)
}

// checkVectorMissing holds vector_missing, NeedsVector and CountJobs to
// the rule and to the statements that walk the tagged files.
func checkVectorMissing(t *testing.T, s *Store, db *sql.DB, step string) {
	t.Helper()
	want := vectorMissingByRule(t, db)
	if kept := strings1(t, db, `SELECT file_key || '/' || model_set FROM vector_missing ORDER BY 1`); !slices.Equal(kept, want) {
		t.Fatalf("%s: vector_missing = %v, the rule gives %v", step, kept, want)
	}
	for _, set := range []string{"v1", "v2", "v3"} {
		got, err := s.NeedsVector(bg, t0.Add(time.Hour), set, "", 0)
		if err != nil {
			t.Fatalf("%s: NeedsVector(%s): %v", step, set, err)
		}
		walked, err := s.queryFiles(bg, "walk", sNeedsVector, 0, set, "", ms(t0.Add(time.Hour)), -1)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fileKeys(got), fileKeys(walked)) {
			t.Fatalf("%s: NeedsVector(%s) = %v, walking the tagged files gives %v", step, set, fileKeys(got), fileKeys(walked))
		}
		var n int
		if err := s.rs[sCountVector].QueryRowContext(bg, set).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if c, err := s.CountJobs(bg, set); err != nil || c.Vector != n {
			t.Fatalf("%s: CountJobs(%s).Vector = %d, %v; the walk counts %d", step, set, c.Vector, err, n)
		}
	}
}

func fileKeys(fs []store.File) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Key
	}
	return out
}

// Every way a file or its vector changes (completions with and without
// a vector, a vector put, a retag, missing, forgotten, quarantined, rows
// and vectors edited, replaced and deleted by hand) keeps vector_missing
// equal to its rule, and NeedsVector and CountJobs equal to a walk of the
// tagged files.
func TestVectorMissingEqualsTheRule(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	if s.vectorMissing == nil {
		t.Fatal("a new store does not keep vector_missing")
	}
	db := raw(t, path)
	check := func(step string) { t.Helper(); checkVectorMissing(t, s, db, step) }
	check("empty")

	var keys []string
	for i := range 20 {
		keys = append(keys, "k"+string(rune('a'+i)))
	}
	seed(t, s, keys...)
	check("scanned")
	vec := []float32{1, 2, 3}
	complete := func(k, version string, withVector bool, now time.Time) {
		t.Helper()
		tagT(t, s, k, store.Completion{Version: version, At: now})
		if withVector {
			if err := s.PutTrackVector(bg, k, version, vec); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, k := range keys[:16] {
		complete(k, "v1", i%2 == 0, t0)
	}
	check("completions, half with a vector")
	for _, k := range keys[1:6:6] {
		if err := s.PutTrackVector(bg, k, "v1", vec); err != nil {
			t.Fatal(err)
		}
	}
	check("vectors put")
	if err := s.PutTrackVector(bg, keys[7], "v2", vec); err != nil { // another model set's
		t.Fatal(err)
	}
	check("a vector of another model set")
	for _, k := range keys[:3] {
		if n, err := s.Retag(bg, []string{k}, "v2"); err != nil || n != 1 {
			t.Fatalf("Retag(%s) = %d, %v", k, n, err)
		}
		complete(k, "v2", k == keys[0], t0.Add(time.Minute))
	}
	check("second completions by another model set")
	if _, err := s.MarkMissing(bg, keys[8:11]); err != nil {
		t.Fatal(err)
	}
	check("marked missing")
	if n, err := s.ForgetMissing(bg, keys[8:10]); err != nil || n != 2 {
		t.Fatalf("ForgetMissing = %d, %v", n, err)
	}
	check("forgotten")
	if err := s.Quarantine(bg, keys[11], "crashed a worker"); err != nil {
		t.Fatal(err)
	}
	check("quarantined")
	changed := mkf(keys[12])
	changed.Size++
	if _, err := s.UpsertFiles(bg, []store.File{changed}); err != nil {
		t.Fatal(err)
	}
	check("rescan found a change")

	for _, q := range []string{
		`UPDATE library_files SET tagged_version = 'v3' WHERE key = 'kn'`,
		`UPDATE library_files SET failed = 1 WHERE key = 'kp'`,
		`UPDATE library_files SET failed = 0 WHERE key = 'kp'`,
		`UPDATE library_files SET key = 'kz' WHERE key = 'ko'`,
		`DELETE FROM track_vectors WHERE file_key = 'ka'`,
		`UPDATE track_vectors SET model_set = 'v3' WHERE file_key = 'kc'`,
		`UPDATE track_vectors SET file_key = 'kp' WHERE file_key = 'ke'`,
		`INSERT OR REPLACE INTO track_vectors (file_key, model_set, vector) VALUES ('kg', 'v2', x'00')`,
		`INSERT OR REPLACE INTO library_files (key, tagged, is_valid, tagged_version) VALUES ('kf', 1, 1, 'v3')`,
		`INSERT INTO library_files (key, tagged, is_valid, tagged_version) VALUES ('ky', 1, 1, 'v1')`,
		`DELETE FROM library_files WHERE key = 'kb'`,
		`UPDATE library_files SET tagged = 0, tagged_version = '' WHERE tagged_version = 'v1'`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		check(q)
	}
	if got := vectorMissingByRule(t, db); len(got) == 0 {
		t.Fatal("the steps leave no file that needs a vector: the last checks compared nothing")
	}
}

// A file made before vector_missing gets it, filled from the tables, at
// its next open for writing; a read-only open of such a file walks the
// tagged files and answers alike.
func TestVectorMissingBuiltOnOpen(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	seed(t, s, "a", "b", "c", "d")
	for i, k := range []string{"a", "b", "c"} {
		tagT(t, s, k, store.Completion{Version: "v1", At: t0})
		if i == 1 {
			if err := s.PutTrackVector(bg, k, "v1", []float32{1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	execAll(t, path, undoVectorMissing...)

	ro := openT(t, path, WithReadOnly())
	if ro.vectorMissing != nil {
		t.Fatal("a read-only open built vector_missing")
	}
	fs, err := ro.NeedsVector(bg, t0, "v1", "", 0)
	if err != nil || !slices.Equal(fileKeys(fs), []string{"a", "c"}) {
		t.Fatalf("read-only NeedsVector = %v, %v; want a, c", fileKeys(fs), err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}

	s = openT(t, path)
	if s.vectorMissing == nil {
		t.Fatal("an open for writing did not build vector_missing")
	}
	checkVectorMissing(t, s, raw(t, path), "built on open")
	if c, err := s.CountJobs(bg, "v1"); err != nil || c.Vector != 2 {
		t.Fatalf("CountJobs = %+v, %v; want 2 vectors", c, err)
	}
}
