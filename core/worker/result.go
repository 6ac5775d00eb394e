package worker

import (
	"context"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// Class is the error class of a failed job (docs/design.md §8).
type Class string

const (
	// OK: the job produced tags.
	OK Class = ""
	// Permanent: undecodable, not audio, too short, missing. The file is
	// failed with a reason; does not count toward the worker's error limit.
	Permanent Class = "permanent"
	// Transient: attempts++, retried later with backoff; failed after the
	// configured number of attempts. Counts toward the error limit.
	Transient Class = "transient"
	// ServiceDown: a dependency (store, gpu, decoder) is unavailable. The file
	// is released untouched; the dependency's breaker records the failure.
	ServiceDown Class = "service_down"
	// Lost: the job's fence found its claim gone before the write into the
	// file (fence.go). Nothing is written, to the file or the store; not the
	// worker's error, so it counts toward nothing.
	Lost Class = "claim_lost"
)

// Dependencies with a circuit breaker each, in a fixed order.
const (
	DepStore   = "store"
	DepGPU     = "gpu"
	DepDecoder = "decoder"
)

var dependencies = []string{DepStore, DepGPU, DepDecoder}

// depModels names the backoff after a failed model load, the worker's own
// step; it has no breaker.
const depModels = "models"

// Job is what the analyzer is asked to do.
type Job struct {
	FileKey    string
	Path       string
	Attempts   int
	Checkpoint string // completed steps of an earlier attempt; resume after them
	// Kind is the work (store.JobKind): a full analysis (the zero kind), a
	// retag (re-derive the stored tags and write them, no decoding, no
	// models) or a vector (decode and run the models for the track vector
	// only: no reuse, no tag write).
	Kind store.JobKind
	// Stored, for a retag: the file's size and mtime as the store records
	// them since its last completion; a file whose stat differs is not the
	// content its stored tags describe (Result.Reanalyze).
	Stored store.Stat
	// Version, for a retag: the model set that tagged the file; for a
	// vector: the model set whose vector is asked for.
	Version string
	// Fence, called by the analyzer right before an irreversible step (the
	// tag write into the file), confirms that the worker still holds the
	// file's claim; on an error the analyzer returns FenceFailed(err, …)
	// without taking the step. Drivers bind it to Worker.Fence; nil (tests,
	// a Job built by hand) means no check.
	Fence func() error
}

// Confirm calls the job's fence, if it has one.
func (j Job) Confirm() error {
	if j.Fence == nil {
		return nil
	}
	return j.Fence()
}

// Result is what the analyzer answers.
type Result struct {
	Class      Class
	Dependency string // for ServiceDown: which dependency
	// Missing, with Class Permanent: the file is not on disk. It is marked
	// missing (not valid, as a scan that did not find it would), not
	// failed: a library on a drive that is not mounted must not fail every
	// file a worker tries, and the next scan that finds the file unchanged
	// makes it valid again.
	Missing bool
	Reason  string
	Tags    map[string]string
	Version string
	// Vector, with Class OK: the file's track vector (tags.TrackVector),
	// made by Version's model set; nil when the job computed none (tags
	// reused from the file, an analyzer that keeps no embeddings). The
	// worker stores it after the completion (Worker.JobDone).
	Vector []float32
	// Info, with Class OK: what the file's own tags say of it (artist,
	// title, album) and its duration; nil when the analyzer read none.
	// The worker stores it after the completion, as the vector.
	Info       *store.FileInfo
	Checkpoint string // steps completed so far (kept for a retry)
	// Rewritten: the job wrote its tags into the file, which now has this
	// size and mtime (store.Completion.Rewritten).
	Rewritten *store.Stat
	// FellBack: the models are on the CPU because the GPU failed them
	// (out of memory, a provider failure) after they were loaded on it;
	// they stay there until unloaded. The worker unloads them between
	// jobs once the GPU is healthy again (Worker.Step), so the next job
	// loads them on the GPU.
	FellBack bool
	// Reanalyze, for a retag: the file is not the content its stored tags
	// describe (changed since its last completion); it goes back to a full
	// analysis (store.FileUpdate.Reanalyze), whatever Class says; Reason
	// says why. Not the worker's error: it counts toward nothing.
	Reanalyze bool
	// ModelsChanged: the model files changed since the loaded models were
	// read from them (new models put in place). The worker unloads them
	// before its next claim, so the next job loads the new set and
	// records its version.
	ModelsChanged bool
}

// Analyzer is the port for the job itself. The driver runs it outside the
// state machine (it may take minutes) and reports progress through
// Worker.Progress and the outcome through Worker.JobDone.
type Analyzer interface {
	Analyze(ctx context.Context, job Job, progress func(int64)) Result
}

// Models is the port for the model cache; the driver calls it for the
// LoadModels and UnloadModels steps.
type Models interface {
	Load(ctx context.Context) error
	Unload()
}

// StepKind says what the driver must do next.
type StepKind int

const (
	// Wait: do nothing until Step.Until, then call Step again.
	Wait StepKind = iota
	// LoadModels: load the models, then call ModelsLoaded.
	LoadModels
	// UnloadModels: free the models, then call ModelsUnloaded.
	UnloadModels
	// Run: run the analyzer on Step.Job, then call JobDone.
	Run
	// Exit: exit the process with Step.Code.
	Exit
)

func (k StepKind) String() string {
	return [...]string{"wait", "load_models", "unload_models", "run", "exit"}[k]
}

// Step is the worker's instruction to its driver.
type Step struct {
	Kind   StepKind
	Until  time.Time
	Job    Job
	Code   int
	Reason string
}
