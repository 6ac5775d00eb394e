// Package storetest is the store contract suite: the behaviour every
// store.Store adapter (the simulator's memstore, SQLite, ArangoDB) must show,
// as the port's doc comments in core/store define it. An adapter's tests call
// Run with a function that opens a fresh, empty store, and RunConcurrent with
// one that opens another handle on one shared store.
//
// Times given to the store are whole milliseconds of time.Date(2026, …) and
// are compared at millisecond precision: stores keep Unix milliseconds.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
)

// T0 is the suite's reference time.
var T0 = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// At returns T0 + d.
func At(d time.Duration) time.Time { return T0.Add(d) }

// NewFile returns a pending file (needs tagging, valid) with key k.
func NewFile(k string) store.File {
	return store.File{Key: k, Path: "/music/" + k + ".flac", Size: 1000, MtimeMs: 1_700_000_000_000, NeedsTagging: true, IsValid: true}
}

// Keys returns the keys of files, in order.
func Keys(files []store.File) []string {
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, f.Key)
	}
	return out
}

// SameTime reports whether a and b are the same instant at millisecond
// precision (both zero counts as the same).
func SameTime(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() == b.IsZero()
	}
	return a.UnixMilli() == b.UnixMilli()
}

// DiffFile describes how got differs from want ("" when equal, times at
// millisecond precision).
func DiffFile(got, want store.File) string {
	var d []string
	add := func(name string, g, w any) { d = append(d, fmt.Sprintf("%s=%v want %v", name, g, w)) }
	if got.Key != want.Key {
		add("Key", got.Key, want.Key)
	}
	if got.Path != want.Path {
		add("Path", got.Path, want.Path)
	}
	if got.Size != want.Size {
		add("Size", got.Size, want.Size)
	}
	if got.MtimeMs != want.MtimeMs {
		add("MtimeMs", got.MtimeMs, want.MtimeMs)
	}
	if got.NeedsTagging != want.NeedsTagging {
		add("NeedsTagging", got.NeedsTagging, want.NeedsTagging)
	}
	if got.IsValid != want.IsValid {
		add("IsValid", got.IsValid, want.IsValid)
	}
	if got.Tagged != want.Tagged {
		add("Tagged", got.Tagged, want.Tagged)
	}
	if got.TaggedVersion != want.TaggedVersion {
		add("TaggedVersion", got.TaggedVersion, want.TaggedVersion)
	}
	if !SameTime(got.LastTaggedAt, want.LastTaggedAt) {
		add("LastTaggedAt", got.LastTaggedAt, want.LastTaggedAt)
	}
	if got.Attempts != want.Attempts {
		add("Attempts", got.Attempts, want.Attempts)
	}
	if !SameTime(got.NextRetryAt, want.NextRetryAt) {
		add("NextRetryAt", got.NextRetryAt, want.NextRetryAt)
	}
	if !SameTime(got.SkipUntil, want.SkipUntil) {
		add("SkipUntil", got.SkipUntil, want.SkipUntil)
	}
	if got.CrashCount != want.CrashCount {
		add("CrashCount", got.CrashCount, want.CrashCount)
	}
	if got.Failed != want.Failed {
		add("Failed", got.Failed, want.Failed)
	}
	if got.LastError != want.LastError {
		add("LastError", got.LastError, want.LastError)
	}
	if got.Checkpoint != want.Checkpoint {
		add("Checkpoint", got.Checkpoint, want.Checkpoint)
	}
	if got.StatSeq != want.StatSeq {
		add("StatSeq", got.StatSeq, want.StatSeq)
	}
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprint(d)
}

// TagReader is implemented by stores that can read back the tags the last
// completion of a file stored. The port has no such accessor; the suite checks
// tags only on stores that offer it. A store that wraps another may return an
// error matching errors.ErrUnsupported when the wrapped one cannot.
type TagReader interface {
	Tags(ctx context.Context, key string) (map[string]string, error)
}

// HistoryReader is implemented by stores that can read back health history:
// the newest limit rows, oldest first. Same remarks as TagReader.
type HistoryReader interface {
	RecentHistory(ctx context.Context, limit int) ([]store.HistoryRow, error)
}

// Locked wraps s so that every call holds one mutex: it makes a store that is
// not safe for concurrent use (memstore) usable by RunConcurrent. It forwards
// TagReader and HistoryReader when s implements them.
func Locked(s store.Store) store.Store { return &locked{s: s} }

type locked struct {
	mu sync.Mutex
	s  store.Store
}

