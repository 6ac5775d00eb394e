package analyzer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nomarr/nomarr/adapters/tagwrite"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/core/worker"
)

// StoredTags reads the tags a file's last completion stored
// (store.Browser.FileTags).
type StoredTags func(ctx context.Context, key string) (map[string]string, error)

// retag re-derives the file's stored tags under the analyzer's options
// (tags.Rederive) and writes them as a tagging does, without decoding the
// file or running a model. The file must still be the content the tags
// describe: stamped first, its size and modification time must be the
// ones the store recorded at the last completion (job.Stored), and the
// write refuses a file changed after the stamp (tagwrite.WriteIfSame).
// A file changed, stored tags that cannot be re-derived or of another
// model set than the file's record send it back to a full analysis
// (worker.Result.Reanalyze).
func (m *MusiCNN) retag(ctx context.Context, job worker.Job, progress func(int64)) worker.Result {
	if m.StoredTags == nil {
		return worker.Result{Class: worker.Permanent, Reason: "retag: this analyzer reads no stored tags"}
	}
	stamp, err := tagwrite.StampOf(job.Path)
	if err != nil {
		return writeError(err)
	}
	if stamp.Size != job.Stored.Size || time.Unix(0, stamp.MtimeNs).UnixMilli() != job.Stored.MtimeMs {
		return reanalyze("changed since it was tagged (size or modification time)")
	}
	stored, err := m.StoredTags(ctx, job.FileKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return worker.Result{Class: worker.Permanent, Reason: "missing", Missing: true}
	case err != nil:
		return worker.Result{Class: worker.ServiceDown, Dependency: worker.DepStore, Reason: "read the stored tags: " + err.Error()}
	case stored[tags.KeyVersion] != job.Version:
		return reanalyze(fmt.Sprintf("stored tags of model set %q, the file's record says %q", stored[tags.KeyVersion], job.Version))
	}
	all, err := tags.Rederive(stored, m.Tags)
	if err != nil {
		return reanalyze(err.Error())
	}
	progress(1)
	write, err := tags.WriteSet(all, m.WriteMode)
	if err != nil {
		return worker.Result{Class: worker.Permanent, Reason: err.Error()}
	}
	std, err := tags.Standard(all, m.Tags)
	if err != nil {
		return worker.Result{Class: worker.Permanent, Reason: err.Error()}
	}
	var rewritten *store.Stat
	if len(write) > 0 {
		if err := job.Confirm(); err != nil {
			return worker.FenceFailed(err, "")
		}
		if err := tagwrite.WriteIfSame(job.Path, write, std, stamp); err != nil {
			if errors.Is(err, tagwrite.ErrModified) {
				return reanalyze(err.Error())
			}
			return writeError(err)
		}
		rewritten = statAsScanned(job.Path)
	}
	progress(2)
	if m.Log != nil {
		m.Log.Debug("retag: tags derived again from the stored scores, no model run", "path", job.Path)
	}
	return worker.Result{Tags: all, Version: job.Version, Rewritten: rewritten}
}

// reanalyze is the result of a retag whose file needs a full analysis.
func reanalyze(why string) worker.Result {
	return worker.Result{Class: worker.Transient, Reanalyze: true, Reason: why}
}

// vector decodes the file and runs the models for its track vector only:
// no reuse of the file's tags, no tag write. A model set other than the
// job's (the models changed since the worker was told its set) answers
// no vector: the job fails and the file is tried again later, by a
// worker of the new set.
func (m *MusiCNN) vector(ctx context.Context, job worker.Job, progress func(int64)) worker.Result {
	if v := m.Models.Version(); v != job.Version {
		return worker.Result{Class: worker.Transient, Reason: fmt.Sprintf("vector of model set %q asked, the models are %q", job.Version, v)}
	}
	var step int64
	res, err := m.analyzeStream(ctx, job.Path, progress, &step, func() (map[string]string, *worker.Result) { return nil, nil })
	if err != nil {
		return streamResult(err)
	}
	step++
	progress(step)
	if res.patches == 0 {
		return worker.Result{Class: worker.Permanent, Reason: "too short for one patch"}
	}
	vec, err := tags.TrackVector(res.pred)
	if err != nil {
		return worker.Result{Class: worker.Permanent, Reason: "track vector: " + err.Error()}
	}
	return worker.Result{Vector: vec, Version: job.Version}
}
