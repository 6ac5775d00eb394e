// Package store is the port through which the core reads and writes durable
// state (docs/design.md §7, §10). It is shaped for a document store: every method is
// one atomic operation on documents with unique keys, conditional updates and
// deletes; nothing needs cross-collection joins that AQL cannot express.
//
// Every adapter (the simulator's in-memory store, SQLite, ArangoDB) must give
// the same semantics; the store contract suite checks them.
package store

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nomarr/nomarr/core/restart"
)

// Semantic errors. Any other error from a Store means the store is not usable
// right now (down, slow, locked, full): the caller treats it as service_down.
var (
	// ErrConflict: a claim for the file already exists (lost race, not a fault).
	ErrConflict = errors.New("store: claim already exists")
	// ErrNotEligible: the file is no longer eligible (tagged, failed, retry
	// pending, gone) — a stale discovery result, not a fault.
	ErrNotEligible = errors.New("store: file not eligible")
	// ErrClaimLost: the caller no longer holds the claim it names (expired and
	// cleaned up, or released by the owner).
	ErrClaimLost = errors.New("store: claim not held")
	// ErrNotFound: no such document.
	ErrNotFound = errors.New("store: not found")
	// ErrDetached: a fault (IsFault) that no retry in this process mends:
	// the store this process opened is no longer the database the others
	// open at its address (a SQLite file deleted or replaced while open),
	// so none of its writes can reach that database again; a process
	// started anew opens the one now there. Adapters wrap it; the core
	// treats it as any fault, except that a stop does not wait for writes
	// that fail with it (supervisor.Done).
	ErrDetached = errors.New("store: detached from the database at its address")
)

// IsFault reports whether err means the store itself is unusable (as opposed
// to a semantic answer such as a lost race).
func IsFault(err error) bool {
	return err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotEligible) &&
		!errors.Is(err, ErrClaimLost) && !errors.Is(err, ErrNotFound)
}

// IsDetached reports whether err is a fault that lasts as long as this
// process (ErrDetached).
func IsDetached(err error) bool { return errors.Is(err, ErrDetached) }

// File is one document of `library_files`, the single source of truth for work.
type File struct {
	Key           string
	Path          string
	Size          int64
	MtimeMs       int64
	NeedsTagging  bool
	IsValid       bool
	Tagged        bool
	TaggedVersion string
	LastTaggedAt  time.Time
	Attempts      int
	NextRetryAt   time.Time
	SkipUntil     time.Time
	CrashCount    int
	Failed        bool
	LastError     string
	Checkpoint    string
	// StatSeq orders observations of the file's size and mtime (see
	// statseq.go). Stored: the stat sequence of the observation the stored
	// size and mtime come from. Given to UpsertFiles: the number a scan
	// took (NextStatSeq) before it read the file's stat; 0 gives an
	// observation no order, which always applies (tests, a drill's
	// library).
	StatSeq int64
}

// EligibleIgnoringClaims reports whether f is work at time now, before the
// claim check: needs_tagging, valid, not failed, retry and skip times passed.
func (f *File) EligibleIgnoringClaims(now time.Time) bool {
	return f.NeedsTagging && f.IsValid && !f.Failed && !f.NextRetryAt.After(now) && !f.SkipUntil.After(now)
}

// Claim is one document of `worker_claims`, keyed `claim_<file_key>`.
type Claim struct {
	FileKey    string
	WorkerID   string // instance-qualified: <instance>/<component>
	ClaimedAt  time.Time
	LeaseUntil time.Time
	// Kind is the work the claim is for (jobs.go); the zero kind is tagging.
	Kind JobKind
	// ModelSet, for a JobVector claim: the model set whose vector the job
	// makes.
	ModelSet string
}

// Key is the claim's document key; its uniqueness makes exactly one claim win.
func (c Claim) Key() string { return "claim_" + c.FileKey }

// Ref names a claim held by a worker.
type Ref struct {
	FileKey  string
	WorkerID string
}

