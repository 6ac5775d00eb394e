package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
)

// API answers the HTTP API from a running Main. Node state is read on the
// main loop; the store is read directly.
type API struct {
	Main    *Main
	StoreID string // redacted store name for /api/v1/info
	Version string
	// Node is this host's node name: /api/v1/info's model_sets say which
	// hosts' records hold its re-tagging back.
	Node string
	// Similarity answers the similarity routes; nil: they answer 503.
	Similarity httpapi.Similarity
	// ModelSet is the host's model set, whose missing track vectors
	// /api/v1/info counts (jobs); nil or "": none counted.
	ModelSet func() string

	jobsMu sync.Mutex
	jobsAt time.Time
	jobs   *httpapi.JobsInfo
	// Saver saves the Playlists page's rules; nil: POST
	// /api/v1/playlists answers 503.
	Saver httpapi.PlaylistSaver
	// CalibrationState says which calibration is in force, for
	// Insights; nil: Insights says nothing of it.
	CalibrationState func(ctx context.Context) (httpapi.CalibrationState, error)
}

// JobsEvery is how often /api/v1/info counts the work other than
// tagging again: on ArangoDB the count of missing vectors reads every
// file of the model set, too much for each poll of the dashboard (SQLite
// keeps the files missing one: 0.03–6 ms at 100,000 files,
// BenchmarkNeedsVector).
const JobsEvery = 2 * time.Minute

var (
	_ httpapi.Backend            = (*API)(nil)
	_ httpapi.Similarity         = (*API)(nil)
	_ httpapi.PlaylistSaver      = (*API)(nil)
	_ httpapi.CalibrationBackend = (*API)(nil)
)

// Info implements httpapi.Backend. The workers come from the loop's last
// published view (view.go), so the answer never waits for a loop held up
// in a store call; the store is read directly.
func (a *API) Info(ctx context.Context) (httpapi.Info, error) {
	info := httpapi.Info{Store: a.StoreID, Version: a.Version, Node: a.Node}
	v := a.Main.View()
	if v == nil { // the loop has not run yet: wait for its first step
		if err := a.Main.Do(ctx, func(_ context.Context, now time.Time) { a.Main.publish(now) }); err != nil {
			return info, fmt.Errorf("%w: %v", httpapi.ErrUnavailable, err)
		}
		v = a.Main.View()
	}
	now := a.Main.Clock.Now()
	info.Instance = v.Instance
	tally := a.Main.Tally()
	info.FilesQuarantined, info.ClaimsReleased = tally.Quarantined, tally.Released
	for _, wv := range v.Workers {
		in := wv.Info
		w := httpapi.WorkerInfo{
			Component: in.Component, Status: string(wv.Status), Phase: string(in.Phase), CurrentJob: in.CurrentJob,
			PID: in.PID, Restarts: in.Policy.RestartCount, LastFrameAgeMs: -1, FailureReason: in.Policy.FailureReason,
			FilesProcessed: in.Telemetry.FilesProcessed, Errors: in.Telemetry.Errors, ClaimConflicts: in.Telemetry.ClaimConflicts,
			AvgProcessingMs: in.Telemetry.AvgProcessingMs, FramesDropped: in.FramesDropped,
			Kills: tally.Kills[in.Component], Deaths: tally.Deaths[in.Component],
		}
		if !in.LastFrame.IsZero() {
			w.LastFrameAgeMs = now.Sub(in.LastFrame).Milliseconds()
		}
		if in.RestartPending {
			w.RestartAt = in.RestartAt
		}
		if !in.Running { // dead, failed or not yet spawned: no process, no job (its claim is released)
			w.PID, w.Phase, w.CurrentJob = 0, "", ""
		}
		info.Workers = append(info.Workers, w)
	}
	// Workers are shown even while the store is down: that is when they matter.
	if err := a.readStore(ctx, &info, now); err != nil {
		info.StoreError = err.Error()
		a.Main.watch.damaged("info", err) // damage stays reported, whatever later reads find
	}
	h := a.Main.StoreHealth()
	if c := h.Corrupt; c != nil {
		info.StoreCorrupt = &httpapi.StoreCorruption{Since: c.Since.UTC(), Op: c.Op, Error: c.Err}
	}
	if len(h.Errors) > 0 {
		info.StoreErrors = h.Errors
	}
	if f := h.WritesFailing; f != nil {
		info.StoreWritesFailing = &httpapi.StoreWriteFailure{Since: f.Since.UTC(), Op: f.Op, Error: f.Err}
	}
	if r, ok := a.Main.ClockSkew(); ok { // the last reading stands while the store is down
		off, unc := r.Offset.Milliseconds(), r.Uncertainty.Milliseconds()
		at := r.At.UTC()
		info.ClockOffsetMs, info.ClockUncertaintyMs, info.ClockSkew, info.ClockMeasuredAt = &off, &unc, string(r.State), &at
	}
	return info, nil
}