func (l *locked) UpsertFiles(ctx context.Context, files []store.File) (store.Upserted, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.UpsertFiles(ctx, files)
}

func (l *locked) NextStatSeq(ctx context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.NextStatSeq(ctx)
}

func (l *locked) Discover(ctx context.Context, now time.Time, after string, limit int) ([]store.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Discover(ctx, now, after, limit)
}

func (l *locked) Claim(ctx context.Context, c store.Claim) (store.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Claim(ctx, c)
}

func (l *locked) Complete(ctx context.Context, ref store.Ref, c store.Completion) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Complete(ctx, ref, c)
}

func (l *locked) Release(ctx context.Context, ref store.Ref, upd *store.FileUpdate) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Release(ctx, ref, upd)
}

func (l *locked) ReleaseWorker(ctx context.Context, workerID string, death store.Death, crash *store.Crash) ([]store.Released, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.ReleaseWorker(ctx, workerID, death, crash)
}

func (l *locked) Quarantine(ctx context.Context, fileKey, reason string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Quarantine(ctx, fileKey, reason)
}

func (l *locked) KeepClaim(ctx context.Context, ref store.Ref, until time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.KeepClaim(ctx, ref, until)
}

func (l *locked) RenewLeases(ctx context.Context, workerIDs []string, until time.Time) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.RenewLeases(ctx, workerIDs, until)
}

func (l *locked) CleanupClaims(ctx context.Context, now time.Time) ([]store.Claim, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.CleanupClaims(ctx, now)
}

func (l *locked) File(ctx context.Context, key string) (store.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.File(ctx, key)
}

func (l *locked) ListFiles(ctx context.Context, after string, limit int) ([]store.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.ListFiles(ctx, after, limit)
}

func (l *locked) MarkMissing(ctx context.Context, keys []string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.MarkMissing(ctx, keys)
}

func (l *locked) ForgetMissing(ctx context.Context, keys []string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.ForgetMissing(ctx, keys)
}

func (l *locked) Counts(ctx context.Context) (store.Counts, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Counts(ctx)
}

func (l *locked) GetMeta(ctx context.Context, key string) (string, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.GetMeta(ctx, key)
}

func (l *locked) SetMeta(ctx context.Context, key, value string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.SetMeta(ctx, key, value)
}

func (l *locked) SwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.SwapMeta(ctx, key, old, value)
}

func (l *locked) RetryFailed(ctx context.Context, keys []string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.RetryFailed(ctx, keys)
}

func (l *locked) Retag(ctx context.Context, keys []string, version string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Retag(ctx, keys, version)
}

func (l *locked) LoadRestart(ctx context.Context, key string) (restart.State, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.LoadRestart(ctx, key)
}

func (l *locked) SaveRestart(ctx context.Context, key string, st restart.State) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.SaveRestart(ctx, key, st)
}

func (l *locked) AppendHistory(ctx context.Context, rows []store.HistoryRow) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.AppendHistory(ctx, rows)
}

func (l *locked) PruneHistory(ctx context.Context, before time.Time) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.PruneHistory(ctx, before)
}

// Tags implements TagReader when the wrapped store does.
func (l *locked) Tags(ctx context.Context, key string) (map[string]string, error) {
	tr, ok := l.s.(TagReader)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return tr.Tags(ctx, key)
}

// RecentHistory implements HistoryReader when the wrapped store does.
func (l *locked) RecentHistory(ctx context.Context, limit int) ([]store.HistoryRow, error) {
	hr, ok := l.s.(HistoryReader)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return hr.RecentHistory(ctx, limit)
}

var (
	_ store.Store   = (*locked)(nil)
	_ TagReader     = (*locked)(nil)
	_ HistoryReader = (*locked)(nil)
)

// tagsOf reads a file's tags; ok is false when the store cannot.
func tagsOf(t *testing.T, st store.Store, key string) (map[string]string, bool) {
	t.Helper()
	tr, ok := st.(TagReader)
	if !ok {
		return nil, false
	}
	tags, err := tr.Tags(t.Context(), key)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("Tags(%s): %v", key, err)
	}
	return tags, true
}

// historyOf reads the store's history; ok is false when the store cannot.
func historyOf(t *testing.T, st store.Store, limit int) ([]store.HistoryRow, bool) {
	t.Helper()
	hr, ok := st.(HistoryReader)
	if !ok {
		return nil, false
	}
	rows, err := hr.RecentHistory(t.Context(), limit)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("RecentHistory: %v", err)
	}
	return rows, true
}
