package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/core/store"
)

// A database file deleted or replaced under an open store makes its writes
// and counts fail (a store fault, one that lasts: store.ErrDetached), instead of going on with the old file
// while new processes use the new one.
func TestDeletedOrReplacedFileNoticed(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"deleted", "replaced"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "nomarr.db")
			s, err := Open(path, withFileCheck(0))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			f := store.File{Key: "a", Path: "/m/a.mp3", Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}
			if _, err := s.UpsertFiles(ctx, []store.File{f}); err != nil {
				t.Fatal(err)
			}
			for _, suffix := range []string{"", "-wal", "-shm"} {
				_ = os.Remove(path + suffix)
			}
			if how == "replaced" {
				other, err := Open(path) // a new, empty database at the path
				if err != nil {
					t.Fatal(err)
				}
				other.Close()
			}
			f.Key = "b"
			_, err = s.UpsertFiles(ctx, []store.File{f})
			if err == nil || !strings.Contains(err.Error(), "deleted or replaced") || !store.IsFault(err) || !store.IsDetached(err) {
				t.Fatalf("write after the file was %s: %v, want a store fault naming it, classed as detached", how, err)
			}
			if _, err := s.Counts(ctx); err == nil || !strings.Contains(err.Error(), "deleted or replaced") {
				t.Fatalf("counts after the file was %s: %v", how, err)
			}
		})
	}
}
