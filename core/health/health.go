// Package health holds the vocabulary shared by workers, the owner and the
// HealthMonitor: the four owner statuses and the worker phases carried by
// health frames (docs/design.md §3, §4).
package health

// Status is the one status the owner reports per component.
type Status string

// The owner reports exactly one of these per component.
const (
	Pending   Status = "pending"
	Healthy   Status = "healthy"
	Unhealthy Status = "unhealthy"
	Failed    Status = "failed" // terminal until a manual reset
)

// Phase is what a worker says it is doing, in its health frames.
type Phase string

// Worker phases (docs/design.md §3, §8).
const (
	Initializing  Phase = "initializing"
	LoadingModels Phase = "loading_models"
	Idle          Phase = "idle"
	Processing    Phase = "processing"
	BackingOff    Phase = "backing_off"
	Paused        Phase = "paused"
	Stopping      Phase = "stopping"
)

// Valid reports whether p is one of the defined phases.
func (p Phase) Valid() bool {
	switch p {
	case Initializing, LoadingModels, Idle, Processing, BackingOff, Paused, Stopping:
		return true
	}
	return false
}

// StatusOf maps a fresh frame's phase to the owner status of docs/design.md §4.
// Unknown phases are reported unhealthy.
func StatusOf(p Phase) Status {
	switch p {
	case Initializing, LoadingModels:
		return Pending
	case Idle, Processing, Paused, Stopping:
		return Healthy
	default:
		return Unhealthy
	}
}
