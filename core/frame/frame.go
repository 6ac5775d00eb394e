// Package frame is the health frame codec (docs/design.md §3): newline-delimited
// `HEALTH|{json}` lines written by a worker on its dedicated pipe and parsed by
// the owner. It is pure: no I/O, bounded memory.
package frame

import (
	"errors"

	"github.com/nomarr/nomarr/core/health"
)

// Prefix starts every frame line.
const Prefix = "HEALTH|"

// MaxLine is the longest accepted frame line, newline excluded. Longer lines
// are dropped without being buffered.
const MaxLine = 64 << 10

// Frame is one health frame. ComponentID and Status are required; the rest is
// optional telemetry. Unknown JSON fields are ignored when parsing.
//
// The JSON key of each field is given in its comment, in the order Append
// writes them. Frame is comparable; Parse(Append(f)) == f (see Parse).
type Frame struct {
	ComponentID string       // "component_id", required, non-empty
	Status      string       // "status", required, non-empty
	Phase       health.Phase // "phase", any string (see health.Phase.Valid)
	CurrentJob  string       // "current_job"
	// Progress is a monotonic work counter of the current job.
	Progress int64  // "progress"
	Seq      uint64 // "seq"
	PID      int    // "pid"

	FilesProcessed    int64   // "files_processed"
	Errors            int64   // "errors"
	ConsecutiveErrors int64   // "consecutive_errors"
	DiscoveryAttempts int64   // "discovery_attempts"
	ClaimConflicts    int64   // "claim_conflicts"
	AvgProcessingMs   float64 // "avg_processing_ms", finite; NaN/Inf are written as 0
	CacheLoaded       bool    // "cache_loaded"
}

// Drop reasons; every dropped line is counted under one of these.
var (
	ErrNoPrefix     = errors.New("frame: line without HEALTH| prefix")
	ErrBadJSON      = errors.New("frame: invalid JSON payload")
	ErrMissingField = errors.New("frame: missing component_id or status")
	ErrTooLong      = errors.New("frame: line longer than 64 KiB")
)
