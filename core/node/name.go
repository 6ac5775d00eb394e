package node

import (
	"context"
	"encoding/json"
	"errors"
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
	Take   bool      // free, handed back, its own, or its holder is gone
	Wait   time.Time // held by a holder that may be gone: look again then
	Refuse string    // held by a running main process: do not start
}

// Sighting is a hold that a waiting main process saw: its stored value, and
// when this process first saw that value, by its own clock.
type Sighting struct {
	Raw    string
	Holder NameHolder
	At     time.Time
}

// DecideName decides about a node name whose stored value is raw, held by
// cur (nil: free), for the main process self at now; live is what is known
// of cur's process and seen the hold an earlier look found (nil: none).
//
// A hold's end is written by its holder's wall clock, which may be off from
// this one's; so a holder whose liveness cannot be known is judged by this
// process's own clock: it is taken for gone once its value has stayed the
// same for a whole lease_ttl since this process first saw it (a running
// holder rewrites it every lease_ttl/3), or once its end is more than a
// lease_ttl in the past (no clock is that far off). The look is repeated
// every lease_ttl/3 meanwhile, so that a release is seen early.
func DecideName(name string, cur *NameHolder, raw string, seen *Sighting, self string, now time.Time, ttl time.Duration, live Liveness) NameVerdict {
	switch {
	case cur == nil, cur.Instance == self, cur.UntilMs == 0, live == Gone:
		return NameVerdict{Take: true}
	case live == Alive: // even with its hold lapsed: it may only be stopped for a while
		return NameVerdict{Refuse: fmt.Sprintf("node %q is in use by main process %s on this store: stop it, or give this one another node name (--node)", name, cur)}
	case now.UnixMilli() > cur.UntilMs+ttl.Milliseconds():
		return NameVerdict{Take: true}
	case seen != nil && seen.Holder.Instance == cur.Instance && seen.Raw != raw:
		return NameVerdict{Refuse: fmt.Sprintf("node %q is in use by main process %s on this store (it renewed its hold while this one waited): give each main process its own node name (--node)", name, cur)}
	case seen != nil && seen.Raw == raw && now.Sub(seen.At) >= ttl:
		return NameVerdict{Take: true}
	}
	first := now
	if seen != nil && seen.Raw == raw {
		first = seen.At
	}
	return NameVerdict{Wait: minTime(first.Add(ttl), now.Add(ttl/3))}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// ErrNameNotHeld: the node does not hold its name yet, so it has not
// started, and must not touch restart state.
var ErrNameNotHeld = errors.New("node: not started yet: waiting for its node name")

// nameState is the node's hold on its name.
type nameState struct {
	held      string    // the value last written by this process; "" before
	seen      *Sighting // a hold waited for
	retryAt   time.Time // when to look again while not holding it
	renewAt   time.Time // when to renew while holding it
	storeDown bool      // the last look failed: the store did not answer
	halted    error     // refused or lost: the node must stop
}

func (n *Node) nameKey() string { return NameKeyPrefix + n.cfg.Supervisor.Node }

// holding reports whether this process holds its name.
func (n *Node) holding() bool { return n.name.held != "" }

func (n *Node) nameEvent(now time.Time, reason string) {
	n.sink.Emit(event.Event{T: now, Event: event.NodeName, Instance: n.cfg.Supervisor.Instance, Reason: reason})
}

// readName reads the hold: its stored value and holder (nil: free or
// unreadable, which the compare-and-set on raw then replaces).
func (n *Node) readName(ctx context.Context) (raw string, cur *NameHolder, err error) {
	raw, _, err = n.store.GetMeta(ctx, n.nameKey())
	if err != nil {
		return "", nil, err
	}
	return raw, parseHolder(raw), nil
}

// parseHolder reads a stored hold; nil when it is empty or unreadable.
func parseHolder(raw string) *NameHolder {
	var h NameHolder
	if raw != "" && json.Unmarshal([]byte(raw), &h) == nil && h.Instance != "" {
		return &h
	}
	return nil
}

// Refusal is why a main process starting now would be refused the node
// name whose stored hold is raw (DecideName, before any earlier look),
// known before it does anything else: `nomarr tag` asks it before its
// scan, so that a second run beside a running one says so at once instead
// of after scanning the library. "" when the start may go on (the name is
// free or lapsed, its holder gone or elsewhere): the start itself then
// decides, waiting as DecideName says. live tells whether a holder's
// process runs (nil: unknown).
func Refusal(name, raw string, now time.Time, ttl time.Duration, live func(NameHolder) Liveness) string {
	v, _ := firstLook(name, raw, now, ttl, live)
	return v.Refuse
}

// firstLook is DecideName for a process that has not looked at the name
// before, with the holder of raw (nil: free).
func firstLook(name, raw string, now time.Time, ttl time.Duration, live func(NameHolder) Liveness) (NameVerdict, *NameHolder) {
	cur := parseHolder(raw)
	if cur == nil {
		return NameVerdict{Take: true}, nil
	}
	l := LivenessUnknown
	if live != nil {
		l = live(*cur)
	}
	return DecideName(name, cur, raw, nil, "", now, ttl, l), cur
}

// InUse says why a main process may be running under the node name whose
// stored hold is raw ("" when none can be): one that starts now would not
// take it at once (DecideName before any earlier look), so its holder may
// still write restart state over whatever another process writes. live
// tells whether a holder's process runs (nil: unknown).
func InUse(name, raw string, now time.Time, ttl time.Duration, live func(NameHolder) Liveness) string {
	v, cur := firstLook(name, raw, now, ttl, live)
	switch {
	case v.Refuse != "":
		return v.Refuse
	case !v.Take:
		return fmt.Sprintf("node %q is held by main process %s, which may be running (its hold is taken for gone %s after it was last renewed)", name, cur, ttl)
	}
	return ""
}

// takeName looks at the name once and takes it if DecideName says so. A
// store error or a lost race leaves it to a later look.
func (n *Node) takeName(ctx context.Context, now time.Time) {
	raw, cur, err := n.readName(ctx)
	if err != nil {
		n.nameTrouble(now, "read node name", err)
		return
	}
	n.name.storeDown = false
	live := LivenessUnknown
	if cur != nil && n.cfg.Liveness != nil {
		live = n.cfg.Liveness(*cur)
	}
	ttl := n.cfg.Supervisor.LeaseTTL
	v := DecideName(n.cfg.Supervisor.Node, cur, raw, n.name.seen, n.cfg.Supervisor.Instance, now, ttl, live)
	switch {
	case v.Refuse != "":
		n.name.halted = errors.New(v.Refuse)
		n.nameEvent(now, "refused: "+v.Refuse)
		return
	case !v.Take:
		if n.name.seen == nil || n.name.seen.Raw != raw {
			n.name.seen = &Sighting{Raw: raw, Holder: *cur, At: now}
			n.nameEvent(now, fmt.Sprintf("waiting: node %q is held by %s; taken if its hold is not renewed within %s",
				n.cfg.Supervisor.Node, cur, ttl))
		}
		n.name.retryAt = v.Wait
		return
	}
	next := n.holder(now)
	swapped, err := n.store.SwapMeta(ctx, n.nameKey(), raw, next)
	if err != nil {
		n.nameTrouble(now, "take node name", err) // if it was written all the same, the next look finds it ours
		return
	}
	if !swapped { // another process wrote it meanwhile: look again
		n.name.retryAt = now
		return
	}
	n.name.held, n.name.seen = next, nil
	n.name.renewAt = now.Add(ttl / 3)
	if cur != nil && cur.Instance != n.cfg.Supervisor.Instance && cur.UntilMs > now.UnixMilli() {
		n.nameEvent(now, fmt.Sprintf("taken over from %s, which is gone", cur))
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

// swapOwn replaces this process's hold with value. A write whose answer
// was lost (a timeout after the store committed it) leaves a stored value
// other than the one remembered: one still naming this process is adopted
// and replaced. When the hold is another's, it says whose (who); "" when
// the swap succeeded.
func (n *Node) swapOwn(ctx context.Context, value string) (who string, err error) {
	swapped, err := n.store.SwapMeta(ctx, n.nameKey(), n.name.held, value)
	if err != nil || swapped {
		return "", err
	}
	raw, cur, err := n.readName(ctx)
	switch {
	case err != nil:
		return "", err
	case cur == nil:
		return "another main process", nil
	case cur.Instance != n.cfg.Supervisor.Instance:
		return "main process " + cur.String(), nil
	}
	if swapped, err = n.store.SwapMeta(ctx, n.nameKey(), raw, value); err != nil || swapped {
		return "", err
	}
	return "another main process", nil // replaced between the read and the swap
}

// renewName renews the hold every lease_ttl/3, and again at the next check
// when the store failed. A hold replaced by another process halts the
// node: another main process runs under this name now.
func (n *Node) renewName(ctx context.Context, now time.Time) {
	if !n.holding() || n.name.halted != nil || now.Before(n.name.renewAt) {
		return
	}
	next := n.holder(now)
	who, err := n.swapOwn(ctx, next)
	if err != nil {
		n.name.renewAt = now.Add(n.cfg.Monitor.CheckInterval)
		n.sink.Emit(event.Event{T: now, Event: event.StoreError, Instance: n.cfg.Supervisor.Instance, Reason: "renew node name: " + err.Error()})
		return
	}
	if who == "" {
		n.name.held = next
		n.name.renewAt = now.Add(n.cfg.Supervisor.LeaseTTL / 3)
		return
	}
	n.name.halted = fmt.Errorf("node %q was taken over by %s while this one's hold had lapsed: stopping; give each main process its own node name (--node)",
		n.cfg.Supervisor.Node, who)
	n.nameEvent(now, "lost: "+n.name.halted.Error())
}

// Halted returns why the node must stop because of its name (refused at
// start, or taken over while running); nil otherwise. The driver stops the
// node gracefully and reports it.
func (n *Node) Halted() error { return n.name.halted }

// ReleaseName hands the name back once a graceful stop is done, so that
// the next start takes it at once; a failure only leaves the hold to lapse.
// After a forced stop it writes nothing (forcestop.go): the operator would
// not wait for the store.
func (n *Node) ReleaseName(ctx context.Context, now time.Time) error {
	if !n.holding() || n.Sup.Forced() {
		return nil
	}
	var h NameHolder
	_ = json.Unmarshal([]byte(n.name.held), &h)
	h.UntilMs = 0
	if _, err := n.swapOwn(ctx, h.encode()); err != nil {
		return fmt.Errorf("release node name: %w", err)
	}
	n.name.held = ""
	return nil
}
