package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/inventory"
)

// A main process keeps its host's model-set record fresh while it runs,
// between scans, and stops when its context ends. The test follows the
// renewals through current, which each one calls before its write.
func TestModelSetKeptRecorded(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	calls := make(chan struct{})
	var version atomic.Value
	version.Store("v1")
	current := func() ModelScan {
		select {
		case calls <- struct{}{}:
		case <-ctx.Done():
		}
		return ModelScan{Node: "n1", Version: version.Load().(string)}
	}
	go func() {
		KeepRecorded(ctx, st, current, 10*time.Millisecond, slog.New(slog.DiscardHandler))
		close(done)
	}()
	record := func() inventory.ModelSet {
		raw, _, err := st.GetMeta(context.Background(), inventory.ModelSetsKey)
		if err != nil {
			t.Fatal(err)
		}
		sets, err := inventory.DecodeModelSets(raw)
		if err != nil {
			t.Fatal(err)
		}
		return sets["n1"]
	}
	// The record once a renewal begun from now on is written: the call
	// taken lets one renewal write, and the next call comes once it has.
	renewed := func() inventory.ModelSet {
		<-calls
		<-calls
		return record()
	}
	first := renewed()
	if first.AtMs == 0 || first.Version != "v1" {
		t.Fatalf("record after the first renewal: %+v, want v1", first)
	}
	// Another write over it (a record of an older run) is renewed over.
	if _, err := (ModelScan{Node: "n1", Version: "old"}).record(ctx, st); err != nil {
		t.Fatal(err)
	}
	if r := renewed(); r.Version != "v1" || r.AtMs < first.AtMs {
		t.Fatalf("record not renewed: %+v after %+v", r, first)
	}
	// Models replaced: the renewals write the new version, not the old
	// (current reads it once its call is taken).
	version.Store("v2")
	if r := renewed(); r.Version != "v2" {
		t.Fatalf("record %+v, want v2 once the models changed", r)
	}
	cancel()
	<-done // KeepRecorded returns once its context ended
}
