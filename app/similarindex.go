package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nomarr/nomarr/adapters/vectorindex"
	"github.com/nomarr/nomarr/app/service"
	"github.com/nomarr/nomarr/core/store"
)

// How often SimilarIndex looks for a change (Probe), how long after the
// marker last moved it reads everything at every probe (Settle), and how
// often it reads everything whatever the marker says (Resync), unless
// told otherwise.
const (
	DefaultIndexProbe  = 10 * time.Second
	DefaultIndexSettle = time.Minute
	DefaultIndexResync = 5 * time.Minute
)

// SimilarIndex keeps serve's similarity index current with the store
// (docs/decisions/similarity.md, "The index in serve"): it builds one
// Similar of the host's current model set at start and, every Probe,
// compares a change marker, the model set and the library counts
// (store.Counts, a read of maintained counters), with the last sync's. A
// changed marker, a marker that changed within Settle (a vector put a
// little after the completion that moved the counts), or Resync passed
// since the last sync reads the model set's vectors and files again;
// when they differ from what the index holds, a new index is built and
// replaces the old one.
//
// Invariants: Current is never a Similar of another model set than the
// one ModelSet gave at its sync; a Similar, once published, is never
// changed (readers share it without a lock); Generation grows by one at
// each replacement, and Refreshed's channel is closed then.
type SimilarIndex struct {
	Store store.Store
	// ModelSet is the host's model set now ("" none: no index).
	ModelSet func() string
	Probe    time.Duration // 0: DefaultIndexProbe
	Settle   time.Duration // 0: DefaultIndexSettle
	Resync   time.Duration // 0: DefaultIndexResync
	Config   vectorindex.Config
	Log      *slog.Logger // nil: discard

	mu      sync.Mutex
	cur     *Similar
	gen     uint64
	why     error         // why cur is nil
	changed chan struct{} // closed at the next replacement
}

// indexMarker is what SimilarIndex compares between probes.
type indexMarker struct {
	modelSet string
	counts   store.Counts
}

// errIndexNotBuilt: no sync has finished yet.
var errIndexNotBuilt = errors.New("the similarity index is being built")

// Current is the index now and its generation; nil with why it is
// missing (not built yet, no model set, the store unreadable at start).
func (x *SimilarIndex) Current() (*Similar, uint64, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cur == nil {
		why := x.why
		if why == nil {
			why = errIndexNotBuilt
		}
		return nil, x.gen, why
	}
	return x.cur, x.gen, nil
}

// Refreshed is closed when the index is next replaced.
func (x *SimilarIndex) Refreshed() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.changed == nil {
		x.changed = make(chan struct{})
	}
	return x.changed
}

// publish replaces the index (nil, with why) and signals it.
func (x *SimilarIndex) publish(s *Similar, why error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.cur, x.why = s, why
	x.gen++
	if x.changed != nil {
		close(x.changed)
	}
	x.changed = make(chan struct{})
}

// Service is x as serve's background service.
func (x *SimilarIndex) Service() service.Service {
	return service.Service{Name: "similarity index", Run: x.Run}
}

// Run keeps the index current until ctx ends. A failed read is logged
// and tried again at the next probe; the index it had stays.
func (x *SimilarIndex) Run(ctx context.Context) error {
	probe, settle, resync := x.Probe, x.Settle, x.Resync
	if probe <= 0 {
		probe = DefaultIndexProbe
	}
	if settle <= 0 {
		settle = DefaultIndexSettle
	}
	if resync <= 0 {
		resync = DefaultIndexResync
	}
	log := x.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var last indexMarker
	var synced, moved time.Time // the last sync; the last change of the marker
	fresh := false              // last holds a sync's marker
	t := time.NewTicker(probe)
	defer t.Stop()
	for {
		// The marker is read before the data: a change between the two
		// is in this sync and, as it moved the marker, synced again.
		m := indexMarker{modelSet: x.ModelSet()}
		c, err := x.Store.Counts(ctx)
		m.counts = c
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("similarity index: cannot read the library counts; trying again", "in", probe, "err", err)
		case err == nil && (!fresh || m != last || time.Since(moved) < settle || time.Since(synced) >= resync):
			if fresh && m != last {
				moved = time.Now()
			}
			if err := x.sync(ctx, m.modelSet, log); err != nil {
				if ctx.Err() == nil {
					log.Warn("similarity index: cannot read the track vectors; trying again", "in", probe, "err", err)
				}
			} else {
				last, synced, fresh = m, time.Now(), true
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// sync reads modelSet's vectors and files and publishes a new index when
// they differ from the current one's.
func (x *SimilarIndex) sync(ctx context.Context, modelSet string, log *slog.Logger) error {
	if modelSet == "" {
		if cur, _, why := x.Current(); cur != nil || !errors.Is(why, errNoModelSet) {
			x.publish(nil, errNoModelSet)
			log.Warn("similarity index: no model set (the analyzer records none): similarity answers nothing")
		}
		return nil
	}
	vecs, files, err := readSimilar(ctx, x.Store, modelSet)
	if err != nil {
		return err
	}
	cur, _, _ := x.Current()
	if cur != nil && cur.holds(modelSet, vecs, files) {
		return nil
	}
	start := time.Now()
	s, err := buildSimilar(modelSet, vecs, files, x.Config)
	if err != nil {
		return err
	}
	x.publish(s, nil)
	level := slog.LevelDebug // a refresh; the first build and a new model set are news
	if cur == nil || cur.ModelSet != modelSet {
		level = slog.LevelInfo
	}
	log.Log(ctx, level, "similarity index built", "model_set", modelSet, "tracks", s.Len(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// errNoModelSet: the host has no model set, so no vector can be compared.
var errNoModelSet = errors.New("no model set on this host (the analyzer records none)")
