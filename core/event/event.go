// Package event is the vocabulary of what the worker system reports: the
// events of the JSONL trace (docs/design.md §12), emitted by core state machines to a
// Sink. The simulator writes them as its trace; production logs them.
package event

import "time"

// Kinds of events (docs/design.md §12, plus a few diagnostic ones).
const (
	Spawn            = "spawn"
	Exit             = "exit"
	FrameDropped     = "frame_dropped"
	Status           = "status"
	RestartScheduled = "restart_scheduled"
	Restart          = "restart"
	Failed           = "failed"
	Claim            = "claim"
	ClaimConflict    = "claim_conflict"
	Release          = "release"
	Tagged           = "tagged"
	FileFailed       = "file_failed"
	FileRetry        = "file_retry"
	Quarantined      = "quarantined"
	LeaseExpired     = "lease_expired"
	Kill             = "kill"
	MainDeath        = "main_death"
	WorkerExit       = "worker_exit"
	Reset            = "reset"
	BackoffReset     = "backoff_reset"
	Stop             = "stop"
	Fault            = "fault"
	Phase            = "phase"
	StoreError       = "store_error"
	ModelsLoaded     = "models_loaded"
	ModelsUnloaded   = "models_unloaded"
	ModelLoadFailed  = "model_load_failed" // a worker could not load its models (a file missing or damaged, no runtime)
	NodeName         = "node_name"         // the hold on the node name: waiting, refused, taken over, lost
	MainPaused       = "main_paused"       // the main process did not run for a while; its workers are not blamed
	Retagged         = "retagged"          // a retag job's tags were recorded (the file re-derived and written)
	Vectored         = "vectored"          // a vector job's track vector was stored
)

// Event is one fact. Field order is the JSON field order of the trace, so a
// trace is byte-identical for the same run. Zero fields are omitted.
//
// Cause classifies Reason by one of a fixed set of identifiers, for
// counting (the labels of /metrics): it is set on kill events
// (supervisor.KillCauses) and on the release and lease_expired events of
// the main process (node.ClaimCauses), and empty elsewhere. Reason is
// written for people and may carry numbers; Cause never does.
type Event struct {
	T            time.Time `json:"-"`
	Event        string    `json:"event"`
	Instance     string    `json:"instance,omitempty"`
	Component    string    `json:"component,omitempty"`
	From         string    `json:"from,omitempty"`
	To           string    `json:"to,omitempty"`
	File         string    `json:"file,omitempty"`
	Path         string    `json:"path,omitempty"` // file_failed, file_retry: the file's path, for people
	Worker       string    `json:"worker,omitempty"`
	Reason       string    `json:"reason,omitempty"`
	Cause        string    `json:"cause,omitempty"` // Reason's class, for counting (see Event)
	BackoffMs    int64     `json:"backoff_ms,omitempty"`
	RestartCount int       `json:"restart_count,omitempty"`
	Code         *int      `json:"code,omitempty"`
	PID          int       `json:"pid,omitempty"`
	Count        int       `json:"count,omitempty"`
	Detail       string    `json:"detail,omitempty"`
}

// Sink receives events. Implementations must not call back into the emitter.
type Sink interface {
	Emit(Event)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(Event)

// Emit calls f(e).
func (f SinkFunc) Emit(e Event) { f(e) }

// Discard drops every event.
var Discard Sink = SinkFunc(func(Event) {})

// IntPtr returns a pointer to v, for Event.Code.
func IntPtr(v int) *int { return &v }
