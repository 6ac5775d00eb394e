package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/driver"
)

// progressInterval is how often serve logs its progress line while there
// is work.
const progressInterval = 5 * time.Minute

// logProgress logs, every interval, one INFO `progress` line while files
// are pending or in progress, or when the counts moved since the last
// line: tagged, pending, in progress, failed, and the rate of files
// tagged per minute over the interval. An idle library logs nothing, so
// a daemon that runs for weeks does not fill its log; a store that
// cannot be read skips the line (its errors are logged where they
// happen). It returns when ctx is done.
func logProgress(ctx context.Context, m *driver.Main, interval time.Duration, log *slog.Logger) {
	var last *store.Counts
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
		if line, attrs := progressLine(last, c, interval); line {
			log.Info("progress", attrs...)
		}
		last = &c
	}
}

// progressLine decides whether a progress line is due for counts c after
// last (nil: the first look) and gives its attributes.
func progressLine(last *store.Counts, c store.Counts, interval time.Duration) (bool, []any) {
	busy := c.Pending > 0 || c.Claimed > 0
	if !busy && (last == nil || *last == c) {
		return false, nil
	}
	attrs := []any{"tagged", c.Tagged, "pending", c.Pending, "in_progress", c.Claimed, "failed", c.Failed, "total", c.Total}
	if last != nil && interval > 0 {
		rate := float64(c.Tagged-last.Tagged) / interval.Minutes()
		if rate < 0 { // files left the store meanwhile (forget): no rate to tell
			rate = 0
		}
		attrs = append(attrs, "per_minute", float64(int(rate*10+0.5))/10)
	}
	return true, attrs
}
