package sim

import (
	"encoding/json"

	"github.com/nomarr/nomarr/core/event"
)

// Rec is one trace line: {"t_ms":…, "event":…, …fields}. Empty fields are
// omitted, so the first status event of a component in a main process (its
// monitor had no status before) carries `to` but no `from`; every later
// transition carries both (docs/design.md §12). An expectation matches that first
// event with `from: ""`.
type Rec struct {
	TMs int64 `json:"t_ms"`
	event.Event
}

// record stamps and stores an event, writes its JSON line, and feeds the
// safety checker.
func (w *World) record(e event.Event) {
	if e.T.IsZero() {
		e.T = w.now
	}
	r := Rec{TMs: e.T.Sub(w.start).Milliseconds(), Event: e}
	w.counts[e.Event]++
	if w.out != nil {
		b, err := json.Marshal(&r)
		if err == nil {
			w.out.Write(append(b, '\n'))
		}
	}
	if w.retain {
		w.trace = append(w.trace, r)
	}
	if w.check != nil {
		w.check.onEvent(&r)
	}
}
