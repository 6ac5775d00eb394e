// Package memstore is an in-memory store.Store with the semantics a real
// store must have — unique claim keys, conditional updates and deletes, every
// method atomic — and injectable faults (down, slow, random errors). The
// simulator runs on it; the store contract suite holds it to the same rules
// as the real adapters.
//
// It is not safe for concurrent use; the simulator is single-threaded.
package memstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
)

// Fault errors.
var (
	ErrDown = errors.New("memstore: store unavailable")
	ErrSlow = errors.New("memstore: deadline exceeded (store slow)")
	ErrFlap = errors.New("memstore: injected error")
)

// Fault is the store's current failure mode.
type Fault int

const (
	Healthy Fault = iota
	Down          // every operation fails
	Slow          // every operation times out
)

// Store is the in-memory store.
type Store struct {
	files   []*store.File  // sorted by key
	index   map[string]int // key → position in files
	pending []int32        // positions of files with NeedsTagging && IsValid && !Failed, ascending
	claims  map[string]*store.Claim
	tags    map[string]map[string]string
	// tagVersions holds the model-set version of each file's stored tags.
	tagVersions map[string]string
	vectors     map[string]store.TrackVector
	// retag holds the files marked for a retag (store.Jobs).
	retag   map[string]bool
	restart map[string]restart.State
	meta    map[string]string
	history []store.HistoryRow
	infos   map[string]store.FileInfo
	// historyIDs holds the identity of every row of history (kept and
	// pruned with it): AppendHistory skips a row already there in O(1).
	historyIDs map[store.HistoryIdentity]struct{}

	fault     Fault
	errorRate float64
	rng       *rand.Rand

	// TagWrites counts successful completions per file (a safety check: never > 1).
	TagWrites map[string]int
	// Ops counts operations attempted; Faults those that failed by injection.
	Ops, Faults int64
}

// New returns an empty store; seed drives the random-error fault.
func New(seed uint64) *Store {
	return &Store{
		index:       map[string]int{},
		claims:      map[string]*store.Claim{},
		tags:        map[string]map[string]string{},
		tagVersions: map[string]string{},
		vectors:     map[string]store.TrackVector{},
		retag:       map[string]bool{},
		infos:       map[string]store.FileInfo{},
		restart:     map[string]restart.State{},
		meta:        map[string]string{},
		historyIDs:  map[store.HistoryIdentity]struct{}{},
		rng:         rand.New(rand.NewPCG(seed, 0x6e6f6d617272)),
		TagWrites:   map[string]int{},
	}
}

// SetFault sets the failure mode.
func (s *Store) SetFault(f Fault) { s.fault = f }

// SetErrorRate makes each operation fail with probability p.
func (s *Store) SetErrorRate(p float64) { s.errorRate = p }

// CurrentFault returns the failure mode.
func (s *Store) CurrentFault() Fault { return s.fault }

func (s *Store) op() error {
	s.Ops++
	switch s.fault {
	case Down:
		s.Faults++
		return ErrDown
	case Slow:
		s.Faults++
		return ErrSlow
	}
	if s.errorRate > 0 && s.rng.Float64() < s.errorRate {
		s.Faults++
		return ErrFlap
	}
	return nil
}

func isPending(f *store.File) bool { return f.NeedsTagging && f.IsValid && !f.Failed }

func (s *Store) setPendingMembership(pos int) {
	p := int32(pos)
	i, found := slices.BinarySearch(s.pending, p)
	want := isPending(s.files[pos])
	switch {
	case want && !found:
		s.pending = slices.Insert(s.pending, i, p)
	case !want && found:
		s.pending = slices.Delete(s.pending, i, i+1)
	}
}

