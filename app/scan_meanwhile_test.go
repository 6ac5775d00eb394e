package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/store"
)

// storedMeanwhile is a store in which another process stores a file (once,
// after the scan's first batch): a `nomarr tag` of a new album during a
// daemon's rescan.
type storedMeanwhile struct {
	store.Store
	meanwhile func()
}

func (s *storedMeanwhile) UpsertFiles(ctx context.Context, files []store.File) (store.Upserted, error) {
	did, err := s.Store.UpsertFiles(ctx, files)
	if f := s.meanwhile; f != nil {
		s.meanwhile = nil
		f()
	}
	return did, err
}

// A file stored by another process during the walk, in a folder the walk
// had passed, is on disk: the scan does not mark it missing (it used to,
// for it was not in the walk's findings), while a file that did leave is
// marked.
func TestScanKeepsFilesStoredDuringTheWalk(t *testing.T) {
	lib := t.TempDir()
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.DiscardHandler)
	put := func(name string) string {
		t.Helper()
		p := filepath.Join(lib, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	put("a/old.flac")
	left := put("b/left.flac")
	if _, _, err := scanInto(ctx, st, lib, ModelScan{}, log); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(left); err != nil {
		t.Fatal(err)
	}
	var added string
	other := &storedMeanwhile{Store: st, meanwhile: func() {
		added = put("a/new.flac") // the walk is past a/
		files, _, err := library.Scan(added)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := st.UpsertFiles(ctx, files); err != nil {
			t.Error(err)
		}
	}}
	if _, missing, err := scanInto(ctx, other, lib, ModelScan{}, log); err != nil || missing != 1 {
		t.Fatalf("scan: %d marked missing, %v; want 1 (b/left.flac)", missing, err)
	}
	for p, want := range map[string]bool{added: true, left: false} {
		f, err := st.File(ctx, library.Key(p))
		if err != nil {
			t.Fatal(err)
		}
		if f.IsValid != want {
			t.Errorf("%s: valid %v, want %v", p, f.IsValid, want)
		}
	}
}

// scanInto is ScanLibrary answering only how many audio files the scan
// found and how many it marked missing.
func scanInto(ctx context.Context, st store.Store, dir string, ms ModelScan, log *slog.Logger) (found, missing int, err error) {
	r, err := ScanLibrary(ctx, st, dir, ms, log)
	return r.Found(), r.Missing, err
}
