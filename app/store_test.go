package app

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrongStoreRecognised: what serve refuses at start (WrongStore) is
// the wrong kind of database, as the SQLite adapter says it: another
// program's tables, a file that is not SQLite, a schema newer than this
// program's. A store it cannot open for other reasons (a directory not
// there, a drive not mounted) is an outage, retried.
func TestWrongStoreRecognised(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.db")
	if err := os.WriteFile(text, bytes.Repeat([]byte("not a database\n"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(dir, "newer.db")
	db, err := sql.Open("sqlite", newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES ('schema_version', '99')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for path, want := range map[string]bool{
		foreignDatabase(t):                      true,
		text:                                    true,
		newer:                                   true,
		filepath.Join(dir, "gone", "nomarr.db"): false,
	} {
		st, err := OpenStore(context.Background(), "sqlite:"+path)
		if err == nil {
			st.Close()
		}
		if got := WrongStore(err); got != want {
			t.Errorf("%s: open error %v: WrongStore %v, want %v", path, err, got, want)
		}
	}
}

func TestRedact(t *testing.T) {
	if got := Redact("arangodb://root:s3cret@db:8529/nomarr"); strings.Contains(got, "s3cret") {
		t.Errorf("password leaked: %s", got)
	}
	if got := Redact("sqlite:/x/y.db"); got != "sqlite:/x/y.db" {
		t.Errorf("got %s", got)
	}
}

// foreignDatabase creates a SQLite database with another program's table.
func foreignDatabase(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "foreign.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE songs (id INTEGER PRIMARY KEY, title TEXT)`); err != nil {
		t.Fatal(err)
	}
	return path
}