// Completion is what a successful job records.
type Completion struct {
	Tags    map[string]string
	Version string
	At      time.Time
	// Rewritten, when the job wrote into the file, is the file's size and
	// mtime after the write; they replace the stored ones, so that the next
	// scan does not take the job's own write for a change and tag the file
	// again. The file's StatSeq becomes the store's stat sequence as the
	// completion reads it (at least the stored one): a scan batch that took
	// its number before then, and may have read the file's stat before the
	// write, cannot write that older stat over this one (UpsertFiles).
	// Nil: the file was not written (write_mode none, tags already there);
	// the stored size, mtime and StatSeq stay.
	Rewritten *Stat
	// Claimed, when set, is the file's size and mtime as the job claimed it.
	// A file whose stored size and mtime are neither these nor Rewritten's
	// changed under the job (a scan saw new content): the job analysed the
	// old one, so the completion is refused as ErrClaimLost, the claim is
	// dropped and the file, which needs tagging again, is left for another
	// job.
	Claimed *Stat
}

// SameContent reports whether a file stored with size and mtime is still
// the content the completion's job claimed (or the file as the job itself
// rewrote it); without Claimed, any content is.
func (c Completion) SameContent(size, mtimeMs int64) bool {
	if c.Claimed == nil {
		return true
	}
	same := func(st *Stat) bool { return st != nil && st.Size == size && st.MtimeMs == mtimeMs }
	return same(c.Claimed) || same(c.Rewritten)
}

// Stat is a file's size and modification time as a scan records them.
type Stat struct {
	Size    int64
	MtimeMs int64
}

// FileUpdate is what a failed job records on its file when releasing it.
type FileUpdate struct {
	Attempts    int
	NextRetryAt time.Time
	SkipUntil   time.Time
	Failed      bool
	LastError   string
	Checkpoint  string
	// Missing: the file was not on disk. It becomes not valid, as after a
	// scan that did not find it, and keeps its tagging state; a scan that
	// finds it again unchanged makes it valid again (UpsertFiles).
	Missing bool
	// Reanalyze: the file is not the content its stored tags describe (a
	// retag found it changed): it becomes pending, as a scan that saw it
	// change would make it — not tagged, needs tagging, its retag mark
	// cleared — and the other fields apply.
	Reanalyze bool
	// Claimed, when set, is the file's size and mtime as the job claimed
	// it. A file whose stored size and mtime differ changed under the job
	// (a scan saw new content and reset its tagging state): the update
	// describes the old content, so it is not applied — the release is
	// refused as ErrClaimLost, the claim is dropped and the file, which
	// needs tagging again, is left as the scan made it. This holds for a
	// Missing update too: the file a scan found again is not marked
	// missing. Nil: no check, the update applies to whatever content is
	// stored.
	Claimed *Stat
}

// SameContent reports whether a file stored with size and mtime is still
// the content the update's job claimed; without an update or without
// Claimed, any content is.
func (u *FileUpdate) SameContent(size, mtimeMs int64) bool {
	return u == nil || u.Claimed == nil || (u.Claimed.Size == size && u.Claimed.MtimeMs == mtimeMs)
}

// Released is a claim released because its worker died.
type Released struct {
	FileKey    string
	CrashCount int // the file's crash count after this release
	// Quarantined: this release counted the crash that brought the file's
	// crash count to Crash.QuarantineAt or above, and quarantined it.
	Quarantined bool
}

// Crash is what ReleaseWorker records on the files of a worker that died
// holding them (crashed, or killed): each file's crash_count goes up by
// one, and a file whose new count is QuarantineAt or more is quarantined —
// failed, with Reason as its last error — in the same operation, so that no
// other worker can claim a poison file between its release and its
// quarantine.
type Crash struct {
	QuarantineAt int    // the crash count that quarantines a file (>= 1; less: every crash does)
	Reason       string // the quarantined file's last error
}

// HistoryRow is one component's status in a health-history snapshot.
//
// Invariant: a row's identity is (Instance, Component, At in milliseconds)
// — one snapshot per component per instant per instance. A store holds at
// most one row of an identity (HistoryIdentity); Status is not part of it.
type HistoryRow struct {
	At        time.Time
	Instance  string
	Component string
	Status    string
}

// HistoryIdentity is what makes a HistoryRow unique (see HistoryRow).
type HistoryIdentity struct {
	Instance, Component string
	AtMs                int64
}

// Identity returns the row's identity.
func (r HistoryRow) Identity() HistoryIdentity {
	return HistoryIdentity{Instance: r.Instance, Component: r.Component, AtMs: r.At.UnixMilli()}
}

// Counts summarises the library. Tagged, Failed, Pending and Invalid()
// partition the files (ClassOf); Claimed is the claims held, files in
// progress: pending files as a rule, but a claim on a file that went
// missing meanwhile is held until it is released or cleaned up, so Claimed
// is not part of the partition.
type Counts struct {
	Total, Tagged, Failed, Pending, Claimed int
}

