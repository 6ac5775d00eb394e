package node

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nomarr/nomarr/core/event"
)

// A main process holds its node name in the store while it runs.
//
// Restart state is keyed `<node>/<component>`, so two main processes
// running under one node name on one store would share it: each would
// overwrite the other's counters, and a crash loop could escape its limits.
// Invariant: at most one live main process runs under a node name on a
// store. The holder writes the meta document `node:<name>` (a NameHolder)
// with a compare-and-set, renews it every lease_ttl/3 for lease_ttl, and
// hands it back (expired) once its graceful stop is done. A main process
// spawns no worker and reads no restart state before it holds its name.
//
// A starting main process takes the name when it is free, already its own,
// or held by a process that is known to be gone (same host and pid
// namespace, and the holder's pid no longer runs the process that wrote it:
// a main process killed and started again takes its name at once). A
// holder known to run refuses the start, even with its hold lapsed (it may
// be stopped for a while). A holder whose liveness cannot be known (another
// host) is waited for until its hold lapses; if it renews meanwhile, it
// runs, and the start is refused; if not, the name is taken. A holder that finds
// its name taken by another (its hold lapsed while it was stopped or cut
// off) stops gracefully: Halted says why.

// NameKeyPrefix prefixes the node name in the meta key that holds it.
const NameKeyPrefix = "node:"

