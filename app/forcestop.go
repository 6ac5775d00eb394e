package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nomarr/nomarr/core/supervisor"
	"github.com/nomarr/nomarr/driver"
)

// The stop signals of `serve` and `tag` (stopSignals): the first stops
// gracefully; the second forces the stop (driver.Main.ForceStop): the
// workers are killed at once and the store writes the stop waits for are
// left; a third only says that the stop is being forced.

// forceOnSignal answers the nth stop signal (n >= 2) of a command whose
// main loop is in m (nil before it runs: nothing to force yet, the first
// signal's stop is enough).
func forceOnSignal(log *slog.Logger, m *atomic.Pointer[driver.Main]) func(n int) {
	return func(n int) {
		main := m.Load()
		switch {
		case main == nil:
			log.Warn("already stopping")
		case n == 2:
			log.Warn("stopping now: the workers are killed, and the store writes the stop waits for are left " +
				"(the claims return to the work queue when their lease expires)")
			go func() {
				// The loop may be in a store call; ForceStop cuts it short.
				if err := main.ForceStop(context.Background()); err != nil {
					log.Debug("forced stop not needed", "err", err) // the loop had ended
				}
			}()
		default:
			log.Warn("already forcing the stop: the workers are killed; SIGKILL stops at once")
		}
	}
}

// logStoreWait is the main loop's report of a stop that waits on the store
// alone (driver.Main.OnStoreWait): once when the wait begins, then every
// 30 s.
func logStoreWait(log *slog.Logger) func(supervisor.StoreWait, time.Duration) {
	return func(w supervisor.StoreWait, waited time.Duration) {
		var what []string
		if n := len(w.Releases); n > 0 {
			what = append(what, plural(n, "claim release", "claim releases"))
		}
		if n := len(w.RestartStates); n > 0 {
			what = append(what, plural(n, "restart state", "restart states"))
		}
		after := ""
		if len(w.Releases) > 0 {
			after = " (the claims return when their lease expires)"
		}
		log.Warn(fmt.Sprintf("stopping: waiting for the store to take %s; press Ctrl-C again to leave them%s",
			strings.Join(what, " and "), after), "waited", waited.Round(time.Second))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// reportForced logs at WARN what a forced stop left, once m.Run returned,
// or what a stop left because the store reported itself detached (its
// database file deleted or replaced: supervisor.Abandoned.Detached); nothing
// after a stop that left nothing.
func reportForced(log *slog.Logger, m *driver.Main, leaseTTL time.Duration) {
	a := m.Abandoned()
	forced := m.Node.Sup.Forced()
	if !forced && a.Abandoned.Empty() {
		return
	}
	why := "forced stop"
	if !forced {
		why = "stop without the store"
		log.Warn("stopping: the store can take none of this process's writes (the next start opens the database now at its path), "+
			"so the stop did not wait for them", "err", a.Detached)
	}
	if len(a.Releases) > 0 {
		log.Warn(why+": claims not released; they return to the work queue when their lease expires "+
			"(lease_ttl), since nobody renews them", "workers", strings.Join(a.Releases, ","), "lease_ttl", leaseTTL)
	}
	if len(a.RestartStates) > 0 {
		log.Warn(why+": restart state not saved; the next start counts restarts from the last state saved",
			"workers", strings.Join(a.RestartStates, ","))
	}
	if a.Name {
		log.Warn("forced stop: node name not handed back; a start on this host takes it at once, "+
			"one elsewhere once its hold lapses (lease_ttl)", "lease_ttl", leaseTTL)
	}
	if a.Abandoned.Empty() {
		log.Info("forced stop: every claim was released and every restart state saved")
	}
}
