package store

import "errors"

// ErrCorrupt: a fault (IsFault) that no retry mends and no wait outlasts:
// the database's content is damaged (a SQLite file whose pages or header
// are malformed, or that was cut short). Every write after it fails the
// same way, so a caller reports it as corruption, with the way to repair
// it, rather than as an outage to wait for. Adapters wrap it: match it
// with errors.Is (IsCorrupt).
var ErrCorrupt = errors.New("store: database corrupt")

// IsCorrupt reports whether err says the database is damaged (ErrCorrupt).
func IsCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }
