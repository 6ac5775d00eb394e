package sqlite

// Opening a SQLite file that this program did not make.

import (
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func tablesOf(t *testing.T, path string) (tables []string, journal string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&journal); err != nil {
		t.Fatal(err)
	}
	return tables, journal
}

func execAll(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// A SQLite file that is not a nomarr database (an application's own
// database given as --db by mistake, e.g. to `nomarr status`) must be
// refused with a clear error and left untouched: not switched to WAL, not
// given nomarr's tables beside the user's.
func TestForeignDatabaseRefused(t *testing.T) {
	for name, ddl := range map[string][]string{
		"customers": {`CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)`, `INSERT INTO customers VALUES (1, 'alice')`},
		// Another program's meta table, without nomarr's schema version.
		"meta": {`CREATE TABLE meta (key TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL)`, `INSERT INTO meta VALUES ('app', 'photos')`},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "photos.db")
			execAll(t, path, ddl...)
			before, jBefore := tablesOf(t, path)

			s, err := Open(path)
			if err == nil {
				s.Close()
				t.Errorf("Open of a non-nomarr SQLite database succeeded; want an error saying it is not a nomarr database")
			} else if !strings.Contains(strings.ToLower(err.Error()), "nomarr") || !errors.Is(err, ErrWrongDatabase) {
				t.Errorf("Open error %q does not say the file is not a nomarr database (ErrWrongDatabase)", err)
			}
			after, jAfter := tablesOf(t, path)
			if !slices.Equal(before, after) || jBefore != jAfter {
				t.Errorf("the foreign database was modified: tables %v -> %v, journal_mode %s -> %s", before, after, jBefore, jAfter)
			}
		})
	}
}

// A database with nomarr tables of an older, incompatible layout and no
// (or an older) schema_version must not be stamped with the current
// schema_version by a bootstrap whose CREATE TABLE IF NOT EXISTS did
// nothing to it; the open fails naming the mismatch, not a missing column.
func TestIncompatibleLayoutNotStamped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	execAll(t, path,
		`CREATE TABLE library_files (key TEXT NOT NULL PRIMARY KEY, path TEXT NOT NULL DEFAULT '',
			size INTEGER NOT NULL DEFAULT 0, mtime_ms INTEGER NOT NULL DEFAULT 0,
			needs_tagging INTEGER NOT NULL DEFAULT 0, is_valid INTEGER NOT NULL DEFAULT 0,
			tagged INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0)`,
		`INSERT INTO library_files VALUES ('abc', '/x/a.mp3', 1, 1, 1, 1, 0, 0)`)

	s, err := Open(path)
	if err == nil {
		s.Close()
		t.Fatal("Open of an incompatible older layout succeeded")
	}
	if !strings.Contains(err.Error(), "schema") || strings.Contains(err.Error(), "no such column") {
		t.Errorf("Open error %q: want one that names the schema mismatch, not a missing column", err)
	}
	db, err2 := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err2 != nil {
		t.Fatal(err2)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = ?`, MetaSchemaVersion).Scan(&v); err == nil {
		t.Errorf("an incompatible database was stamped %s=%s", MetaSchemaVersion, v)
	}
}
