package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/nomarr/nomarr/core/progress"
	"github.com/nomarr/nomarr/driver"
)

// progressInterval is how often serve looks at the counts for its
// progress line.
const progressInterval = 5 * time.Minute

// logProgress looks at the library's counts every interval and logs the
// INFO `progress` lines progress.Log says are due (when the counts changed
// since the last line; the rate of files tagged per minute since the
// previous look). A store that cannot be read skips the look: it is not
// observed, and its errors are logged where they happen. It returns when
// ctx is done.
func logProgress(ctx context.Context, m *driver.Main, interval time.Duration, log *slog.Logger) {
	var p progress.Log
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
		if line, ok := p.Observe(c, time.Now()); ok {
			log.Info("progress", line.Attrs()...)
		}
	}
}
