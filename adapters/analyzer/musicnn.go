package analyzer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"syscall"

	"github.com/nomarr/nomarr/adapters/audio"
	"github.com/nomarr/nomarr/adapters/features"
	"github.com/nomarr/nomarr/adapters/inference"
	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/tagwrite"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/core/worker"
)

// MusiCNN is the production analyzer: decode → Essentia-exact mel patches →
// ONNX backbone and heads, streamed in bounded chunks (analyzeStream) →
// tags → crash-safe write into the file. It also does the other kinds of
// job (kinds.go): a retag without decoding or the models, and a vector
// without the tag write.
// Its checkpoint after inference holds the derived tags, so a retry after a
// failed write skips decoding and inference, as long as the model set is
// the one that derived them and the file is still the content they were
// derived from; a file that already holds this model set's tags skips
// inference (ReuseFileTags). Tags are written only into the content they
// were derived from: the file is stamped before it is decoded, and a file
// changed since (replaced, or edited in place) is not written
// (tagwrite.WriteIfSame) but analysed again by a retry.
type MusiCNN struct {
	Models    *inference.Models
	Audio     audio.Options
	Tags      tags.Options
	WriteMode string // none | minimal | full
	// ReuseFileTags (reuse_file_tags): a file that already holds a whole
	// analysis by this model set, as tags.Reuse decides, is decoded (so a
	// damaged or too short file fails as before) but not run through the
	// models again; its tags are recorded, and the write mode applied, as
	// if it had been.
	ReuseFileTags bool
	// Log, when set, gets a DEBUG line for each file whose tags are reused
	// or re-derived.
	Log *slog.Logger
	// StoredTags reads a file's stored tags for a retag (kinds.go); nil:
	// retags fail.
	StoredTags StoredTags

	mu      sync.Mutex
	ext     *features.Extractor
	patcher *features.Patcher
	buf     []float32 // one chunk of patches
}

// checkpoint is what a finished inference leaves for a retry: the tags and
// the stamp of the content they were derived from. A retry resumes from it
// only while the file still has that stamp; a file changed since (a new
// rip put in its place) is analysed again.
type checkpoint struct {
	Step  string            `json:"step"` // "tags": derived, not yet written
	Tags  map[string]string `json:"tags"`
	Stamp *tagwrite.Stamp   `json:"stamp,omitempty"`
	// Vector is the track vector the same inference made (none when the
	// tags were reused from the file).
	Vector []float32 `json:"vector,omitempty"`
}

// Analyze implements worker.Analyzer. Its result says when the models
// fell back to the CPU (worker.Result.FellBack) and when their files
// changed since they were loaded (worker.Result.ModelsChanged), whatever
// the job's outcome.
func (m *MusiCNN) Analyze(ctx context.Context, job worker.Job, progress func(int64)) worker.Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.analyze(ctx, job, progress)
	r.FellBack = m.Models.FellBack()
	r.ModelsChanged = m.Models.Changed()
	return r
}