// Invalid is the files in none of the other classes: not valid (empty, or
// gone from disk at the last scan) whatever their tags or failure, and
// valid files that are neither tagged, failed nor waiting for tagging.
func (c Counts) Invalid() int { return c.Total - c.Tagged - c.Failed - c.Pending }

// The classes of Counts by name, as a store that counts per class names
// them (ClassOf).
const (
	ClassTagged  = "tagged"
	ClassFailed  = "failed"
	ClassPending = "pending"
	ClassInvalid = "invalid"
)

// ClassOf is the class Counts puts f in: the first that fits of invalid
// (not valid: a file gone at the last scan counts as gone whatever it was
// before, so that a person sees it and `nomarr missing` lists it), tagged,
// failed, pending (needs tagging), and invalid again for a valid file in
// none of these. Every store counts by this rule (SQLite's library_counts
// triggers and ArangoDB's count query spell it in their own language;
// contract test CountsFilesGone).
func ClassOf(f File) string {
	switch {
	case !f.IsValid:
		return ClassInvalid
	case f.Tagged:
		return ClassTagged
	case f.Failed:
		return ClassFailed
	case f.NeedsTagging:
		return ClassPending
	}
	return ClassInvalid
}

// AddClass adds n files of the named class (an unknown name counts toward
// Total only, as invalid files do).
func (c *Counts) AddClass(class string, n int) {
	c.Total += n
	switch class {
	case ClassTagged:
		c.Tagged += n
	case ClassFailed:
		c.Failed += n
	case ClassPending:
		c.Pending += n
	}
}

