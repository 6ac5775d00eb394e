package sim

import (
	"errors"
	"time"

	"github.com/nomarr/nomarr/core/event"
)

// Lost replies: fault `{lost_replies: P, for: D}`. For D, each store write
// that succeeds is answered, with probability P, by a fault instead: the
// store made the write and the answer was lost on the way back, as a
// timeout after a commit or a dropped connection does to a networked
// store. The caller cannot tell this from a write that was never made, so
// whatever it does next must be right either way: try the write again
// (idempotent, or refused as already done), or undo what may have been
// done (a claim, worker.Worker's doubtful release).
//
// Each lost answer is in the trace as a fault event with reason
// lost_reply, detail the operation, and the file and worker it wrote, one
// event per file: the checker learns from it what the store did that no
// other event reports (a claim made, a file tagged, claims released or
// expired).

// LostReply is the Reason of the trace's fault event for a lost answer.
const LostReply = "lost_reply"

// errReplyLost is what the caller of a write whose answer was lost hears.
var errReplyLost = errors.New("memstore: no answer (deadline exceeded); the write may have been made")

// setLostReplies makes a fraction p of successful store writes lose their
// answer, until d has passed (for ever when d is 0); a later fault of the
// kind owns the end.
func (w *World) setLostReplies(p float64, d time.Duration) {
	w.lossRate = p
	w.lossGen++
	gen := w.lossGen
	if d > 0 {
		w.after(d, func() {
			if gen == w.lossGen {
				w.lossRate = 0
			}
		})
	}
}

// reply is the answer to a write: err when the write failed (nothing was
// done), else nil, or, when a lost_replies fault draws it, errReplyLost
// after recording what was written (each of wrote: File and Worker; none
// for a write the checker does not follow).
func (h hostStore) reply(err error, op string, wrote ...event.Event) error {
	w := h.w
	if err != nil || w.lossRate == 0 || w.rng.Float64() >= w.lossRate {
		return err
	}
	if len(wrote) == 0 {
		wrote = []event.Event{{}}
	}
	for _, e := range wrote {
		e.Event, e.Reason, e.Detail = event.Fault, LostReply, op
		w.record(e)
	}
	w.lostReplies++
	return errReplyLost
}

// onLostReply updates the checker's model with a write the store made but
// whose answer was lost: the events its caller would have emitted never
// come.
func (c *checker) onLostReply(e *event.Event) {
	if e.File == "" {
		return
	}
	switch e.Detail {
	case opClaim:
		// Held in the store; the worker does not run it, and releases it.
		c.holder[e.File] = e.Worker
	case opComplete:
		// The job's result is written: its analysis is over.
		c.tagged[e.File]++
		if c.tagged[e.File] > 1 {
			c.violate("file %s tagged twice", e.File)
		}
		delete(c.holder, e.File)
		c.endJob(e)
	case opRelease, opReleaseWorker:
		if c.holder[e.File] == e.Worker {
			delete(c.holder, e.File)
		}
		c.endJob(e)
	case opCleanup:
		c.claimExpired(e.File, e.Worker)
	}
}

// The operations onLostReply follows.
const (
	opClaim         = "claim"
	opComplete      = "complete"
	opRelease       = "release"
	opReleaseWorker = "release_worker"
	opCleanup       = "cleanup_claims"
)