// readStore fills in info's store part: the library counts, the pause
// flag, the hosts' model-set records as this host sees them at now (a
// damaged value is left out, as a record written anew replaces it) and
// the current jobs' paths. It sets either all of the counts, the flag and
// the records or, with an error, none: with StoreError set both are unknown (the
// zeros mean nothing; /metrics leaves them out, the dashboard shows "?"),
// never a guess such as "enabled" for a paused cluster. The flag is read
// even when the counts come from the last good read (LibraryCounts), so a
// store gone since shows here.
func (a *API) readStore(ctx context.Context, info *httpapi.Info, now time.Time) error {
	c, _, err := a.Main.LibraryCounts(ctx)
	if err != nil {
		return err
	}
	v, ok, err := a.Main.Store.GetMeta(ctx, store.MetaWorkerEnabled)
	if err != nil {
		return fmt.Errorf("reading the pause flag (%s): %w", store.MetaWorkerEnabled, err)
	}
	raw, _, err := a.Main.Store.GetMeta(ctx, inventory.ModelSetsKey)
	if err != nil {
		return fmt.Errorf("reading the hosts' model-set records (%s): %w", inventory.ModelSetsKey, err)
	}
	if sets, err := inventory.DecodeModelSets(raw); err == nil {
		info.ModelSets = httpapi.NewModelSetsInfo(sets.Report(a.Node, now))
	}
	info.Library, info.WorkerEnabled = c, store.Enabled(v, ok)
	info.Jobs = a.countJobs(ctx, now)
	for i, w := range info.Workers { // a key says nothing to a person
		if w.CurrentJob == "" {
			continue
		}
		if f, err := a.Main.Store.File(ctx, w.CurrentJob); err == nil {
			info.Workers[i].CurrentPath = f.Path
		}
	}
	return nil
}

// countJobs is the last count of the work other than tagging, counted
// again when older than JobsEvery; nil without a model set, or when the
// store could not count it (the last count then stays for the next
// answer only when it is fresh).
func (a *API) countJobs(ctx context.Context, now time.Time) *httpapi.JobsInfo {
	if a.ModelSet == nil {
		return nil
	}
	a.jobsMu.Lock()
	defer a.jobsMu.Unlock()
	if a.jobs != nil && now.Sub(a.jobsAt) < JobsEvery {
		return a.jobs
	}
	set := a.ModelSet()
	if set == "" {
		return nil
	}
	c, err := a.Main.Store.CountJobs(ctx, set)
	if err != nil {
		return nil
	}
	a.jobs, a.jobsAt = &httpapi.JobsInfo{ModelSet: set, Retag: c.Retag, VectorsMissing: c.Vector}, now
	return a.jobs
}

// SetEnabled implements httpapi.Backend.
func (a *API) SetEnabled(ctx context.Context, enabled bool) error {
	if err := a.Main.Node.SetEnabled(ctx, enabled); err != nil {
		return fmt.Errorf("%w: %v", httpapi.ErrUnavailable, err)
	}
	return nil
}