// Library is the work queue: files and their claims.
//
// Key order is byte order (Go's string comparison) for keys of lower-case
// hexadecimal digits, which is all the scanner produces; for other keys an
// adapter may use its server's string order (ArangoDB: ICU collation),
// consistently for the order and the `after` cursor.
type Library interface {
	// UpsertFiles inserts new files and updates size/mtime of known ones (a
	// changed file needs tagging again). Tagging state of unchanged files is
	// kept; an unchanged file whose validity differs (it was marked missing
	// and came back) takes the given validity and keeps its tagging state.
	//
	// A known file given with a StatSeq is changed only if its stored
	// StatSeq is lower (StatNewer), checked in the same operation: an
	// observation older than the stored one (a job recorded its rewrite,
	// or another scan its stat, after this scan took its number) leaves
	// the file as it is, validity included. A file written takes the
	// higher of the two numbers. A number above the stat sequence's value,
	// read in the same operation (one taken from another store: the
	// database replaced while the scan ran), counts as that value
	// (ClampStatSeq): no stored StatSeq exceeds the sequence, which the
	// upsert does not move.
	//
	// It answers what it did with each file (Upserted: inserted, changed,
	// returned or unchanged, by UpsertOutcomeOf on the file as stored when
	// it is written, in the same operation), so that a scan can say how
	// many of the files it found were new, changed or back. With an error
	// the counts are zero, whether or not the batch was applied (a fault
	// after the commit loses the answer).
	UpsertFiles(ctx context.Context, files []File) (Upserted, error)
	// NextStatSeq advances the store's stat sequence by one and returns
	// its new value, atomically: no two calls return the same number. A
	// scan takes one before it reads the stats of a batch of files and
	// gives it to UpsertFiles with them (File.StatSeq).
	NextStatSeq(ctx context.Context) (int64, error)
	// Discover returns up to limit eligible, unclaimed files in key order, with
	// keys greater than after (empty: from the start).
	Discover(ctx context.Context, now time.Time, after string, limit int) ([]File, error)
	// Claim inserts c if the file is work of c.Kind at c.ClaimedAt
	// (ClaimableFor) and unclaimed,
	// and returns the file as it is once claimed, read in the same
	// operation: its attempts and checkpoint are the ones the job must start
	// from, whatever an earlier Discover saw (another worker may have tried
	// and released the file since). ErrConflict or ErrNotEligible otherwise.
	Claim(ctx context.Context, c Claim) (File, error)
	// Complete atomically records the completion, clears the file's retag
	// mark and deletes the claim, only
	// if ref still holds it (ErrClaimLost otherwise, nothing changed) and
	// the file is still the content the job claimed (Completion.Claimed;
	// ErrClaimLost otherwise, the claim dropped, the file unchanged).
	Complete(ctx context.Context, ref Ref, c Completion) error
	// Release deletes ref's claim and applies upd to its file (when non-nil)
	// atomically, only if ref still holds it (ErrClaimLost otherwise,
	// nothing changed) and the file is still the content the job claimed
	// (FileUpdate.Claimed; ErrClaimLost otherwise, the claim dropped, the
	// file unchanged). A file gone from the store: the claim is dropped,
	// nil returned.
	Release(ctx context.Context, ref Ref, upd *FileUpdate) error
	// ReleaseWorker deletes every claim held by workerID and returns them
	// in key order, each with its file's crash count. With crash (the
	// worker died holding them) it also, in the same operation, increments
	// each file's crash_count and quarantines the files whose count
	// reaches crash.QuarantineAt (Released.Quarantined); nil: the counts
	// are left alone (a worker stopped on purpose). A claim whose file is
	// gone is released with a crash count of 0.
	//
	// Its answer is recoverable (receipt.go): with a death.ID, a call that
	// releases something keeps, in the same operation, a receipt of its
	// answer (meta ReceiptKey(workerID), one per worker id, replaced by a
	// later death's), and a call with the death of the stored receipt —
	// the caller's retry after a fault, the first call's answer lost after
	// its commit — answers what the receipt holds as well as what it
	// releases itself (Reply), however often it is repeated: the caller
	// hears of every release and quarantine its death made. A call that
	// writes a receipt deletes the receipts of deaths more than
	// ReceiptKeep before death.At.
	ReleaseWorker(ctx context.Context, workerID string, death Death, crash *Crash) ([]Released, error)
	// Quarantine marks a file failed with reason, unconditionally (an
	// operator's or a test's tool: the core quarantines poison files
	// through ReleaseWorker).
	Quarantine(ctx context.Context, fileKey, reason string) error
	// KeepClaim extends the lease of ref's claim to until (never shortening
	// it), only if ref still holds it: ErrClaimLost otherwise, nothing
	// changed. A worker confirms with it that it still holds its file
	// right before a step that needs the claim (the tag write), and keeps
	// its own lease with it once its main process is gone.
	KeepClaim(ctx context.Context, ref Ref, until time.Time) error
	// RenewLeases sets lease_until on every claim held by one of workerIDs.
	RenewLeases(ctx context.Context, workerIDs []string, until time.Time) (int, error)
	// CleanupClaims deletes claims whose lease expired before expiredBefore
	// (a zero time: none counts as expired), or whose file is gone or no
	// longer work of the claim's kind (KeepsClaim: for tagging, a file
	// tagged or ineligible), re-checking the condition in the same operation;
	// it returns the deleted claims. An error may come with claims: work
	// after the deletes (an adapter's housekeeping) failed, and those
	// claims were deleted all the same, to be reported as on success.
	CleanupClaims(ctx context.Context, expiredBefore time.Time) ([]Claim, error)
	// File returns one file.
	File(ctx context.Context, key string) (File, error)
	// Counts summarises the library.
	Counts(ctx context.Context) (Counts, error)
}

// Meta is the small key/value collection of cluster-wide flags
// (`worker_enabled`, `gpu:health`).
type Meta interface {
	GetMeta(ctx context.Context, key string) (value string, ok bool, err error)
	SetMeta(ctx context.Context, key, value string) error
	// SwapMeta sets key to value only if its current value is old (old
	// "": only if the key is absent), in one atomic operation, and reports
	// whether it did. A main process holds its node name through it.
	SwapMeta(ctx context.Context, key, old, value string) (bool, error)
}

// RestartStates persists the restart policy state per component key.
type RestartStates interface {
	LoadRestart(ctx context.Context, key string) (restart.State, bool, error)
	SaveRestart(ctx context.Context, key string, st restart.State) error
}

// History receives batched health snapshots (write-only, never read for
// decisions). rows is only valid during the call: an implementation that
// writes asynchronously must copy it.
type History interface {
	// AppendHistory stores rows, in order. It is idempotent: a
	// row whose identity (HistoryRow.Identity) is stored already — or
	// appears earlier in rows — is skipped, whatever its status, so the
	// caller can send a batch again after a call that failed (the monitor
	// keeps its buffer and sends it with the next snapshot), even when the
	// store wrote it and only its answer was lost. A pruned row's identity
	// is free again.
	AppendHistory(ctx context.Context, rows []HistoryRow) error
}