func (m *MusiCNN) analyze(ctx context.Context, job worker.Job, progress func(int64)) worker.Result {
	switch job.Kind {
	case store.JobRetag:
		return m.retag(ctx, job, progress)
	case store.JobVector:
		return m.vector(ctx, job, progress)
	}
	var all map[string]string
	// vec is the track vector of the inference that derived all; nil
	// when none ran (tags reused from the file) or it gave no vector.
	var vec []float32
	// stamp is the content the tags are derived from; they are written
	// into that content only (tagwrite.WriteIfSame).
	var stamp tagwrite.Stamp
	// durationMs is the decoded audio's length (0: not decoded, or cut
	// at the decoder's limit).
	var durationMs int64
	if job.Checkpoint != "" {
		// Tags derived by another model set (the models were replaced
		// since) are not this job's: their nom_version would not be the
		// tagged_version the store records. Tags derived from another
		// content (the file was replaced since) are not this file's.
		var cp checkpoint
		if json.Unmarshal([]byte(job.Checkpoint), &cp) == nil && cp.Step == "tags" && len(cp.Tags) > 0 &&
			cp.Tags[tags.KeyVersion] == m.Models.Version() && cp.Stamp != nil {
			now, err := tagwrite.StampOf(job.Path)
			switch {
			case err == nil && now.Same(*cp.Stamp):
				all, stamp, vec = cp.Tags, now, cp.Vector
			case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
				// Gone (its drive unmounted): missing, the checkpoint kept
				// for the same content found again.
				r := writeError(err)
				r.Checkpoint = job.Checkpoint
				return r
			}
		}
	}
	if all == nil {
		// Stamped before the decoder opens the file: a change from here
		// on gives another stamp.
		st, stampErr := tagwrite.StampOf(job.Path)
		// The file's tags of ours, read at most once, when a decision below
		// needs them (empty when TagLib cannot read them: its error, if it
		// matters, comes back at the write).
		var held map[string]string
		fileTags := func() map[string]string {
			if held == nil {
				if held, _ = tagwrite.Read(job.Path); held == nil {
					held = map[string]string{}
				}
			}
			return held
		}
		// gate decides, once the audio has decoded into a patch, whether
		// the models run: a file already holding this model set's
		// analysis reuses it; a file whose tags could not be written
		// fails before them (the models are the expensive part) — a
		// format that cannot hold them (WAV, WMA, …) always, a read-only
		// library unless the file holds this model set's tags already
		// (then the write may find nothing to change).
		gate := func() (map[string]string, *worker.Result) {
			if m.ReuseFileTags {
				if ft := fileTags(); ctx.Err() == nil {
					if reused := m.reuse(ft, job.Path); reused != nil {
						return reused, nil
					}
				}
			}
			if m.WriteMode != tags.ModeNone {
				err := tagwrite.Writable(job.Path)
				if errors.Is(err, tagwrite.ErrUnsupported) ||
					errors.Is(err, tagwrite.ErrReadOnly) && fileTags()[tags.KeyVersion] != m.Models.Version() {
					r := writeError(err)
					return nil, &r
				}
			}
			return nil, nil
		}
		var step int64
		res, err := m.analyzeStream(ctx, job.Path, progress, &step, gate)
		if err != nil {
			return streamResult(err)
		}
		if stampErr != nil {
			return writeError(stampErr)
		}
		stamp = st
		if limit := m.Audio.MaxSeconds * audio.SampleRate; limit <= 0 || float64(res.samples) < limit {
			durationMs = int64(res.samples) * 1000 / audio.SampleRate
		}
		step++
		progress(step)
		if res.patches == 0 {
			return worker.Result{Class: worker.Permanent, Reason: "too short for one patch"}
		}
		all = res.gated
		if all == nil {
			all, err = tags.Derive(res.pred, m.Models.Version(), m.Tags)
			if err != nil {
				return worker.Result{Class: worker.Permanent, Reason: "derive tags: " + err.Error()}
			}
			// A track without a vector (embeddings of no direction) is
			// still tagged: it is left out of similarity searches only.
			if vec, err = tags.TrackVector(res.pred); err != nil && m.Log != nil {
				m.Log.Warn("no track vector", "path", job.Path, "err", err)
			}
		}
	}
	cp, _ := json.Marshal(checkpoint{Step: "tags", Tags: all, Stamp: &stamp, Vector: vec})
	write, err := tags.WriteSet(all, m.WriteMode)
	if err != nil {
		return worker.Result{Class: worker.Permanent, Reason: err.Error(), Checkpoint: string(cp)}
	}
	// The standard fields (MOOD, GENRE) go with the nom keys, and only
	// with them: write_mode none leaves the file alone.
	std, err := tags.Standard(all, m.Tags)
	if err != nil {
		return worker.Result{Class: worker.Permanent, Reason: err.Error(), Checkpoint: string(cp)}
	}
	var rewritten *store.Stat
	if len(write) > 0 {
		// The write is the one step that must not happen without the
		// claim: it cannot be taken back (worker.Job.Fence).
		if err := job.Confirm(); err != nil {
			return worker.FenceFailed(err, string(cp))
		}
		if err := tagwrite.WriteIfSame(job.Path, write, std, stamp); err != nil {
			r := writeError(err)
			if !errors.Is(err, tagwrite.ErrModified) {
				r.Checkpoint = string(cp) // tags of another content are of no use
			}
			return r
		}
		rewritten = statAsScanned(job.Path)
	}
	progress(4)
	return worker.Result{Tags: all, Version: m.Models.Version(), Rewritten: rewritten, Vector: vec, Info: fileInfo(job.Path, durationMs)}
}