// UpsertFiles implements store.Library: store.UpsertOutcomeOf decides what
// becomes of each file, and is what it answers.
func (s *Store) UpsertFiles(_ context.Context, files []store.File) (store.Upserted, error) {
	var did store.Upserted
	if err := s.op(); err != nil {
		return did, err
	}
	// Validate the whole batch first, so that a bad entry changes nothing.
	last := make(map[string]int, len(files))
	for i, in := range files {
		if in.Key == "" {
			return did, fmt.Errorf("memstore: upsert: file %d has an empty key", i)
		}
		last[in.Key] = i // a key given twice: the last entry wins
	}
	var added []*store.File
	counter := s.statSeq()
	for i, in := range files {
		if last[in.Key] != i {
			continue
		}
		in.StatSeq = store.ClampStatSeq(in.StatSeq, counter) // never above the sequence
		var f *store.File
		pos, known := s.index[in.Key]
		if known {
			f = s.files[pos]
		}
		o := store.UpsertOutcomeOf(f, in, counter)
		did.Count(o)
		switch o {
		case store.UpsertInserted:
			added = append(added, &in)
		case store.UpsertChanged:
			f.StatSeq = max(f.StatSeq, in.StatSeq)
			f.Size, f.MtimeMs, f.Path = in.Size, in.MtimeMs, in.Path
			f.NeedsTagging, f.IsValid, f.Tagged = true, in.IsValid, false
			f.Failed, f.Attempts, f.CrashCount, f.LastError, f.Checkpoint = false, 0, 0, "", ""
			f.NextRetryAt, f.SkipUntil = time.Time{}, time.Time{}
			s.setPendingMembership(pos)
		case store.UpsertReturned:
			f.IsValid = in.IsValid // missing and back: tagging state kept
			f.StatSeq = max(f.StatSeq, in.StatSeq)
			s.setPendingMembership(pos)
		}
	}
	if len(added) == 0 {
		return did, nil
	}
	s.files = append(s.files, added...)
	sort.Slice(s.files, func(i, j int) bool { return s.files[i].Key < s.files[j].Key })
	s.pending = s.pending[:0]
	for i, f := range s.files {
		s.index[f.Key] = i
		if isPending(f) {
			s.pending = append(s.pending, int32(i))
		}
	}
	return did, nil
}

// NextStatSeq implements store.Library.
func (s *Store) NextStatSeq(_ context.Context) (int64, error) {
	if err := s.op(); err != nil {
		return 0, err
	}
	n := s.statSeq() + 1
	s.meta[store.MetaStatSeq] = strconv.FormatInt(n, 10)
	return n, nil
}

// statSeq is the stat sequence's current value.
func (s *Store) statSeq() int64 {
	n, _ := strconv.ParseInt(s.meta[store.MetaStatSeq], 10, 64) // only NextStatSeq writes it; absent: 0
	return n
}

func (s *Store) eligible(f *store.File, now time.Time) bool {
	if !f.EligibleIgnoringClaims(now) {
		return false
	}
	_, claimed := s.claims[f.Key]
	return !claimed
}

