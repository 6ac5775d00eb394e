package library

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nomarr/nomarr/core/store"
)

// A walk ends at its next entry once ctx ends, not when the walk is over:
// a stop signal during a long scan was not honoured until the next store
// write (a library of folders without audio made none at all).
func TestWalkStopsWhenContextEnds(t *testing.T) {
	root := t.TempDir()
	for i := range 50 {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"a.flac", "cover.jpg"} {
			if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	visited := 0
	_, err := Walk(ctx, root, func(store.File) error {
		visited++
		cancel() // a stop signal while the first file goes to the store
		return nil
	})
	if !errors.Is(err, context.Canceled) || visited != 1 {
		t.Fatalf("Walk = %v after %d files, want context.Canceled after 1", err, visited)
	}
}