// fileInfo is what the file's own tags say of it (tagwrite.ReadInfo: one
// TagLib read of the fields, small beside the decode and the models) and
// its duration; nil when TagLib cannot read them and the duration is
// unknown. It is read after the write, from the file as the store will
// know it.
func fileInfo(path string, durationMs int64) *store.FileInfo {
	i, err := tagwrite.ReadInfo(path)
	if err != nil && durationMs == 0 {
		return nil
	}
	return &store.FileInfo{Artist: i.Artist, Title: i.Title, Album: i.Album, DurationMs: durationMs}
}

// reuse returns held, the tags of ours the file holds, when tags.Reuse
// takes them as this model set's analysis, else nil. It runs once the audio
// decoded into at least one patch: a file cut short or damaged after it
// was tagged still fails as it would without the reuse.
func (m *MusiCNN) reuse(held map[string]string, path string) map[string]string {
	all, ok := tags.Reuse(held, m.Models.Version(), m.Tags)
	if ok && m.Log != nil {
		m.Log.Debug("the file already holds this model set's tags: inference skipped", "path", path)
	}
	return all
}

// statAsScanned is the file's size and mtime as a library scan records them
// (library.Stat: a symbolic link is followed, and the stat is its
// target's, the file the write replaced), read right after the tag write;
// nil when the file cannot be read back or is no longer a regular file.
// The store keeps them so that the next scan does not take the job's own
// write for a change. A write by someone else between the rename and this
// read would go unnoticed until the file changes again: a window of one
// system call.
func statAsScanned(path string) *store.Stat {
	st, err := library.Stat(path)
	if err != nil {
		return nil
	}
	return &store.Stat{Size: st.Size(), MtimeMs: st.ModTime().UnixMilli()}
}

// writeError maps a failed tag write to the worker's error classes. A file
// that left between decoding and writing (deleted, its drive unmounted) is
// missing, like one gone before decoding; a read-only, unsupported or
// invalid target is permanent; a build without TagLib cannot write any
// file; anything else (a full disk, a file changed meanwhile) is transient.
//
// The reason reads "write tags: PATH: read-only: …": the package's
// "tagwrite: write" and "tagwrite:" prefixes, which its wrapped errors
// repeat, are left out. A read-only file's says how to go on: make it
// writable, then `nomarr retry` (a failed file is not tried again until
// it changes or is retried).
func writeError(err error) worker.Result {
	msg := strings.TrimPrefix(err.Error(), "tagwrite: write ")
	reason := "write tags: " + strings.ReplaceAll(msg, "tagwrite: ", "")
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return worker.Result{Class: worker.Permanent, Reason: "missing", Missing: true}
	case errors.Is(err, tagwrite.ErrReadOnly) && !errors.Is(err, tagwrite.ErrOwner):
		return worker.Result{Class: worker.Permanent, Reason: reason +
			" (chmod u+w the file, or its folder, then `nomarr retry`; write_mode: none keeps the tags in the store only)"}
	case errors.Is(err, tagwrite.ErrReadOnly), errors.Is(err, tagwrite.ErrUnsupported):
		return worker.Result{Class: worker.Permanent, Reason: reason + " (write_mode: none keeps the tags in the store only)"}
	case errors.Is(err, tagwrite.ErrInvalidTag):
		return worker.Result{Class: worker.Permanent, Reason: reason}
	case errors.Is(err, tagwrite.ErrNoTagLib):
		return worker.Result{Class: worker.ServiceDown, Dependency: worker.DepDecoder, Reason: err.Error()}
	}
	return worker.Result{Class: worker.Transient, Reason: reason}
}

// classify maps a decode error to the worker's error classes.
func classify(err error, dep string) worker.Result {
	var ae *audio.Error
	if errors.As(err, &ae) {
		r := worker.Result{Class: ae.Class, Reason: ae.Reason, Missing: ae.Missing}
		if r.Class == worker.ServiceDown {
			r.Dependency = dep
		}
		return r
	}
	return worker.Result{Class: worker.Transient, Reason: fmt.Sprint(err)}
}
