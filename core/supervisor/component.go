package supervisor

import (
	"time"

	"github.com/nomarr/nomarr/core/frame"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
)

// component is the owner's view of one worker: process facts learned from
// the OS and from the frame pipe, plus restart bookkeeping.
type component struct {
	id       string
	key      string // restart-state key: <node>/<id>
	workerID string // claim owner: <instance>/<id>

	gen          uint64 // process generation; facts about older ones are ignored
	pid          int
	running      bool
	killing      bool
	killReason   string
	spawnedAt    time.Time
	diedAt       time.Time
	pipeClosedAt time.Time // EOF seen on the frame pipe; zero while open

	splitter frame.Splitter
	parser   frame.Parser // per pipe: a steady stream of frames parses without allocating
	dropped  int

	hasFrame     bool
	lastFrameAt  time.Time
	phase        health.Phase
	job          string
	progress     int64
	progressAt   time.Time // last progress advance of the current job; zero when not processing
	pendingSince time.Time // start of the current pending (cold start) period; zero when not pending
	last         frame.Frame

	restartPending bool
	restartAt      time.Time
	failed         bool
	policy         restart.State
	healthySince   time.Time

	loadPending    bool
	persistPending bool
	releasePending bool
	countCrash     bool
	death          store.Death // the death whose release is pending: its retries name it too

	// Given up by a forced stop (forcestop.go): the dead process's claims
	// were not released; the restart state was not saved.
	releaseAbandoned bool
	persistAbandoned bool
}

// resetProcessFacts forgets everything learned about the previous process.
func (c *component) resetProcessFacts(now time.Time) {
	c.running, c.killing, c.killReason = false, false, ""
	c.spawnedAt = now
	c.pipeClosedAt = time.Time{}
	c.splitter = frame.Splitter{}
	c.hasFrame = false
	c.lastFrameAt = time.Time{}
	c.phase = ""
	c.job, c.progress, c.progressAt = "", 0, time.Time{}
	c.pendingSince = time.Time{}
	c.healthySince = time.Time{}
	c.last = frame.Frame{}
}

// observe records a valid frame. A process is pending from its spawn until
// a frame of another phase: cold_start_max counts from the spawn whatever
// the first frame's pending phase; a later pending period (a model load
// after idle) counts from its first frame.
func (c *component) observe(f *frame.Frame, now time.Time) {
	first := !c.hasFrame
	c.hasFrame = true
	c.lastFrameAt = now
	c.phase = f.Phase
	c.last = *f
	switch f.Phase {
	case health.Initializing, health.LoadingModels:
		if c.pendingSince.IsZero() {
			if first {
				c.pendingSince = c.spawnedAt
			} else {
				c.pendingSince = now
			}
		}
	default:
		c.pendingSince = time.Time{}
	}
	if f.CurrentJob == "" {
		c.job, c.progress, c.progressAt = "", 0, time.Time{}
		return
	}
	if f.CurrentJob != c.job || f.Progress > c.progress || c.progressAt.IsZero() {
		c.progressAt = now
	}
	c.job, c.progress = f.CurrentJob, f.Progress
}
