// Package sim is a deterministic, single-threaded discrete-event world that
// drives the production core: a virtual clock, fake pipes carrying real
// encoded frames through the real codec, fake processes running the real
// worker state machine, the in-memory store with injectable faults, a fake
// analyzer and a fake GPU. It decides nothing itself: every decision — status,
// death, restart, claim, error class — is the core's. The same scenario and
// seed always give a byte-identical trace.
package sim

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/config"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/store"
)

// Epoch is the simulated wall-clock time at t=0.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Options tune a run.
type Options struct {
	// Seed overrides the scenario's seed when non-zero.
	Seed uint64
	// Trace receives the JSONL trace (nil: none).
	Trace io.Writer
	// NoRetain keeps no trace in memory (benchmarks); expectations that need
	// the trace are then not checked.
	NoRetain bool
	// Check runs the safety invariants after every event.
	Check bool
	// Store, when set, is used instead of a fresh in-memory store.
	Store *memstore.Store
}

// World is one simulation run.
type World struct {
	sc   *Scenario
	cfg  config.Config
	ctx  context.Context
	rng  *rand.Rand
	seed uint64

	start, now, end time.Time
	q               queue
	seq             uint64

	Store     *memstore.Store
	Instances []*Instance
	gpuUp     bool
	nextPID   int

	specs    map[string]FileSpec
	analyses map[string]int // analyzer runs per file (for fail_times)

	out    io.Writer
	retain bool
	trace  []Rec
	counts map[string]int
	check  *checker
	events int64

	livelock string

	restarting                map[string]bool // main processes with a pending restart_main
	partitioned               map[string]bool // hosts (node names) cut off from the store (partition.go)
	lockHolder                *Process        // a hung worker holding the store's write lock (storelock.go)
	partitionGen              map[string]int  // the latest partition of each host owns its end
	cuts                      int             // hosts partitioned now
	gpuGen, storeGen, rateGen int             // the latest outage of each kind owns its recovery
	lossRate                  float64         // the share of store writes whose answer is lost (lostreply.go)
	lossGen                   int
	lostReplies               int64 // answers lost so far
}

// MaxEventsPerInstant bounds the events processed at one simulated instant;
// more means the core is livelocked.
const MaxEventsPerInstant = 1_000_000

// Result is what a run produced.
type Result struct {
	Scenario   string
	Seed       uint64
	Trace      []Rec
	Counts     map[string]int
	Summary    Summary
	Violations []string
	Failures   []string // failed expectations
	Events     int64    // simulation events processed
	Simulated  time.Duration
}

// Summary is the end state.
type Summary struct {
	Files         int
	Tagged        int
	FailedFiles   []string
	Quarantined   []string
	MissingFiles  []string // not valid: found missing by a job
	ClaimsLeft    int
	FailedWorkers []string
	Status        map[string]string
	Restarts      int
	Conflicts     int
	StoreOps      int64
	StoreFaults   int64
	LostReplies   int64 // writes made whose answer was lost (lostreply.go)
}

// Run executes a scenario.
func Run(sc *Scenario, opt Options) (*Result, error) {
	w, err := New(sc, opt)
	if err != nil {
		return nil, err
	}
	return w.Run(), nil
}

// New prepares a world for sc.
func New(sc *Scenario, opt Options) (*World, error) {
	cfg, err := sc.Settings()
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	seed := sc.Seed
	if opt.Seed != 0 {
		seed = opt.Seed
	}
	st := opt.Store
	if st == nil {
		st = memstore.New(seed)
	}
	w := &World{
		sc: sc, cfg: cfg, ctx: context.Background(), seed: seed,
		rng:   rand.New(rand.NewPCG(seed, 0x73696d)),
		start: Epoch, now: Epoch, end: Epoch.Add(sc.Duration.D()),
		Store: st, gpuUp: true, nextPID: 1000,
		specs: sc.Library.Overrides, analyses: map[string]int{},
		out: opt.Trace, retain: !opt.NoRetain, counts: map[string]int{}, restarting: map[string]bool{},
		partitioned: map[string]bool{}, partitionGen: map[string]int{},
	}
	if opt.Check {
		w.check = newChecker(w)
	}
	files := make([]store.File, sc.Library.Files)
	for i := range files {
		k := FileKey(i)
		files[i] = store.File{Key: k, Path: "/music/" + k + ".flac", Size: int64(1000 + i), NeedsTagging: true, IsValid: true}
	}
	if _, err := st.UpsertFiles(w.ctx, files); err != nil {
		return nil, fmt.Errorf("scenario %s: load library: %w", sc.Name, err)
	}
	for _, name := range sc.Instances {
		in, err := newInstance(w, name, 1)
		if err != nil {
			return nil, err
		}
		w.Instances = append(w.Instances, in)
	}
	return w, nil
}

