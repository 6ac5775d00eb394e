package driver

import (
	"maps"
	"sync"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/supervisor"
)

// Tally counts, since the main process started, the events of its node that
// an operator alerts on (the counters of /metrics). It counts the node's
// events as the core classifies them (event.Event.Cause) and decides
// nothing: every count is a count of events of the trace's vocabulary.
//
// Invariants: every known label set is present from the start, at 0:
// Kills has every component of the node, each with every kill cause
// (supervisor.KillCauses); Deaths every component; Released every claim
// cause (node.ClaimCauses). A cause the core adds later is counted all the
// same, from its first event. The counts never go down.
//
// Only what the main process sees is counted: the workers' own releases
// and file failures happen in other processes (their frames carry their
// error counts).
type Tally struct {
	// Kills: the supervisor killed a worker (kill events), by component,
	// then by cause.
	Kills map[string]map[string]int64
	// Deaths: a worker process ended and the supervisor handled its end
	// (exit events: a crash, an exit, the end of a kill, a stop's exits, a
	// spawn that failed), by component.
	Deaths map[string]int64
	// Quarantined: files quarantined as poison when a worker holding
	// them died (quarantined events, from ReleaseWorker's answer).
	Quarantined int64
	// Released: claims this main process removed, by cause: a dead
	// worker's claims (release events) and the claim cleanup's removals,
	// a lease that ran out or a file no longer work (lease_expired events;
	// the cleanup removes the claims of any host's workers).
	Released map[string]int64
}

// tally keeps a Tally; safe for concurrent use (the node may emit from
// the API's goroutines too, through a pause or resume).
type tally struct {
	mu sync.Mutex
	t  Tally
}

// newTally returns a tally with every claim cause at 0 and no component.
func newTally() *tally {
	t := Tally{Kills: map[string]map[string]int64{}, Deaths: map[string]int64{}, Released: map[string]int64{}}
	for _, k := range node.ClaimCauses() {
		t.Released[k] = 0
	}
	return &tally{t: t}
}

// register adds the label sets of components: each with every kill cause,
// at 0 where not counted yet.
func (t *tally) register(components []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range components {
		k := t.t.Kills[c]
		if k == nil {
			k = map[string]int64{}
			t.t.Kills[c] = k
		}
		for _, cause := range supervisor.KillCauses() {
			k[cause] += 0
		}
		t.t.Deaths[c] += 0
	}
}

// Emit counts e; an event.Sink.
func (t *tally) Emit(e event.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e.Event {
	case event.Kill:
		k := t.t.Kills[e.Component]
		if k == nil {
			k = map[string]int64{}
			t.t.Kills[e.Component] = k
		}
		k[e.Cause]++
	case event.Exit:
		t.t.Deaths[e.Component]++
	case event.Quarantined:
		t.t.Quarantined++
	case event.Release, event.LeaseExpired:
		if e.Cause != "" { // the main process's own releases; a worker's carry no cause
			t.t.Released[e.Cause]++
		}
	}
}

// get returns a copy of the counts now.
func (t *tally) get() Tally {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := Tally{Kills: make(map[string]map[string]int64, len(t.t.Kills)), Deaths: maps.Clone(t.t.Deaths),
		Quarantined: t.t.Quarantined, Released: maps.Clone(t.t.Released)}
	for comp, k := range t.t.Kills {
		c.Kills[comp] = maps.Clone(k)
	}
	return c
}