// NameHolder is the value of the meta document `node:<name>`.
type NameHolder struct {
	Instance string `json:"instance"`
	Host     string `json:"host,omitempty"`
	// Space says where PID means something (the host's boot and its pid
	// namespace; "" unknown) and Started when that process started, as the
	// kernel counts it, so that a reused pid is not taken for the holder.
	Space   string `json:"space,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Started string `json:"started,omitempty"`
	UntilMs int64  `json:"until_ms"`
}

func (h NameHolder) encode() string {
	b, _ := json.Marshal(h) // plain fields: cannot fail
	return string(b)
}

func (h NameHolder) String() string {
	s := h.Instance
	if h.PID != 0 {
		s += fmt.Sprintf(" (pid %d", h.PID)
		if h.Host != "" {
			s += " on " + h.Host
		}
		s += ")"
	}
	return s
}

// Liveness is what can be known of a holder's process from here.
type Liveness int

const (
	// LivenessUnknown: the holder runs elsewhere (another host or pid namespace).
	LivenessUnknown Liveness = iota
	// Alive: the holder's process runs.
	Alive
	// Gone: the holder's process no longer runs.
	Gone
)

// NameVerdict is what a starting main process does about its node name.
type NameVerdict struct {
	Take   bool      // free, lapsed, its own, or its holder is gone
	Wait   time.Time // held by a holder that may be gone: look again then
	Refuse string    // held by a running main process: do not start
}

// DecideName decides about a node name held by cur (nil: free) for the
// main process self at now; live is what is known of cur's process, and
// seen is the hold that an earlier look found and waited for (nil: none).
func DecideName(name string, cur, seen *NameHolder, self string, now time.Time, live Liveness) NameVerdict {
	switch {
	case cur == nil, cur.Instance == self, live == Gone:
		return NameVerdict{Take: true}
	case live == Alive: // even with its hold lapsed: it may only be stopped for a while
		return NameVerdict{Refuse: fmt.Sprintf("node %q is in use by main process %s on this store: stop it, or give this one another node name (--node)", name, cur)}
	case cur.UntilMs <= now.UnixMilli():
		return NameVerdict{Take: true}
	case seen != nil && seen.Instance == cur.Instance && cur.UntilMs > seen.UntilMs:
		return NameVerdict{Refuse: fmt.Sprintf("node %q is in use by main process %s on this store (it renewed its hold while this one waited): give each main process its own node name (--node)", name, cur)}
	default:
		return NameVerdict{Wait: time.UnixMilli(cur.UntilMs)}
	}
}

// nameState is the node's hold on its name.
type nameState struct {
	held      string      // the value last written by this process; "" before
	seen      *NameHolder // a hold waited for
	retryAt   time.Time   // when to look again while not holding it
	storeDown bool        // the last look failed: the store did not answer
	halted    error       // refused or lost: the node must stop
}

func (n *Node) nameKey() string { return NameKeyPrefix + n.cfg.Supervisor.Node }

// holding reports whether this process holds its name.
func (n *Node) holding() bool { return n.name.held != "" }

// takeName looks at the name once and takes it if DecideName says so. A
// store error or a lost race leaves it to a later look.
func (n *Node) takeName(ctx context.Context, now time.Time) {
	raw, ok, err := n.store.GetMeta(ctx, n.nameKey())
	if err != nil {
		n.nameTrouble(now, "read node name", err)
		return
	}
	n.name.storeDown = false
	var cur *NameHolder
	if ok {
		var h NameHolder
		if json.Unmarshal([]byte(raw), &h) == nil && h.Instance != "" {
			cur = &h
		} // unreadable: taken as free, through the same compare-and-set
	}
	live := LivenessUnknown
	if cur != nil && n.cfg.Liveness != nil {
		live = n.cfg.Liveness(*cur)
	}
	v := DecideName(n.cfg.Supervisor.Node, cur, n.name.seen, n.cfg.Supervisor.Instance, now, live)
	switch {
	case v.Refuse != "":
		n.name.halted = fmt.Errorf("%s", v.Refuse)
		n.sink.Emit(event.Event{T: now, Event: event.NodeName, Instance: n.cfg.Supervisor.Instance, Reason: "refused: " + v.Refuse})
		return
	case !v.Take:
		n.name.seen, n.name.retryAt = cur, v.Wait
		n.sink.Emit(event.Event{T: now, Event: event.NodeName, Instance: n.cfg.Supervisor.Instance,
			Reason: fmt.Sprintf("waiting: node %q is held by %s until %s", n.cfg.Supervisor.Node, cur, v.Wait.UTC().Format(time.RFC3339))})
		return
	}
	next := n.holder(now)
	old := ""
	if ok {
		old = raw
	}
	swapped, err := n.store.SwapMeta(ctx, n.nameKey(), old, next)
	if err != nil {
		n.nameTrouble(now, "take node name", err)
		return
	}
	if !swapped { // another process wrote it meanwhile: look again
		n.name.retryAt = now
		return
	}
	n.name.held = next
	if cur != nil && cur.Instance != n.cfg.Supervisor.Instance && cur.UntilMs > now.UnixMilli() {
		n.sink.Emit(event.Event{T: now, Event: event.NodeName, Instance: n.cfg.Supervisor.Instance,
			Reason: fmt.Sprintf("taken over from %s, which is gone", cur)})
	}
}

// nameTrouble reports a store failure while taking the name; the next look
// is one check interval later.
func (n *Node) nameTrouble(now time.Time, what string, err error) {
	n.name.storeDown = true
	n.name.retryAt = now.Add(n.cfg.Monitor.CheckInterval)
	n.sink.Emit(event.Event{T: now, Event: event.StoreError, Instance: n.cfg.Supervisor.Instance, Reason: what + ": " + err.Error()})
}

// holder is this process's hold, lasting one lease_ttl from now.
func (n *Node) holder(now time.Time) string {
	h := n.cfg.Self
	h.Instance = n.cfg.Supervisor.Instance
	h.UntilMs = now.Add(n.cfg.Supervisor.LeaseTTL).UnixMilli()
	return h.encode()
}

// renewName is the name's renewal hook. A hold replaced by another process
// halts the node: another main process runs under this name now.
func (n *Node) renewName(ctx context.Context, now time.Time) error {
	if !n.holding() || n.name.halted != nil {
		return nil
	}
	next := n.holder(now)
	swapped, err := n.store.SwapMeta(ctx, n.nameKey(), n.name.held, next)
	if err != nil {
		return fmt.Errorf("renew node name: %w", err)
	}
	if swapped {
		n.name.held = next
		return nil
	}
	who := "another main process"
	if raw, ok, err := n.store.GetMeta(ctx, n.nameKey()); err == nil && ok {
		var h NameHolder
		if json.Unmarshal([]byte(raw), &h) == nil && h.Instance != "" {
			who = "main process " + h.String()
		}
	}
	n.name.halted = fmt.Errorf("node %q was taken over by %s while this one's hold had lapsed: stopping; give each main process its own node name (--node)",
		n.cfg.Supervisor.Node, who)
	n.sink.Emit(event.Event{T: now, Event: event.NodeName, Instance: n.cfg.Supervisor.Instance, Reason: "lost: " + n.name.halted.Error()})
	return nil
}

// Halted returns why the node must stop because of its name (refused at
// start, or taken over while running); nil otherwise. The driver stops the
// node gracefully and reports it.
func (n *Node) Halted() error { return n.name.halted }

// ReleaseName hands the name back once a graceful stop is done, so that
// the next start takes it at once; a failure only leaves the hold to lapse.
func (n *Node) ReleaseName(ctx context.Context, now time.Time) error {
	if !n.holding() {
		return nil
	}
	var h NameHolder
	_ = json.Unmarshal([]byte(n.name.held), &h)
	h.UntilMs = 0
	if _, err := n.store.SwapMeta(ctx, n.nameKey(), n.name.held, h.encode()); err != nil {
		return fmt.Errorf("release node name: %w", err)
	}
	n.name.held = ""
	return nil
}
