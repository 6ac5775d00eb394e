package supervisor

// Causes are the fixed identifiers by which the supervisor classifies what
// it reports (event.Event.Cause), so that a driver can count its kills and
// releases by class (/metrics labels) without reading the reasons, which
// are written for people and carry durations and file keys.

// Kill causes: why the supervisor killed a worker (docs/design.md §4, and the
// stop). Every kill event carries exactly one of them.
const (
	// KillPipeClosed: the process lived on PipeCloseGrace after closing
	// its frame pipe.
	KillPipeClosed = "pipe_closed"
	// KillStartupTimeout: no first frame within startup_timeout.
	KillStartupTimeout = "startup_timeout"
	// KillHang: no frame for hang_after.
	KillHang = "hang"
	// KillColdStart: pending (initializing, loading models) longer than
	// cold_start_max.
	KillColdStart = "cold_start_max"
	// KillStall: the current job's progress stood still for stall_after
	// while frames kept coming.
	KillStall = "stall"
	// KillStopGrace: still running when a graceful stop's grace ended.
	KillStopGrace = "stop_grace"
	// KillForcedStop: killed by ForceStop (a second stop signal).
	KillForcedStop = "forced_stop"
)

// KillCauses returns every kill cause, in a fixed order; a new slice each
// call.
func KillCauses() []string {
	return []string{KillPipeClosed, KillStartupTimeout, KillHang, KillColdStart, KillStall, KillStopGrace, KillForcedStop}
}

// ReleaseDied is the cause of the release events of a dead worker's claims
// (ReleaseWorker), whatever the death: a crash, an exit, a kill, a stop.
const ReleaseDied = "worker_died"
