package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/driver"
)

// progressInterval is how often serve looks at the counts for its
// progress line.
const progressInterval = 5 * time.Minute

// logProgress looks at the library's counts every interval and logs one
// INFO `progress` line when they changed since the last line (progressLog):
// tagged, pending, in progress, failed, and the rate of files tagged per
// minute since the last look. Counts that do not move log nothing, busy or
// not (an idle library, paused workers, re-tagging held back, every
// worker failed), so a daemon that runs for weeks does not fill its log; a
// store that cannot be read skips the look (its errors are logged where
// they happen). It returns when ctx is done.
func logProgress(ctx context.Context, m *driver.Main, interval time.Duration, log *slog.Logger) {
	var p progressLog
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c, _, err := m.LibraryCounts(ctx)
		if err != nil {
			continue
		}
		if line, attrs := p.observe(c, time.Now()); line {
			log.Info("progress", attrs...)
		}
	}
}

// progressLog decides the progress lines from the counts read, one look
// at a time.
//
// Invariants: a line is due when the counts differ from those of the last
// line, or, at the first look, when files are pending or in progress;
// per_minute is the files tagged since the previous look that read the
// counts, over the time that really passed since it (a look whose read
// failed leaves the previous one in place).
type progressLog struct {
	line *store.Counts // the counts of the last line; nil: none yet
	prev *store.Counts // the counts of the previous look; nil: none yet
	at   time.Time     // when prev was read
}

// observe takes the counts c read at now and says whether a line is due,
// with its attributes.
func (p *progressLog) observe(c store.Counts, now time.Time) (bool, []any) {
	prev, at := p.prev, p.at
	p.prev, p.at = &c, now
	switch {
	case p.line == nil && c.Pending == 0 && c.Claimed == 0: // idle from the start
		return false, nil
	case p.line != nil && *p.line == c: // nothing moved since the last line
		return false, nil
	}
	p.line = &c
	attrs := []any{"tagged", c.Tagged, "pending", c.Pending, "in_progress", c.Claimed, "failed", c.Failed, "total", c.Total}
	if elapsed := now.Sub(at); prev != nil && elapsed > 0 {
		rate := float64(c.Tagged-prev.Tagged) / elapsed.Minutes()
		if rate < 0 { // files left the store meanwhile (forget): no rate to tell
			rate = 0
		}
		attrs = append(attrs, "per_minute", float64(int(rate*10+0.5))/10)
	}
	return true, attrs
}
