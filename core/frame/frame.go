// Package frame is the health frame codec (DESIGN §3): newline-delimited
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
type Frame struct {
	ComponentID string
	Status      string
	Phase       health.Phase
	CurrentJob  string
	// Progress is a monotonic work counter of the current job.
	Progress int64
	Seq      uint64
	PID      int

	FilesProcessed    int64
	Errors            int64
	ConsecutiveErrors int64
	DiscoveryAttempts int64
	ClaimConflicts    int64
	AvgProcessingMs   float64
	CacheLoaded       bool
}

// Drop reasons; every dropped line is counted under one of these.
var (
	ErrNoPrefix     = errors.New("frame: line without HEALTH| prefix")
	ErrBadJSON      = errors.New("frame: invalid JSON payload")
	ErrMissingField = errors.New("frame: missing component_id or status")
	ErrTooLong      = errors.New("frame: line longer than 64 KiB")
)
