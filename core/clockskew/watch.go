package clockskew

// Watch keeps the last reading of a main process and tells when its state
// changed, so that the operator is told once per change, not at every
// measurement. The zero Watch has no reading. It is not safe for
// concurrent use: its owner serializes calls.
type Watch struct {
	last *Reading
}

// Note records r and returns the state before it ("" for the first
// reading) and whether r's state differs from it (always for the first).
func (w *Watch) Note(r Reading) (from State, changed bool) {
	if w.last != nil {
		from = w.last.State
	}
	w.last = &r
	return from, from != r.State
}

// Last is the last reading noted; ok is false before the first.
func (w *Watch) Last() (r Reading, ok bool) {
	if w.last == nil {
		return Reading{}, false
	}
	return *w.last, true
}
