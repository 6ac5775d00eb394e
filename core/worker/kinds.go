package worker

import (
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/store"
)

// PermanentSkip is how long a file whose retag or vector job failed for
// good waits before the job is tried again: its tags are good, so it is
// not failed, and a permanent cause (a file the decoder refuses) would
// otherwise be tried at every discovery.
const PermanentSkip = 24 * time.Hour

// needsModels reports whether a job of kind runs the models: a retag
// re-derives stored scores and does not.
func needsModels(kind store.JobKind) bool { return kind != store.JobRetag }

// jobOf is the analyzer's job for the claimed file f of kind.
func (w *Worker) jobOf(f *store.File, kind store.JobKind) Job {
	j := Job{FileKey: f.Key, Path: f.Path, Attempts: f.Attempts, Checkpoint: f.Checkpoint, Kind: kind}
	switch kind {
	case store.JobRetag:
		j.Stored, j.Version = store.Stat{Size: f.Size, MtimeMs: f.MtimeMs}, f.TaggedVersion
	case store.JobVector:
		j.Version = w.cfg.VectorModelSet
	}
	return j
}

// jobOK counts a job that succeeded.
func (w *Worker) jobOK(ms float64) {
	w.tel.FilesProcessed++
	w.tel.ConsecutiveErrors = 0
	if w.tel.FilesProcessed == 1 {
		w.tel.AvgProcessingMs = ms
	} else {
		w.tel.AvgProcessingMs = 0.8*w.tel.AvgProcessingMs + 0.2*ms
	}
	w.svcFails, w.svcDep = 0, ""
	for _, d := range dependencies[1:] {
		w.breakers[d].Success()
	}
}

// otherJobDone fills p with the outcome of a retag or vector job of f that
// neither lost its claim nor met a service outage (those go as for a
// tagging):
//   - a retag that succeeded completes as a tagging does (its tags, the
//     file's rewritten stat), which clears the file's mark;
//   - a vector job that succeeded puts its vector and releases the claim
//     without a completion: the file, its tags and tagging time stay;
//   - a file a retag found changed goes back to full analysis
//     (store.FileUpdate.Reanalyze), counted as nothing;
//   - a file found missing is marked missing, as for a tagging;
//   - any other failure (a vector job that answered no usable vector
//     among them) leaves the file tagged and not failed, and sets a skip
//     time: TransientMax after a transient failure, PermanentSkip after
//     a permanent one. Errors count as for a tagging.
func (w *Worker) otherJobDone(now time.Time, f *store.File, r Result, ms float64, p *pendingWrite) {
	label := string(w.jobKind) + ": "
	claimed := &store.Stat{Size: f.Size, MtimeMs: f.MtimeMs}
	if r.Class == OK && w.jobKind == store.JobVector {
		if err := store.CheckTrackVector(w.cfg.VectorModelSet, r.Vector); err != nil {
			r = Result{Class: Permanent, Reason: "no track vector: " + err.Error()}
		}
	}
	switch {
	case r.Reanalyze:
		p.update = &store.FileUpdate{Reanalyze: true, LastError: label + r.Reason, Claimed: claimed}
		p.kind, p.reason = event.Release, label+"sent back to full analysis: "+r.Reason
	case r.Class == OK && w.jobKind == store.JobRetag:
		w.jobOK(ms)
		p.completion = &store.Completion{Tags: r.Tags, Version: r.Version, At: now, Rewritten: r.Rewritten, Claimed: claimed}
		p.kind = event.Retagged
	case r.Class == OK:
		w.jobOK(ms)
		p.vectorOnly, p.vector, p.modelSet = true, r.Vector, w.cfg.VectorModelSet
		p.kind = event.Vectored
	case r.Class == Permanent && r.Missing:
		w.tel.Errors++
		p.update = &store.FileUpdate{Attempts: f.Attempts, Missing: true, LastError: "missing: " + r.Reason,
			Checkpoint: f.Checkpoint, Claimed: claimed}
		p.kind, p.reason = event.Release, label+"missing: "+r.Reason
	default:
		w.tel.Errors++
		skip := PermanentSkip
		if r.Class != Permanent {
			w.tel.ConsecutiveErrors++
			skip = w.cfg.TransientMax
		}
		why := label + string(r.Class) + ": " + r.Reason
		p.update = &store.FileUpdate{Attempts: f.Attempts, SkipUntil: now.Add(skip), LastError: why,
			Checkpoint: f.Checkpoint, Claimed: claimed}
		p.kind, p.reason = event.FileRetry, why
	}
}
