package store

import (
	"context"
	"time"

	"github.com/nomarr/nomarr/core/restart"
)

// Op names one call of the port, for a wrapper that handles every call
// alike (Wrap).
type Op struct {
	// Name is the method's name in snake case ("upsert_files"); no two
	// methods share one.
	Name string
	// Writes: the call may change the store (every method but the reads
	// Discover, File, Counts, ListFiles, GetMeta, LoadRestart,
	// TrackVectors, ListTags, DiscoverRetag, NeedsVector, CountJobs,
	// FileInfo and the Browser's).
	Writes bool
	// Refs, when not nil, lists the claims the call names (its Ref or
	// Claim) or answers (the claims ReleaseWorker released and
	// CleanupClaims deleted, read from the last call's answer): meaningful
	// once a call has returned nil.
	Refs func() []Ref
}

// Call makes one call of the port on st, with ctx; its answer is the one
// the wrapped store's caller gets.
type Call func(ctx context.Context, st Store) error

// Around runs one call made on a wrapped store: it chooses the store the
// call goes to, does what the wrapper adds before and after, and returns
// the caller's error. It may make the call once, several times, or not at
// all (failing it instead).
type Around func(ctx context.Context, op Op, call Call) error

// Wrap returns a Store whose every call goes through around, as a Call of
// the same-named method on the store around gives it.
//
// Invariant: the caller gets the answer of the last call made, with
// around's error; when around makes no call, or fails a call that
// succeeded, it gets zero values with around's error (a result without
// its success is none).
func Wrap(around Around) Store { return wrapped{around: around} }

// wrapped is Wrap's Store: the one type outside the store adapters that
// spells out the port's methods (the architecture test of core/ holds
// every other to it).
type wrapped struct{ around Around }

var _ Store = wrapped{}

// answer runs a call that answers one value.
func answer[T any](w wrapped, ctx context.Context, op Op, f func(context.Context, Store) (T, error)) (T, error) {
	var v T
	made, failed := false, false
	err := w.around(ctx, op, func(ctx context.Context, st Store) error {
		var err error
		v, err = f(ctx, st)
		made, failed = true, err != nil
		return err
	})
	if err != nil && (!made || !failed) {
		var zero T
		return zero, err
	}
	return v, err
}

// pair is the answer of a call that answers two values.
type pair[A, B any] struct {
	a A
	b B
}

// answer2 runs a call that answers two values.
func answer2[A, B any](w wrapped, ctx context.Context, op Op, f func(context.Context, Store) (A, B, error)) (A, B, error) {
	p, err := answer(w, ctx, op, func(ctx context.Context, st Store) (pair[A, B], error) {
		a, b, err := f(ctx, st)
		return pair[A, B]{a, b}, err
	})
	return p.a, p.b, err
}

// refs is Op.Refs for a call that names ref.
func refs(ref Ref) func() []Ref { return func() []Ref { return []Ref{ref} } }

func (w wrapped) UpsertFiles(ctx context.Context, files []File) (Upserted, error) {
	return answer(w, ctx, Op{Name: "upsert_files", Writes: true}, func(ctx context.Context, st Store) (Upserted, error) {
		return st.UpsertFiles(ctx, files)
	})
}

func (w wrapped) NextStatSeq(ctx context.Context) (int64, error) {
	return answer(w, ctx, Op{Name: "next_stat_seq", Writes: true}, func(ctx context.Context, st Store) (int64, error) {
		return st.NextStatSeq(ctx)
	})
}

func (w wrapped) Discover(ctx context.Context, now time.Time, after string, limit int) ([]File, error) {
	return answer(w, ctx, Op{Name: "discover"}, func(ctx context.Context, st Store) ([]File, error) {
		return st.Discover(ctx, now, after, limit)
	})
}

func (w wrapped) Claim(ctx context.Context, c Claim) (File, error) {
	op := Op{Name: "claim", Writes: true, Refs: refs(Ref{FileKey: c.FileKey, WorkerID: c.WorkerID})}
	return answer(w, ctx, op, func(ctx context.Context, st Store) (File, error) {
		return st.Claim(ctx, c)
	})
}

func (w wrapped) Complete(ctx context.Context, ref Ref, c Completion) error {
	return w.around(ctx, Op{Name: "complete", Writes: true, Refs: refs(ref)}, func(ctx context.Context, st Store) error {
		return st.Complete(ctx, ref, c)
	})
}

func (w wrapped) Release(ctx context.Context, ref Ref, upd *FileUpdate) error {
	return w.around(ctx, Op{Name: "release", Writes: true, Refs: refs(ref)}, func(ctx context.Context, st Store) error {
		return st.Release(ctx, ref, upd)
	})
}