// FileKey names synthetic file i.
func FileKey(i int) string { return fmt.Sprintf("f%04d", i) }

// Now returns the virtual time.
func (w *World) Now() time.Time { return w.now }

// Config returns the resolved configuration.
func (w *World) Config() config.Config { return w.cfg }

// Run processes events until the scenario's duration has elapsed.
func (w *World) Run() *Result {
	for _, in := range w.Instances {
		in.start()
	}
	for i := range w.sc.Faults {
		f := w.sc.Faults[i]
		w.at(w.start.Add(f.At.D()), func() { w.apply(&f) })
	}
	same := 0
	end := int64(w.end.Sub(w.start))
	for len(w.q) > 0 {
		if w.q[0].at > end {
			break
		}
		it := w.q.pop()
		at := w.start.Add(time.Duration(it.at))
		if at.Equal(w.now) {
			same++
		} else {
			same = 0
		}
		if same > MaxEventsPerInstant {
			// The core keeps asking to be woken at the same instant: a
			// livelock. Report it rather than spin forever.
			w.livelock = fmt.Sprintf("livelock: more than %d events at t=%s", MaxEventsPerInstant, w.now.Sub(w.start))
			break
		}
		w.now = at
		it.fn()
		w.events++
		for _, in := range w.Instances {
			in.reschedule()
		}
		if w.check != nil {
			w.check.afterEvent()
		}
	}
	if w.livelock == "" {
		w.now = w.end
	}
	return w.result()
}

func (w *World) result() *Result {
	res := &Result{Scenario: w.sc.Name, Seed: w.seed, Trace: w.trace, Counts: w.counts, Events: w.events, Simulated: w.now.Sub(w.start)}
	s := Summary{Status: map[string]string{}, StoreOps: w.Store.Ops, StoreFaults: w.Store.Faults, LostReplies: w.lostReplies}
	for _, f := range w.Store.Files() {
		s.Files++
		if f.Tagged {
			s.Tagged++
		}
		if f.Failed {
			s.FailedFiles = append(s.FailedFiles, f.Key)
			if f.LastError == quarantineReason(w) {
				s.Quarantined = append(s.Quarantined, f.Key)
			}
		}
		if !f.IsValid {
			s.MissingFiles = append(s.MissingFiles, f.Key)
		}
	}
	s.ClaimsLeft = len(w.Store.Claims())
	if len(w.Instances) > 0 {
		in := w.Instances[0]
		for _, id := range in.node.Sup.Components() {
			st := in.node.Status(id, w.now)
			s.Status[id] = string(st)
			if st == "failed" {
				s.FailedWorkers = append(s.FailedWorkers, id)
			}
		}
	}
	sort.Strings(s.FailedWorkers)
	s.Restarts = w.counts[event.Restart]
	s.Conflicts = w.counts[event.ClaimConflict]
	res.Summary = s
	if w.check != nil {
		w.check.final()
		res.Violations = w.check.violations
	}
	if w.livelock != "" {
		res.Violations = append(res.Violations, w.livelock)
	}
	if w.sc.Expect != nil && w.retain {
		res.Failures = w.sc.Expect.check(res)
	} else if len(res.Violations) > 0 {
		// With or without an expect block, a run expects no violations,
		// unless its block, checked above when the run keeps its events,
		// says how many.
		res.Failures = []string{fmt.Sprintf("violations: %v", first(res.Violations, 5))}
	}
	return res
}
