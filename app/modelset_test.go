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
// between scans, and stops when its context ends.
func TestModelSetKeptRecorded(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var version atomic.Value
	version.Store("v1")
	go func() {
		KeepRecorded(ctx, st, func() ModelScan { return ModelScan{Node: "n1", Version: version.Load().(string)} },
			10*time.Millisecond, slog.New(slog.DiscardHandler))
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
	var first int64
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if r := record(); first == 0 && r.AtMs != 0 {
			first = r.AtMs
		} else if first != 0 && r.AtMs > first {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("record not written and renewed within 10 s (first %d)", first)
		}
	}
	// Models replaced: the renewals write the new version, not the old.
	version.Store("v2")
	for end := time.Now().Add(10 * time.Second); record().Version != "v2"; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("record %+v, want v2 once the models changed", record())
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("KeepRecorded still running after its context ended")
	}
}
