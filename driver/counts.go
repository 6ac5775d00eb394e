package driver

import (
	"context"

	"github.com/nomarr/nomarr/core/pace"
	"github.com/nomarr/nomarr/core/store"
)

// CountsFactor: the library counts shown on `nomarr tag`'s progress line
// and the dashboard are read again no sooner than this many times the last
// read's duration, so showing them takes at most 1/CountsFactor of the
// store's time. SQLite keeps them in four rows (tens of microseconds a
// read, due at every poll); a store that counts a million documents per
// read (ArangoDB: a scan of library_files) is read every 20 s per second it
// takes.
const CountsFactor = 20

// countsCache is the last good read of the library counts and its pace.
// One read at a time: a caller that finds a read under way waits for it
// (or for its own context).
type countsCache struct {
	sem    chan struct{}
	pacer  pace.Pacer
	counts store.Counts
	// warm: the last read was good. The first good read, and the first
	// after a failed one, do not pace the next: their time may be the
	// store's (re)opening (a connection, a schema check waiting on a
	// scan's write lock: seconds on a loaded machine), which the reads
	// after it do not pay. Pacing by it kept the counts of a library just
	// scanned at zero for 20 s and more.
	warm bool
}

func newCountsCache() *countsCache {
	return &countsCache{sem: make(chan struct{}, 1), pacer: pace.Pacer{Factor: CountsFactor}}
}

// LibraryCounts returns the library counts for a display: read from the
// store when a read is due (pace.Pacer), else the last good read's; fresh
// tells which. Only good reads are kept and paced (see countsCache.warm
// for the first of them): a failed read (a store
// that timed out, a caller that went away) is the caller's error alone,
// and the next call reads again, so counts come back as soon as the store
// does.
func (m *Main) LibraryCounts(ctx context.Context) (c store.Counts, fresh bool, err error) {
	cc := m.counts
	select {
	case cc.sem <- struct{}{}:
	case <-ctx.Done():
		return store.Counts{}, false, ctx.Err()
	}
	defer func() { <-cc.sem }()
	start := m.Clock.Now()
	if !cc.pacer.Due(start) {
		return cc.counts, false, nil
	}
	c, err = m.Store.Counts(ctx)
	if err != nil {
		if ctx.Err() == nil { // the store failed, not the caller: it may be opened again
			cc.warm = false
		}
		return store.Counts{}, true, err
	}
	cc.counts = c
	if cc.warm {
		cc.pacer.Read(start, m.Clock.Now())
	} else {
		cc.pacer.Read(start, start)
		cc.warm = true
	}
	return c, true, nil
}
