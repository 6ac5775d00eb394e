package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
)

// ScanResult is what a scan did: audio files found, and what the store
// made of them (new, changed, back from missing, unchanged: kinds), stored
// files marked missing, files sent back to work because another model set
// tagged them, and how many of the files found are pending (valid,
// neither tagged nor failed, and needing tags: store.Counts' Pending; the
// re-tagged ones included).
type ScanResult struct {
	Missing, Retagged, Pending int
	Kinds                      inventory.Found
}

// found is the audio files the walk found: every one of them is in
// exactly one of the kinds (store.UpsertOutcomeOf).
func (r ScanResult) Found() int { return r.Kinds.Files() }

// logAttrs are the scan's counts as log attributes (serve's `scanned
// library` line).
func (r ScanResult) LogAttrs() []any {
	return []any{"files", r.Found(), "new", r.Kinds.New, "changed", r.Kinds.Changed, "back", r.Kinds.Back,
		"unchanged", r.Kinds.Unchanged, "marked_missing", r.Missing}
}

// ScanLibrary scans dir, upserts what it finds, marks missing the stored
// files under dir that it did not find and sends back to work those
// tagged under another model-set version than ms's (core/inventory
// decides which). It counts what the store made of the files found
// (inventory.Found) and the pending files among them.
func ScanLibrary(ctx context.Context, st store.Store, dir string, ms ModelScan, log *slog.Logger) (r ScanResult, err error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return r, fmt.Errorf("scan: %w", err)
	}
	// The walk streams: files go to the store a batch at a time and only
	// their keys are kept, to find the stored files that left. A stop
	// (ctx) ends the walk at its next entry, and an ended walk marks
	// nothing.
	//
	// Each batch carries a stat sequence number taken before the walk
	// reads the first of its stats (core/store/statseq.go): a job that
	// rewrites one of its files and records the new stat before the batch
	// is written keeps it, instead of the batch writing the stat from
	// before the rewrite back over it (the file was analysed again).
	scan := inventory.Scan{Root: root, Seen: map[string]bool{}, Unread: map[string]bool{}}
	batch := make([]store.File, 0, scanBatch)
	seq, err := st.NextStatSeq(ctx)
	if err != nil {
		return r, fmt.Errorf("scan: store: %w", err)
	}
	flush := func() error {
		did, err := st.UpsertFiles(ctx, batch)
		if err != nil {
			return fmt.Errorf("scan: store: %w", err)
		}
		r.Kinds.Add(did)
		batch = batch[:0]
		return nil
	}
	unread, err := library.Walk(ctx, root, func(f store.File) error {
		scan.Seen[f.Key] = true
		f.StatSeq = seq
		if batch = append(batch, f); len(batch) < scanBatch {
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		if seq, err = st.NextStatSeq(ctx); err != nil { // before the next batch's first stat
			return fmt.Errorf("scan: store: %w", err)
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	if err != nil {
		return r, err
	}
	for _, u := range unread {
		log.Warn("scan: cannot read; the files stored at or under it are not marked missing", "path", u.Path, "err", u.Err)
		scan.Unread[u.Path] = true
	}
	version := ms.agree(ctx, st, log)
	for after := ""; ; {
		page, err := st.ListFiles(ctx, after, ListBatch)
		if err != nil {
			return r, fmt.Errorf("scan: store: %w", err)
		}
		for _, f := range page {
			if scan.Seen[f.Key] && f.IsValid && f.NeedsTagging && !f.Tagged && !f.Failed {
				r.Pending++
			}
		}
		if gone := scan.Missing(page, library.OnDisk); len(gone) > 0 {
			n, err := st.MarkMissing(ctx, gone)
			if err != nil {
				return r, fmt.Errorf("scan: store: %w", err)
			}
			r.Missing += n
		}
		if stale := scan.Stale(page, version); len(stale) > 0 {
			n, err := st.Retag(ctx, stale, version)
			if err != nil {
				return r, fmt.Errorf("scan: store: %w", err)
			}
			r.Retagged += n
			r.Pending += n
		}
		if len(page) < ListBatch {
			break
		}
		after = page[len(page)-1].Key
	}
	if r.Missing > 0 {
		log.Info("scan: files no longer on disk marked missing (valid again, tags kept, when they come back)",
			"dir", root, "files", r.Missing)
	}
	if r.Retagged > 0 {
		log.Info("scan: files tagged by another model set sent back to work (their stored tags kept until replaced)",
			"dir", root, "files", r.Retagged, "version", version)
	}
	return r, nil
}

// Batch sizes of a scan's store calls: short write transactions, pages of
// the library small enough to hold.
const (
	scanBatch = 1000
	ListBatch = 5000
)
