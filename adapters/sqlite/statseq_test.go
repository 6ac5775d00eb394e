package sqlite

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// A database of schema version 2 (no stat_seq) is upgraded when it is
// opened for writing: its files keep their state, start at stat_seq 0, and
// a scan's numbered upsert then orders against a job's recorded rewrite.
// Opened read-only first, it is refused with what to do.
func TestSchemaVersion2IsUpgraded(t *testing.T) {
	path := tempDB(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "a", "b")
	tagT(t, s, "b", store.Completion{Version: "v1", At: t0})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A version 2 file made before the extras (schema.go) has none.
	execAll(t, path, append(slices.Concat(undoVersion5, undoVersion4), `ALTER TABLE library_files DROP COLUMN stat_seq`, `DROP INDEX health_history_identity`,
		`UPDATE meta SET value = '2' WHERE key = '`+MetaSchemaVersion+`'`)...)

	s = openUpgraded(t, path, 2)
	if f, err := s.File(bg, "b"); err != nil || !f.Tagged || f.StatSeq != 0 {
		t.Fatalf("tagged file after the upgrade = %+v %v", f, err)
	}
	seq, err := s.NextStatSeq(bg)
	if err != nil || seq != 1 {
		t.Fatalf("NextStatSeq = %d %v, want 1", seq, err)
	}
	if _, err := s.Claim(bg, claim("a", "i/w0", t0, time.Minute)); err != nil {
		t.Fatal(err)
	}
	rewritten := store.Stat{Size: 2000, MtimeMs: mkf("a").MtimeMs + 1}
	if err := s.Complete(bg, store.Ref{FileKey: "a", WorkerID: "i/w0"}, store.Completion{Version: "v1", At: t0, Rewritten: &rewritten}); err != nil {
		t.Fatal(err)
	}
	stale := mkf("a")
	stale.StatSeq = seq
	if _, err := s.UpsertFiles(bg, []store.File{stale}); err != nil {
		t.Fatal(err)
	}
	if f, err := s.File(bg, "a"); err != nil || !f.Tagged || f.Size != 2000 || f.StatSeq != seq {
		t.Fatalf("after a stale scan on the upgraded file: %+v %v", f, err)
	}
}

// openUpgraded opens the database at path, of schema version old: a
// read-only open is refused saying how to upgrade, and an open for
// writing upgrades it to SchemaVersion, laid out as a new database.
func openUpgraded(t *testing.T, path string, old int) *Store {
	t.Helper()
	if ro, err := Open(path, WithReadOnly()); err == nil {
		ro.Close()
		t.Fatalf("a read-only open of a version %d database succeeded; its reads would find what the upgrade adds missing", old)
	} else if !strings.Contains(err.Error(), "open it once for writing") {
		t.Fatalf("read-only open: %v; want it to say how to upgrade", err)
	}
	s := openT(t, path)
	if v, ok, err := s.GetMeta(bg, MetaSchemaVersion); err != nil || !ok || v != strconv.Itoa(SchemaVersion) {
		t.Fatalf("schema_version after the upgrade = %q %v %v, want %d", v, ok, err, SchemaVersion)
	}
	wantLayoutOfNew(t, path)
	return s
}

// wantLayoutOfNew fails unless the file at path has the tables, indexes
// and triggers of a new database, each as a new database creates it: an
// upgraded file is laid out as a new one.
func wantLayoutOfNew(t *testing.T, path string) {
	t.Helper()
	fresh := tempDB(t)
	openT(t, fresh)
	const q = `SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_schema
		WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY type, name`
	got, want := strings1(t, raw(t, path), q), strings1(t, raw(t, fresh), q)
	if !slices.Equal(got, want) {
		t.Fatalf("layout after the upgrade:\n%s\nwant (a new database):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