func (w wrapped) ReleaseWorker(ctx context.Context, workerID string, death Death, crash *Crash) ([]Released, error) {
	var last []Released
	op := Op{Name: "release_worker", Writes: true, Refs: func() []Ref {
		out := make([]Ref, len(last))
		for i, r := range last {
			out[i] = Ref{FileKey: r.FileKey, WorkerID: workerID}
		}
		return out
	}}
	return answer(w, ctx, op, func(ctx context.Context, st Store) ([]Released, error) {
		rel, err := st.ReleaseWorker(ctx, workerID, death, crash)
		last = rel
		return rel, err
	})
}

func (w wrapped) Quarantine(ctx context.Context, fileKey, reason string) error {
	return w.around(ctx, Op{Name: "quarantine", Writes: true}, func(ctx context.Context, st Store) error {
		return st.Quarantine(ctx, fileKey, reason)
	})
}

func (w wrapped) KeepClaim(ctx context.Context, ref Ref, until time.Time) error {
	return w.around(ctx, Op{Name: "keep_claim", Writes: true, Refs: refs(ref)}, func(ctx context.Context, st Store) error {
		return st.KeepClaim(ctx, ref, until)
	})
}

func (w wrapped) RenewLeases(ctx context.Context, workerIDs []string, until time.Time) (int, error) {
	return answer(w, ctx, Op{Name: "renew_leases", Writes: true}, func(ctx context.Context, st Store) (int, error) {
		return st.RenewLeases(ctx, workerIDs, until)
	})
}

func (w wrapped) CleanupClaims(ctx context.Context, expiredBefore time.Time) ([]Claim, error) {
	var last []Claim
	op := Op{Name: "cleanup_claims", Writes: true, Refs: func() []Ref {
		out := make([]Ref, len(last))
		for i, c := range last {
			out[i] = Ref{FileKey: c.FileKey, WorkerID: c.WorkerID}
		}
		return out
	}}
	return answer(w, ctx, op, func(ctx context.Context, st Store) ([]Claim, error) {
		gone, err := st.CleanupClaims(ctx, expiredBefore)
		last = gone
		return gone, err
	})
}

func (w wrapped) File(ctx context.Context, key string) (File, error) {
	return answer(w, ctx, Op{Name: "file"}, func(ctx context.Context, st Store) (File, error) {
		return st.File(ctx, key)
	})
}

func (w wrapped) Counts(ctx context.Context) (Counts, error) {
	return answer(w, ctx, Op{Name: "counts"}, func(ctx context.Context, st Store) (Counts, error) {
		return st.Counts(ctx)
	})
}

func (w wrapped) ListFiles(ctx context.Context, after string, limit int) ([]File, error) {
	return answer(w, ctx, Op{Name: "list_files"}, func(ctx context.Context, st Store) ([]File, error) {
		return st.ListFiles(ctx, after, limit)
	})
}

func (w wrapped) MarkMissing(ctx context.Context, keys []string) (int, error) {
	return answer(w, ctx, Op{Name: "mark_missing", Writes: true}, func(ctx context.Context, st Store) (int, error) {
		return st.MarkMissing(ctx, keys)
	})
}

func (w wrapped) RetryFailed(ctx context.Context, keys []string) (int, error) {
	return answer(w, ctx, Op{Name: "retry_failed", Writes: true}, func(ctx context.Context, st Store) (int, error) {
		return st.RetryFailed(ctx, keys)
	})
}

func (w wrapped) Retag(ctx context.Context, keys []string, version string) (int, error) {
	return answer(w, ctx, Op{Name: "retag", Writes: true}, func(ctx context.Context, st Store) (int, error) {
		return st.Retag(ctx, keys, version)
	})
}

func (w wrapped) ForgetMissing(ctx context.Context, keys []string) (int, error) {
	return answer(w, ctx, Op{Name: "forget_missing", Writes: true}, func(ctx context.Context, st Store) (int, error) {
		return st.ForgetMissing(ctx, keys)
	})
}

func (w wrapped) GetMeta(ctx context.Context, key string) (string, bool, error) {
	return answer2(w, ctx, Op{Name: "get_meta"}, func(ctx context.Context, st Store) (string, bool, error) {
		return st.GetMeta(ctx, key)
	})
}

func (w wrapped) SetMeta(ctx context.Context, key, value string) error {
	return w.around(ctx, Op{Name: "set_meta", Writes: true}, func(ctx context.Context, st Store) error {
		return st.SetMeta(ctx, key, value)
	})
}

func (w wrapped) SwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	return answer(w, ctx, Op{Name: "swap_meta", Writes: true}, func(ctx context.Context, st Store) (bool, error) {
		return st.SwapMeta(ctx, key, old, value)
	})
}

