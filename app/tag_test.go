package app

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/core/store"
)

// tagViewLog records what a tag run shows, in order.
type tagViewLog struct {
	calls []string
	found ScanResult
}

func (v *tagViewLog) Found(r ScanResult)                   { v.calls, v.found = append(v.calls, "found"), r }
func (v *tagViewLog) Pending(store.Counts, int)            { v.calls = append(v.calls, "pending") }
func (v *tagViewLog) Tagging(int)                          { v.calls = append(v.calls, "tagging") }
func (v *tagViewLog) Progress(int, int, store.Counts, int) { v.calls = append(v.calls, "progress") }
func (v *tagViewLog) Paused()                              { v.calls = append(v.calls, "paused") }
func (v *tagViewLog) Tagged()                              { v.calls = append(v.calls, "tagged") }
func (v *tagViewLog) said() string                         { return strings.Join(v.calls, ",") }

// tagSettings are a tag run's settings with its store under data.
func tagSettings(t *testing.T, data string) *Settings {
	return testSettings(t, "--data-dir", data, "--analyzer", "noop")
}

// musicDir is a folder holding files of the given names.
func musicDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("not really audio, but scanned by name"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// discard is a logger that logs nothing.
func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// A run whose files are all tagged, failed or missing scans, says what it
// found and ends there, without starting a worker.
func TestTagWithNothingToTag(t *testing.T) {
	var v tagViewLog
	end, err := Tag(tagSettings(t, t.TempDir()), musicDir(t), discard(), &v)
	if err != nil {
		t.Fatal(err)
	}
	if end.Stage != TagNothing || end.Before.Total != 0 || v.said() != "found" || v.found.Found() != 0 {
		t.Fatalf("end %+v, view %q; want nothing to tag, said once found", end, v.said())
	}
}

// Under a pause, a run scans, says what it found, and ends without
// starting a worker; its files stay pending.
func TestTagPausedAtStart(t *testing.T) {
	data := t.TempDir()
	s := tagSettings(t, data)
	st, err := OpenForSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetMeta(context.Background(), store.MetaWorkerEnabled, "false"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var v tagViewLog
	end, err := Tag(s, musicDir(t, "a.mp3", "b.flac"), discard(), &v)
	if err != nil {
		t.Fatal(err)
	}
	if end.Stage != TagPausedAtStart || v.said() != "found" || v.found.Found() != 2 || v.found.Pending != 2 {
		t.Fatalf("end %+v, view %q, found %+v; want paused at start after finding 2 pending files", end, v.said(), v.found)
	}
}

// A library that is not a folder is refused before the store is opened.
func TestTagRefusesAMissingLibrary(t *testing.T) {
	data := t.TempDir()
	var v tagViewLog
	_, err := Tag(tagSettings(t, data), filepath.Join(t.TempDir(), "nowhere"), discard(), &v)
	if err == nil || v.said() != "" {
		t.Fatalf("err %v, view %q; want an error and nothing shown", err, v.said())
	}
	if _, serr := os.Stat(filepath.Join(data, "nomarr.db")); !errors.Is(serr, os.ErrNotExist) {
		t.Fatalf("a store was created for a refused run: %v", serr)
	}
}

// A serve whose address is taken returns the error before it opens the
// store or starts anything.
func TestServeRefusedItsAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	data := t.TempDir()
	s := testSettings(t, "--data-dir", data, "--analyzer", "noop", "--http-addr", ln.Addr().String())
	err = Serve(s, discard(), "test")
	var ce *ConfigError
	if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("Serve = %v, want the address's error", err)
	}
	if _, serr := os.Stat(filepath.Join(data, "nomarr.db")); !errors.Is(serr, os.ErrNotExist) {
		t.Fatalf("a store was created by a serve refused its address: %v", serr)
	}
}
