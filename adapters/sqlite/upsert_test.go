package sqlite

import (
	"testing"

	"github.com/nomarr/nomarr/core/store"
)

// The upsert reads the batch's stored files to count what it did with
// each: keys that a JSON array cannot carry as they are (invalid UTF-8,
// a NUL) are read one by one, so their files are counted as any other,
// not taken for new ones.
func TestUpsertCountsOddKeys(t *testing.T) {
	s := openT(t, tempDB(t))
	keys := []string{"\xff\xfe", "a\x00b", "é", "f00"}
	var files []store.File
	for _, k := range keys {
		files = append(files, mkf(k))
	}
	upsert := func(want store.Upserted, files ...store.File) {
		t.Helper()
		got, err := s.UpsertFiles(bg, files)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("UpsertFiles = %+v, want %+v", got, want)
		}
	}
	upsert(store.Upserted{Inserted: 4}, files...)
	upsert(store.Upserted{Unchanged: 4}, files...)
	for _, k := range keys {
		if _, err := s.File(bg, k); err != nil {
			t.Fatalf("File(%q): %v", k, err)
		}
	}
	if n, err := s.MarkMissing(bg, []string{"a\x00b"}); err != nil || n != 1 {
		t.Fatalf("MarkMissing = %d, %v", n, err)
	}
	odd := mkf("\xff\xfe")
	odd.Size++
	upsert(store.Upserted{Changed: 1, Returned: 1, Unchanged: 1}, odd, mkf("a\x00b"), mkf("é"))
}
