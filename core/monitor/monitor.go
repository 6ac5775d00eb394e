// Package monitor is the generic HealthMonitor of docs/design.md §6. It polls owners
// for the status of registered components every check interval, records it,
// emits an event on every transition, stops polling a failed component, writes
// batched best-effort history snapshots, and runs maintenance hooks on their
// periods. It never reads the store for liveness, never touches processes,
// never sleeps and never interprets phases.
package monitor

import (
	"context"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/store"
)

// Owner answers the status of the components it owns.
type Owner interface {
	Status(id string, now time.Time) health.Status
}

// Config holds the monitor's periods (docs/design.md §13).
type Config struct {
	CheckInterval   time.Duration // 1 s
	HistoryInterval time.Duration // 30 s
	// HistoryBuffer bounds the rows kept while the history store is failing;
	// the oldest rows are dropped (and counted) beyond it.
	HistoryBuffer int
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{CheckInterval: time.Second, HistoryInterval: 30 * time.Second, HistoryBuffer: 4096}
}

// Hook is a maintenance task run every Period (claim cleanup, for instance).
// An error is counted and reported; the hook runs again next period.
type Hook struct {
	Name   string
	Period time.Duration
	Run    func(ctx context.Context, now time.Time) error
}

type entry struct {
	id      string
	owner   Owner
	status  health.Status
	polling bool
}

type hookState struct {
	Hook
	next time.Time
}

// Stats are the monitor's counters.
type Stats struct {
	Polls          int64
	Transitions    int64
	HistoryWrites  int64
	HistoryFails   int64
	HistoryDropped int64
	HookFails      int64
}

// Monitor is the HealthMonitor state machine.
type Monitor struct {
	cfg      Config
	instance string
	hist     store.History
	sink     event.Sink

	entries []*entry
	byID    map[string]*entry
	hooks   []*hookState

	started     bool
	nextCheck   time.Time
	nextHistory time.Time
	buffer      []store.HistoryRow
	stats       Stats
}

// New returns a monitor. hist may be nil (no history).
func New(cfg Config, instance string, hist store.History, sink event.Sink) *Monitor {
	if sink == nil {
		sink = event.Discard
	}
	if cfg.HistoryBuffer <= 0 {
		cfg.HistoryBuffer = DefaultConfig().HistoryBuffer
	}
	return &Monitor{cfg: cfg, instance: instance, hist: hist, sink: sink, byID: map[string]*entry{}}
}

// Register adds a component; polling starts with the next check.
func (m *Monitor) Register(id string, owner Owner) {
	if e, ok := m.byID[id]; ok {
		e.owner, e.polling = owner, true
		return
	}
	e := &entry{id: id, owner: owner, polling: true}
	m.entries = append(m.entries, e)
	m.byID[id] = e
}

// AddHook registers a maintenance hook; its first run is one period after
// the monitor's first tick.
func (m *Monitor) AddHook(h Hook) { m.hooks = append(m.hooks, &hookState{Hook: h}) }

// Resume polls a component again (after a manual reset of a failed one).
func (m *Monitor) Resume(id string) {
	if e, ok := m.byID[id]; ok {
		e.polling = true
	}
}

// Status returns the last recorded status of id.
func (m *Monitor) Status(id string) (health.Status, bool) {
	e, ok := m.byID[id]
	if !ok || e.status == "" {
		return "", false
	}
	return e.status, true
}

// Polling reports whether id is still polled.
func (m *Monitor) Polling(id string) bool {
	e, ok := m.byID[id]
	return ok && e.polling
}

// Stats returns the counters.
func (m *Monitor) Stats() Stats { return m.stats }

// CheckDue returns when the next status check is due; while a check runs
// (its status events being emitted), the one being made. A check comes at
// the first Tick at or after it, which a main loop held up (in a store
// call, or stopped) makes late.
func (m *Monitor) CheckDue() time.Time { return m.nextCheck }

// NextWake returns when Tick next has work to do.
func (m *Monitor) NextWake() time.Time {
	t := m.nextCheck
	if m.nextHistory.Before(t) {
		t = m.nextHistory
	}
	for _, h := range m.hooks {
		if h.next.Before(t) {
			t = h.next
		}
	}
	return t
}

// Tick does whatever is due at now.
func (m *Monitor) Tick(ctx context.Context, now time.Time) {
	if !m.started {
		m.started = true
		m.nextCheck = now
		m.nextHistory = now.Add(m.cfg.HistoryInterval)
		for _, h := range m.hooks {
			h.next = now.Add(h.Period)
		}
	}
	if !now.Before(m.nextCheck) {
		m.check(now)
		m.nextCheck = now.Add(m.cfg.CheckInterval)
	}
	if !now.Before(m.nextHistory) {
		m.snapshot(ctx, now)
		m.nextHistory = now.Add(m.cfg.HistoryInterval)
	}
	for _, h := range m.hooks {
		if !now.Before(h.next) {
			if err := h.Run(ctx, now); err != nil {
				m.stats.HookFails++
				m.sink.Emit(event.Event{T: now, Event: event.StoreError, Instance: m.instance, Reason: h.Name + ": " + err.Error()})
			}
			h.next = now.Add(h.Period)
		}
	}
}

// check polls every polled component once.
func (m *Monitor) check(now time.Time) {
	for _, e := range m.entries {
		if !e.polling {
			continue
		}
		st := e.owner.Status(e.id, now)
		m.stats.Polls++
		if st != e.status {
			m.stats.Transitions++
			m.sink.Emit(event.Event{T: now, Event: event.Status, Instance: m.instance, Component: e.id, From: string(e.status), To: string(st)})
			e.status = st
		}
		if st == health.Failed {
			e.polling = false
		}
	}
}

// snapshot buffers one row per component and tries to write the buffer.
func (m *Monitor) snapshot(ctx context.Context, now time.Time) {
	if m.hist == nil {
		return
	}
	for _, e := range m.entries {
		if e.status == "" {
			continue
		}
		m.buffer = append(m.buffer, store.HistoryRow{At: now, Instance: m.instance, Component: e.id, Status: string(e.status)})
	}
	if over := len(m.buffer) - m.cfg.HistoryBuffer; over > 0 {
		m.stats.HistoryDropped += int64(over)
		m.buffer = append(m.buffer[:0], m.buffer[over:]...)
	}
	if len(m.buffer) == 0 {
		return
	}
	if err := m.hist.AppendHistory(ctx, m.buffer); err != nil {
		m.stats.HistoryFails++
		return
	}
	m.stats.HistoryWrites++
	m.buffer = m.buffer[:0]
}
