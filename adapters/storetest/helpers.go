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
func Locked(s store.Store) store.Store {
	l := &locked{s: s}
	l.Store = store.Wrap(func(ctx context.Context, _ store.Op, call store.Call) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		return call(ctx, s)
	})
	return l
}

// locked is Locked's store: the port's calls through Wrap, and the
// optional readers under the same mutex.
type locked struct {
	store.Store
	mu sync.Mutex
	s  store.Store
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