func (w wrapped) LoadRestart(ctx context.Context, key string) (restart.State, bool, error) {
	return answer2(w, ctx, Op{Name: "load_restart"}, func(ctx context.Context, st Store) (restart.State, bool, error) {
		return st.LoadRestart(ctx, key)
	})
}

func (w wrapped) SaveRestart(ctx context.Context, key string, rs restart.State) error {
	return w.around(ctx, Op{Name: "save_restart", Writes: true}, func(ctx context.Context, st Store) error {
		return st.SaveRestart(ctx, key, rs)
	})
}

func (w wrapped) AppendHistory(ctx context.Context, rows []HistoryRow) error {
	return w.around(ctx, Op{Name: "append_history", Writes: true}, func(ctx context.Context, st Store) error {
		return st.AppendHistory(ctx, rows)
	})
}

func (w wrapped) PruneHistory(ctx context.Context, before time.Time) (int, error) {
	return answer(w, ctx, Op{Name: "prune_history", Writes: true}, func(ctx context.Context, st Store) (int, error) {
		return st.PruneHistory(ctx, before)
	})
}

func (w wrapped) PutTrackVector(ctx context.Context, fileKey, modelSet string, vec []float32) error {
	return w.around(ctx, Op{Name: "put_track_vector", Writes: true}, func(ctx context.Context, st Store) error {
		return st.PutTrackVector(ctx, fileKey, modelSet, vec)
	})
}

func (w wrapped) TrackVectors(ctx context.Context, modelSet, after string, limit int) ([]TrackVector, error) {
	return answer(w, ctx, Op{Name: "track_vectors"}, func(ctx context.Context, st Store) ([]TrackVector, error) {
		return st.TrackVectors(ctx, modelSet, after, limit)
	})
}

func (w wrapped) ListTags(ctx context.Context, after string, limit int) ([]FileTags, error) {
	return answer(w, ctx, Op{Name: "list_tags"}, func(ctx context.Context, st Store) ([]FileTags, error) {
		return st.ListTags(ctx, after, limit)
	})
}

func (w wrapped) Browse(ctx context.Context, q BrowseQuery) (BrowsePage, error) {
	return answer(w, ctx, Op{Name: "browse"}, func(ctx context.Context, st Store) (BrowsePage, error) {
		return st.Browse(ctx, q)
	})
}

func (w wrapped) FileTags(ctx context.Context, key string) (map[string]string, error) {
	return answer(w, ctx, Op{Name: "file_tags"}, func(ctx context.Context, st Store) (map[string]string, error) {
		return st.FileTags(ctx, key)
	})
}

func (w wrapped) TagStats(ctx context.Context) (TagStats, error) {
	return answer(w, ctx, Op{Name: "tag_stats"}, func(ctx context.Context, st Store) (TagStats, error) {
		return st.TagStats(ctx)
	})
}

func (w wrapped) MarkRetag(ctx context.Context, keys []string, version string) (int, error) {
	return answer(w, ctx, Op{Name: "mark_retag", Writes: true}, func(ctx context.Context, st Store) (int, error) {
		return st.MarkRetag(ctx, keys, version)
	})
}

func (w wrapped) DiscoverRetag(ctx context.Context, now time.Time, after string, limit int) ([]File, error) {
	return answer(w, ctx, Op{Name: "discover_retag"}, func(ctx context.Context, st Store) ([]File, error) {
		return st.DiscoverRetag(ctx, now, after, limit)
	})
}

func (w wrapped) NeedsVector(ctx context.Context, now time.Time, modelSet, after string, limit int) ([]File, error) {
	return answer(w, ctx, Op{Name: "needs_vector"}, func(ctx context.Context, st Store) ([]File, error) {
		return st.NeedsVector(ctx, now, modelSet, after, limit)
	})
}

func (w wrapped) CountJobs(ctx context.Context, modelSet string) (JobCounts, error) {
	return answer(w, ctx, Op{Name: "count_jobs"}, func(ctx context.Context, st Store) (JobCounts, error) {
		return st.CountJobs(ctx, modelSet)
	})
}

func (w wrapped) PutFileInfo(ctx context.Context, fileKey string, info FileInfo) error {
	return w.around(ctx, Op{Name: "put_file_info", Writes: true}, func(ctx context.Context, st Store) error {
		return st.PutFileInfo(ctx, fileKey, info)
	})
}

func (w wrapped) FileInfo(ctx context.Context, fileKey string) (FileInfo, error) {
	return answer(w, ctx, Op{Name: "file_info"}, func(ctx context.Context, st Store) (FileInfo, error) {
		return st.FileInfo(ctx, fileKey)
	})
}