// Reset implements httpapi.Backend: one component, or every failed one.
func (a *API) Reset(ctx context.Context, id string) error {
	var rerr error
	err := a.Main.Do(ctx, func(ctx context.Context, now time.Time) {
		sup := a.Main.Node.Sup
		if id != "" {
			if _, ok := sup.Info(id); !ok {
				rerr = fmt.Errorf("%w: no worker %q", httpapi.ErrNotFound, id)
				return
			}
			rerr = a.Main.Node.Reset(ctx, id, now)
			if errors.Is(rerr, node.ErrNameNotHeld) {
				rerr = fmt.Errorf("%w: %v", httpapi.ErrUnavailable, rerr)
			}
			return
		}
		for _, c := range sup.Components() {
			if a.Main.Node.Status(c, now) == health.Failed {
				rerr = errors.Join(rerr, a.Main.Node.Reset(ctx, c, now))
			}
		}
	})
	if err != nil {
		return fmt.Errorf("%w: %v", httpapi.ErrUnavailable, err)
	}
	return rerr
}

// HistoryReader is implemented by stores that can read health history back.
type HistoryReader interface {
	RecentHistory(ctx context.Context, limit int) ([]store.HistoryRow, error)
}

// History implements httpapi.Backend.
func (a *API) History(ctx context.Context, limit int) ([]store.HistoryRow, error) {
	hr, ok := a.Main.Store.(HistoryReader)
	if !ok {
		return nil, fmt.Errorf("%w: this store cannot read health history", httpapi.ErrUnavailable)
	}
	rows, err := hr.RecentHistory(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", httpapi.ErrUnavailable, err)
	}
	return rows, nil
}

// similarity is a.Similarity, or an error wrapping ErrUnavailable.
func (a *API) similarity() (httpapi.Similarity, error) {
	if a.Similarity == nil {
		return nil, fmt.Errorf("%w: no similarity index on this server", httpapi.ErrUnavailable)
	}
	return a.Similarity, nil
}

// Similar implements httpapi.Similarity.
func (a *API) Similar(ctx context.Context, file string, n int) (httpapi.TrackList, error) {
	s, err := a.similarity()
	if err != nil {
		return httpapi.TrackList{}, err
	}
	return s.Similar(ctx, file, n)
}

// Mix implements httpapi.Similarity.
func (a *API) Mix(ctx context.Context, seeds []string, n int) (httpapi.TrackList, error) {
	s, err := a.similarity()
	if err != nil {
		return httpapi.TrackList{}, err
	}
	return s.Mix(ctx, seeds, n)
}

// Path implements httpapi.Similarity.
func (a *API) Path(ctx context.Context, from, to string, n int) (httpapi.TrackList, error) {
	s, err := a.similarity()
	if err != nil {
		return httpapi.TrackList{}, err
	}
	return s.Path(ctx, from, to, n)
}

// Playlists implements httpapi.Similarity.
func (a *API) Playlists(ctx context.Context) ([]httpapi.PlaylistPreview, error) {
	s, err := a.similarity()
	if err != nil {
		return nil, err
	}
	return s.Playlists(ctx)
}

// Library implements httpapi.LibraryBackend: the store's read side.
func (a *API) Library() httpapi.LibraryStore { return a.Main.Store }

// SavePlaylist implements httpapi.PlaylistSaver.
func (a *API) SavePlaylist(ctx context.Context, r httpapi.SaveRule) (httpapi.SavedPlaylist, error) {
	if a.Saver == nil {
		return httpapi.SavedPlaylist{}, fmt.Errorf("%w: this server cannot save playlists", httpapi.ErrUnavailable)
	}
	return a.Saver.SavePlaylist(ctx, r)
}

// Calibration implements httpapi.CalibrationBackend.
func (a *API) Calibration(ctx context.Context) (httpapi.CalibrationState, error) {
	if a.CalibrationState == nil {
		return httpapi.CalibrationState{}, fmt.Errorf("%w: no calibration reader", httpapi.ErrUnavailable)
	}
	return a.CalibrationState(ctx)
}