// Discover implements store.Library.
func (s *Store) Discover(_ context.Context, now time.Time, after string, limit int) ([]store.File, error) {
	if err := s.op(); err != nil {
		return nil, err
	}
	var out []store.File
	for _, p := range s.pending {
		f := s.files[p]
		if f.Key <= after && after != "" {
			continue
		}
		if s.eligible(f, now) {
			out = append(out, *f)
			if len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

// Claim implements store.Library.
func (s *Store) Claim(_ context.Context, c store.Claim) (store.File, error) {
	if err := s.op(); err != nil {
		return store.File{}, err
	}
	if _, ok := s.claims[c.FileKey]; ok {
		return store.File{}, store.ErrConflict
	}
	pos, ok := s.index[c.FileKey]
	if !ok || !s.claimable(c.Kind, c.ModelSet, s.files[pos], c.ClaimedAt) {
		return store.File{}, store.ErrNotEligible
	}
	cc := c
	s.claims[c.FileKey] = &cc
	return *s.files[pos], nil
}

func (s *Store) held(ref store.Ref) bool {
	c, ok := s.claims[ref.FileKey]
	return ok && c.WorkerID == ref.WorkerID
}

// Complete implements store.Library.
func (s *Store) Complete(_ context.Context, ref store.Ref, c store.Completion) error {
	if err := s.op(); err != nil {
		return err
	}
	if !s.held(ref) {
		return store.ErrClaimLost
	}
	pos, ok := s.index[ref.FileKey]
	if !ok {
		delete(s.claims, ref.FileKey)
		return store.ErrNotFound
	}
	f := s.files[pos]
	if !c.SameContent(f.Size, f.MtimeMs) {
		delete(s.claims, ref.FileKey) // changed under the job: left for another
		return store.ErrClaimLost
	}
	f.Tagged, f.NeedsTagging, f.TaggedVersion, f.LastTaggedAt = true, false, c.Version, c.At
	f.Checkpoint, f.LastError = "", ""
	if c.Rewritten != nil {
		f.Size, f.MtimeMs = c.Rewritten.Size, c.Rewritten.MtimeMs
		f.StatSeq = max(f.StatSeq, s.statSeq())
	}
	s.tags[f.Key] = maps.Clone(c.Tags)
	s.tagVersions[f.Key] = c.Version
	delete(s.retag, f.Key)
	s.TagWrites[f.Key]++
	delete(s.claims, ref.FileKey)
	s.setPendingMembership(pos)
	return nil
}

// Release implements store.Library.
func (s *Store) Release(_ context.Context, ref store.Ref, upd *store.FileUpdate) error {
	if err := s.op(); err != nil {
		return err
	}
	if !s.held(ref) {
		return store.ErrClaimLost
	}
	delete(s.claims, ref.FileKey)
	pos, ok := s.index[ref.FileKey]
	if !ok || upd == nil {
		return nil
	}
	f := s.files[pos]
	if !upd.SameContent(f.Size, f.MtimeMs) {
		return store.ErrClaimLost // changed under the job: left as the scan made it
	}
	f.Attempts, f.NextRetryAt, f.SkipUntil, f.Failed, f.LastError, f.Checkpoint =
		upd.Attempts, upd.NextRetryAt, upd.SkipUntil, upd.Failed, upd.LastError, upd.Checkpoint
	if upd.Missing {
		f.IsValid = false
	}
	if upd.Reanalyze {
		f.Tagged, f.NeedsTagging = false, true
		delete(s.retag, f.Key)
	}
	s.setPendingMembership(pos)
	return nil
}

// ReleaseWorker implements store.Library; the receipt is a meta value, as
// in the other stores.
func (s *Store) ReleaseWorker(_ context.Context, workerID string, death store.Death, crash *store.Crash) ([]store.Released, error) {
	if err := s.op(); err != nil {
		return nil, err
	}
	var keys []string
	for k, c := range s.claims {
		if c.WorkerID == workerID {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]store.Released, 0, len(keys))
	for _, k := range keys {
		delete(s.claims, k)
		r := store.Released{FileKey: k}
		if pos, ok := s.index[k]; ok {
			f := s.files[pos]
			if crash != nil {
				f.CrashCount++
				if f.CrashCount >= crash.QuarantineAt {
					f.Failed, f.LastError = true, crash.Reason
					s.setPendingMembership(pos)
					r.Quarantined = true
				}
			}
			r.CrashCount = f.CrashCount
		}
		out = append(out, r)
	}
	v, ok := s.meta[store.ReceiptKey(workerID)]
	out, keep := store.Reply(store.StoredReceipt(v, ok), death, out)
	if keep != nil {
		for k, v := range s.meta {
			if !strings.HasPrefix(k, store.ReceiptPrefix) {
				continue
			}
			if r := store.StoredReceipt(v, true); r != nil && store.ReceiptExpired(r.AtMs, death.At) {
				delete(s.meta, k)
			}
		}
		s.meta[store.ReceiptKey(workerID)] = keep.Encode()
	}
	return out, nil
}

// Quarantine implements store.Library.
func (s *Store) Quarantine(_ context.Context, fileKey, reason string) error {
	if err := s.op(); err != nil {
		return err
	}
	pos, ok := s.index[fileKey]
	if !ok {
		return store.ErrNotFound
	}
	f := s.files[pos]
	f.Failed, f.LastError = true, reason
	s.setPendingMembership(pos)
	return nil
}

// RenewLeases implements store.Library.
func (s *Store) RenewLeases(_ context.Context, workerIDs []string, until time.Time) (int, error) {
	if err := s.op(); err != nil {
		return 0, err
	}
	n := 0
	for _, c := range s.claims {
		if slices.Contains(workerIDs, c.WorkerID) && until.After(c.LeaseUntil) {
			c.LeaseUntil = until
			n++
		}
	}
	return n, nil
}

// KeepClaim implements store.Library.
func (s *Store) KeepClaim(_ context.Context, ref store.Ref, until time.Time) error {
	if err := s.op(); err != nil {
		return err
	}
	if !s.held(ref) {
		return store.ErrClaimLost
	}
	if c := s.claims[ref.FileKey]; until.After(c.LeaseUntil) {
		c.LeaseUntil = until
	}
	return nil
}

// CleanupClaims implements store.Library.
func (s *Store) CleanupClaims(_ context.Context, now time.Time) ([]store.Claim, error) {
	if err := s.op(); err != nil {
		return nil, err
	}
	var out []store.Claim
	for k, c := range s.claims {
		pos, ok := s.index[k]
		expired := c.LeaseUntil.Before(now)
		if !ok || expired || !store.KeepsClaim(c.Kind, s.files[pos], s.retag[k]) {
			out = append(out, *c)
			delete(s.claims, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FileKey < out[j].FileKey })
	return out, nil
}

// File implements store.Library.
func (s *Store) File(_ context.Context, key string) (store.File, error) {
	if err := s.op(); err != nil {
		return store.File{}, err
	}
	pos, ok := s.index[key]
	if !ok {
		return store.File{}, store.ErrNotFound
	}
	return *s.files[pos], nil
}

// ListFiles implements store.Inventory.
func (s *Store) ListFiles(_ context.Context, after string, limit int) ([]store.File, error) {
	if err := s.op(); err != nil {
		return nil, err
	}
	from := sort.Search(len(s.files), func(i int) bool { return s.files[i].Key > after })
	var out []store.File
	for _, f := range s.files[from:] {
		if limit > 0 && len(out) == limit {
			break
		}
		out = append(out, *f)
	}
	return out, nil
}

// MarkMissing implements store.Inventory.
func (s *Store) MarkMissing(_ context.Context, keys []string) (int, error) {
	if err := s.op(); err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		if pos, ok := s.index[k]; ok && s.files[pos].IsValid {
			s.files[pos].IsValid = false
			s.setPendingMembership(pos)
			n++
		}
	}
	return n, nil
}

// RetryFailed implements store.Inventory.
func (s *Store) RetryFailed(_ context.Context, keys []string) (int, error) {
	if err := s.op(); err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		if pos, ok := s.index[k]; ok && s.files[pos].Failed {
			f := s.files[pos]
			f.Failed, f.Attempts, f.CrashCount, f.LastError = false, 0, 0, ""
			f.NextRetryAt, f.SkipUntil = time.Time{}, time.Time{}
			s.setPendingMembership(pos)
			n++
		}
	}
	return n, nil
}

// Retag implements store.Inventory.
func (s *Store) Retag(_ context.Context, keys []string, version string) (int, error) {
	if err := s.op(); err != nil {
		return 0, err
	}
	if version == "" {
		return 0, nil
	}
	n := 0
	for _, k := range keys {
		pos, ok := s.index[k]
		if !ok {
			continue
		}
		f := s.files[pos]
		if _, claimed := s.claims[k]; claimed || !f.Tagged || !f.IsValid || f.Failed || f.TaggedVersion == version {
			continue
		}
		f.Tagged, f.NeedsTagging = false, true
		f.Attempts, f.CrashCount = 0, 0
		f.NextRetryAt, f.SkipUntil = time.Time{}, time.Time{}
		s.setPendingMembership(pos)
		n++
	}
	return n, nil
}

// ForgetMissing implements store.Inventory.
func (s *Store) ForgetMissing(_ context.Context, keys []string) (int, error) {
	if err := s.op(); err != nil {
		return 0, err
	}
	gone := map[string]bool{}
	for _, k := range keys {
		if pos, ok := s.index[k]; ok && !s.files[pos].IsValid {
			gone[k] = true
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	s.files = slices.DeleteFunc(s.files, func(f *store.File) bool { return gone[f.Key] })
	for k := range gone {
		delete(s.index, k)
		delete(s.claims, k)
		delete(s.tags, k)
		delete(s.tagVersions, k)
		delete(s.vectors, k)
		delete(s.retag, k)
		delete(s.infos, k)
	}
	s.pending = s.pending[:0]
	for i, f := range s.files {
		s.index[f.Key] = i
		if isPending(f) {
			s.pending = append(s.pending, int32(i))
		}
	}
	return len(gone), nil
}

// Counts implements store.Library.
func (s *Store) Counts(_ context.Context) (store.Counts, error) {
	if err := s.op(); err != nil {
		return store.Counts{}, err
	}
	var c store.Counts
	for _, f := range s.files {
		c.AddClass(store.ClassOf(*f), 1)
	}
	c.Claimed = len(s.claims)
	return c, nil
}

// GetMeta implements store.Meta.
func (s *Store) GetMeta(_ context.Context, key string) (string, bool, error) {
	if err := s.op(); err != nil {
		return "", false, err
	}
	v, ok := s.meta[key]
	return v, ok, nil
}

// SetMeta implements store.Meta.
func (s *Store) SetMeta(_ context.Context, key, value string) error {
	if err := s.op(); err != nil {
		return err
	}
	s.meta[key] = value
	return nil
}

// SwapMeta implements store.Meta.
func (s *Store) SwapMeta(_ context.Context, key, old, value string) (bool, error) {
	if err := s.op(); err != nil {
		return false, err
	}
	if cur, ok := s.meta[key]; ok != (old != "") || cur != old {
		return false, nil
	}
	s.meta[key] = value
	return true, nil
}

// LoadRestart implements store.RestartStates.
func (s *Store) LoadRestart(_ context.Context, key string) (restart.State, bool, error) {
	if err := s.op(); err != nil {
		return restart.State{}, false, err
	}
	st, ok := s.restart[key]
	st.Recent = slices.Clone(st.Recent)
	return st, ok, nil
}

// SaveRestart implements store.RestartStates.
func (s *Store) SaveRestart(_ context.Context, key string, st restart.State) error {
	if err := s.op(); err != nil {
		return err
	}
	st.Recent = slices.Clone(st.Recent)
	s.restart[key] = st
	return nil
}

// AppendHistory implements store.History: rows whose identity is there
// already are skipped.
func (s *Store) AppendHistory(_ context.Context, rows []store.HistoryRow) error {
	if err := s.op(); err != nil {
		return err
	}
	for _, r := range rows {
		id := r.Identity()
		if _, dup := s.historyIDs[id]; dup {
			continue // written already (a batch sent again after a lost answer)
		}
		s.historyIDs[id] = struct{}{}
		s.history = append(s.history, r)
	}
	return nil
}

// Inspection helpers for tests and the simulator's checks; they bypass faults.

// PruneHistory implements store.HistoryRetention.
func (s *Store) PruneHistory(_ context.Context, before time.Time) (int, error) {
	if err := s.op(); err != nil {
		return 0, err
	}
	n := len(s.history)
	s.history = slices.DeleteFunc(s.history, func(r store.HistoryRow) bool {
		if r.At.Before(before) {
			delete(s.historyIDs, r.Identity())
			return true
		}
		return false
	})
	return n - len(s.history), nil
}

// Claims returns a copy of all claims, sorted by file.
func (s *Store) Claims() []store.Claim {
	out := make([]store.Claim, 0, len(s.claims))
	for _, c := range s.claims {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FileKey < out[j].FileKey })
	return out
}

// ClaimOf returns the claim on a file, if any.
func (s *Store) ClaimOf(fileKey string) (store.Claim, bool) {
	c, ok := s.claims[fileKey]
	if !ok {
		return store.Claim{}, false
	}
	return *c, true
}

// Files returns copies of all files in key order.
func (s *Store) Files() []store.File {
	out := make([]store.File, len(s.files))
	for i, f := range s.files {
		out[i] = *f
	}
	return out
}

// Each calls fn with every file, in key order, without fault injection
// and without copying, until fn returns false. fn must not change the
// file nor call the store.
func (s *Store) Each(fn func(f *store.File) bool) {
	for _, f := range s.files {
		if !fn(f) {
			return
		}
	}
}

// Peek returns a file without fault injection.
func (s *Store) Peek(key string) (store.File, bool) {
	pos, ok := s.index[key]
	if !ok {
		return store.File{}, false
	}
	return *s.files[pos], true
}

// Tags returns the tags stored for a file.
func (s *Store) Tags(key string) map[string]string { return maps.Clone(s.tags[key]) }

// History returns the history rows written so far.
func (s *Store) History() []store.HistoryRow { return slices.Clone(s.history) }

// RestartState returns a persisted restart state without fault injection.
func (s *Store) RestartState(key string) (restart.State, bool) {
	st, ok := s.restart[key]
	return st, ok
}

// MetaValue returns a meta value without fault injection.
func (s *Store) MetaValue(key string) (string, bool) {
	v, ok := s.meta[key]
	return v, ok
}

var _ store.Store = (*Store)(nil)
