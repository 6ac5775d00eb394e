package app

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/node"
)

// eventLevel is the log level of an event kind: WARN for what an operator
// must see (a worker failed or killed, a file failed for good, …), INFO
// for the life of workers and a file's retry, DEBUG for the rest.
func eventLevel(kind string) slog.Level {
	switch kind {
	case event.Failed, event.Kill, event.Quarantined, event.StoreError, event.ModelLoadFailed, event.NodeName, event.FileFailed, event.MainPaused:
		return slog.LevelWarn
	case event.RestartScheduled, event.Restart, event.Status, event.Exit, event.Reset, event.Stop, event.FileRetry:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// LogSink turns core events into structured log lines with component ids.
func LogSink(log *slog.Logger) event.Sink { return logSinkWith(log, nil) }

// logSinkWith is LogSink whose lines about one file a person must find
// (quarantined; a release that counted a crash against the file, at
// INFO; a claim whose lease expired, taken back from a dead owner, at
// INFO) carry the file's path, read by paths (nil: without it), and the
// time of their event, though logged once the path is read.
//
// A worker that exits with code 0 during a graceful stop did what it was
// asked: the owner reports it unhealthy then (dead, docs/design.md §4), and that
// status change is logged at DEBUG, not as an INFO healthy → unhealthy
// that reads like trouble; its `exit` line (INFO) says it ended.
func logSinkWith(log *slog.Logger, paths *pathLogger) event.Sink {
	quiet := storeErrorQuiet{}
	stopping := false
	stopped := map[string]bool{} // components that exited 0 during the stop
	return event.SinkFunc(func(e event.Event) {
		lvl := eventLevel(e.Event)
		byPath := false
		switch e.Event {
		case event.Stop:
			stopping = true
		case event.Exit:
			stopped[e.Component] = stopping && e.Code != nil && *e.Code == 0
		case event.Status:
			if stopped[e.Component] && e.To == string(health.Unhealthy) {
				lvl = slog.LevelDebug
			}
		}
		switch {
		case e.Event == event.Quarantined:
			byPath = true
		case e.Event == event.Release && e.Count > 0: // a crash counted against the file
			lvl, byPath = slog.LevelInfo, true
		case e.Event == event.LeaseExpired && e.Cause == node.CleanupLeaseExpired: // a dead owner's claim
			lvl, byPath = slog.LevelInfo, true
		}
		if !log.Enabled(context.Background(), lvl) {
			return
		}
		attrs := []any{}
		if e.Event == event.StoreError {
			n, show := quiet.admit(e)
			if !show {
				return
			}
			if n > 0 {
				attrs = append(attrs, "suppressed", n)
			}
		}
		add := func(k, v string) {
			if v != "" {
				attrs = append(attrs, k, v)
			}
		}
		add("component", e.Component)
		add("from", e.From)
		add("to", e.To)
		add("file", e.File)
		if byPath {
			add("worker", e.Worker)
		}
		add("reason", e.Reason)
		if e.BackoffMs > 0 {
			attrs = append(attrs, "backoff", time.Duration(e.BackoffMs)*time.Millisecond)
		}
		if e.PID > 0 {
			attrs = append(attrs, "pid", e.PID)
		}
		if byPath && e.Count > 0 {
			attrs = append(attrs, "crashes", e.Count)
		}
		if byPath && paths != nil && e.File != "" {
			paths.logf(lvl, e.Event, e.File, e.T, attrs)
			return
		}
		log.Log(context.Background(), lvl, e.Event, attrs...)
	})
}

// storeErrorQuietFor is how long a store error is not logged again once it
// was: during an outage the main process retries its store writes every
// tick, and one line a second per operation drowns the log.
const storeErrorQuietFor = 30 * time.Second

// storeErrorQuiet logs a store error of one operation at most once per
// storeErrorQuietFor of event time, and counts the ones it held back. The
// operation is the reason's first two words: "renew leases:", "confirm
// claim:", or, for an error the store adapter named itself, "sqlite:
// complete" (its third word is the file key, left out so that one
// operation over many files counts once).
type storeErrorQuiet map[string]*quietOp

// quietOp is when an operation's store error was last logged, and how many
// of its errors were held back since.
type quietOp struct {
	at         time.Time
	suppressed int
}

// admit reports whether e is logged and how many were held back before it.
func (q storeErrorQuiet) admit(e event.Event) (int, bool) {
	words := strings.Fields(e.Reason)
	key := e.Component + "|" + strings.Join(words[:min(2, len(words))], " ")
	s := q[key]
	if s == nil {
		q[key] = &quietOp{at: e.T}
		return 0, true
	}
	if e.T.Sub(s.at) < storeErrorQuietFor {
		s.suppressed++
		return 0, false
	}
	n := s.suppressed
	s.at, s.suppressed = e.T, 0
	return n, true
}