// HistoryRetention bounds the health history: PruneHistory deletes the rows
// taken before before and returns how many it deleted. It may delete in
// several statements; a failure part-way leaves only newer rows than some of
// the deleted ones, never a gap.
type HistoryRetention interface {
	PruneHistory(ctx context.Context, before time.Time) (int, error)
}

// Inventory lets a rescan notice files that left the disk and files that
// came back. A file that left is kept, marked not valid (so never
// discovered or claimed), with its tagging state, so that it is not tagged
// again when it comes back unchanged (a library on a drive that was not
// mounted for one rescan); UpsertFiles makes it valid again.
type Inventory interface {
	// ListFiles returns up to limit files with keys greater than after, in
	// key order (limit <= 0: no limit).
	ListFiles(ctx context.Context, after string, limit int) ([]File, error)
	// MarkMissing marks the valid files among keys not valid and returns how
	// many it changed; unknown keys are ignored.
	MarkMissing(ctx context.Context, keys []string) (int, error)
	// RetryFailed makes the failed files among keys work again, as the
	// operator asks after fixing a cause (a permission, a codec): not
	// failed, attempts, crash count, retry and skip times reset, last error
	// cleared; the checkpoint is kept. It returns how many it changed;
	// unknown keys and files that are not failed are ignored.
	RetryFailed(ctx context.Context, keys []string) (int, error)
	// Retag makes the files among keys that another model set tagged work
	// again, as a scan asks when the model set changed (its version,
	// nom_version, is not the one a file was tagged with:
	// inventory.Scan.Stale). Each file is checked again in the same operation:
	// only a file still tagged, valid, not failed, with a tagged_version
	// other than version and no claim on it changes, so a file completed
	// meanwhile by the new model set is untouched.
	//
	// A changed file is pending: tagged false, needs_tagging true,
	// attempts, crash count, retry and skip times reset (new work, as for
	// a file whose content changed). Kept: tagged_version and
	// last_tagged_at (what its current tags were made with, until the new
	// completion replaces them), its stored tags, its last error and its
	// checkpoint (the analyzer uses a checkpoint only when its tags carry
	// the current version). A file with a claim is left alone: a claim on
	// a tagged file is stale, CleanupClaims removes it (the file is not
	// pending), and the next call changes the file; changed while claimed,
	// it would become pending under a claim that cleanup keeps, renewed by
	// a live holder that is not working on it.
	//
	// It returns how many files it changed; unknown keys and a repeated
	// key are ignored, and an empty version (unknown: the model files
	// could not be read) changes nothing.
	Retag(ctx context.Context, keys []string, version string) (int, error)
	// ForgetMissing deletes the files among keys that are not valid, with
	// their stored tags and any claim on them, as the operator asks once
	// files have left the library for good (moved, renamed, deleted). Each
	// file is checked again in the same operation: one a scan found again
	// meanwhile (valid) is kept. It returns how many files it deleted;
	// unknown keys and valid files are ignored.
	ForgetMissing(ctx context.Context, keys []string) (int, error)
}

// Store is the whole port.
type Store interface {
	Library
	Inventory
	Meta
	RestartStates
	History
	HistoryRetention
	Vectors
	Browser
	Jobs
	FileInfos
}

// Meta keys.
const (
	MetaWorkerEnabled = "worker_enabled"
	MetaGPUHealth     = "gpu:health" // one host's is GPUHealthKey(node)
	// MetaStatSeq holds the stat sequence, a decimal number that only
	// NextStatSeq writes (absent: 0); no file's StatSeq exceeds it.
	MetaStatSeq = "stat_seq"
)

// GPUHealthKey is the meta key of the GPU health of the host named node
// (`gpu:health:<node>`). Each host's probe writes its own and its workers'
// preflight reads it: hosts sharing one store, one with a working GPU and
// one without, do not overwrite each other's state. An empty node gives
// MetaGPUHealth.
func GPUHealthKey(node string) string {
	if node == "" {
		return MetaGPUHealth
	}
	return MetaGPUHealth + ":" + node
}

// Enabled reads the value of MetaWorkerEnabled (ok: the key exists). Only a
// value that parses as false pauses the workers: an absent or unreadable
// flag never stops the fleet.
func Enabled(v string, ok bool) bool {
	b, err := strconv.ParseBool(v)
	return !ok || err != nil || b
}
