package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// fileReader is the store read a pathLogger needs.
type fileReader interface {
	File(ctx context.Context, key string) (store.File, error)
}

const (
	// pathLookupTimeout bounds one path read: a line waits at most this
	// long for its path, then is logged without it.
	pathLookupTimeout = 2 * time.Second
	// pathLookupPause is how long the lines after a path read that failed
	// (not a file the store no longer has) are logged without a path, at
	// once: a store that is down would otherwise hold each of them up for
	// pathLookupTimeout.
	pathLookupPause = 10 * time.Second
	// pathDrainTimeout bounds how long a main process, once its loop has
	// returned, waits for the path reads of the lines still queued; the
	// lines left then are logged without their path.
	pathDrainTimeout = 2 * time.Second
)

// pathLogger logs the main process's lines about one file that a person
// must find on disk (a file quarantined, a crash counted against it, a
// claim taken over from a dead owner) with the file's path: the core's
// events name the file by its key, and the main process does not know the
// path. One goroutine reads the paths from the store, off the main loop, in
// the order the lines came, so that a slow or failing store never holds
// the loop up: a read that fails or takes longer than timeout logs the
// line without the path (and the lines of the next pause too), and a line
// that finds the queue full is logged at once, without it.
//
// Invariants: every line given to logf is logged exactly once, with the
// time of its event (not that of the path read), by the time close has
// returned (close waits at most its deadline for the reads, then logs the
// rest without the path); a line given after close is logged at once,
// without the path.
type pathLogger struct {
	log     *slog.Logger
	files   fileReader
	timeout time.Duration // pathLookupTimeout
	pause   time.Duration // pathLookupPause
	queue   chan pathLine
	done    chan struct{} // closed when run has logged every line
	hurry   context.Context
	rush    context.CancelFunc // ends hurry: no more path reads

	mu     sync.Mutex // guards closed and the sends on queue
	closed bool
	once   sync.Once
}

type pathLine struct {
	lvl   slog.Level
	msg   string
	key   string
	t     time.Time
	attrs []any
	done  chan struct{} // closed once logged; nil: nobody waits (sync)
}

// newPathLogger starts the goroutine that logs the lines; close ends it.
func newPathLogger(log *slog.Logger, files fileReader) *pathLogger {
	return newPathLoggerWith(log, files, pathLookupTimeout, pathLookupPause)
}

// newPathLoggerWith is newPathLogger with a path read's timeout and the
// pause after a failed one.
func newPathLoggerWith(log *slog.Logger, files fileReader, timeout, pause time.Duration) *pathLogger {
	p := &pathLogger{log: log, files: files, timeout: timeout, pause: pause,
		queue: make(chan pathLine, 256), done: make(chan struct{})}
	p.hurry, p.rush = context.WithCancel(context.Background())
	go p.run()
	return p
}

func (p *pathLogger) run() {
	defer close(p.done)
	var skipUntil time.Time
	for l := range p.queue {
		if l.key == "" {
			close(l.done)
			continue
		}
		attrs := l.attrs
		if p.hurry.Err() == nil && !time.Now().Before(skipUntil) {
			ctx, cancel := context.WithTimeout(p.hurry, p.timeout)
			f, err := p.files.File(ctx, l.key)
			cancel()
			switch {
			case err == nil && f.Path != "":
				attrs = append([]any{"path", f.Path}, attrs...)
			case err != nil && !errors.Is(err, store.ErrNotFound):
				skipUntil = time.Now().Add(p.pause)
			}
		}
		p.emit(l.lvl, l.msg, l.t, attrs)
	}
}

// emit logs one line with the time t of its event (now when unknown).
func (p *pathLogger) emit(lvl slog.Level, msg string, t time.Time, attrs []any) {
	if t.IsZero() {
		t = time.Now()
	}
	r := slog.NewRecord(t, lvl, msg, 0)
	r.Add(attrs...)
	_ = p.log.Handler().Handle(context.Background(), r)
}

// logf logs msg about the file key, an event at t, with its path, once
// read.
func (p *pathLogger) logf(lvl slog.Level, msg, key string, t time.Time, attrs []any) {
	if t.IsZero() {
		t = time.Now()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		select {
		case p.queue <- pathLine{lvl: lvl, msg: msg, key: key, t: t, attrs: attrs}:
			return
		default:
		}
	}
	p.emit(lvl, msg, t, attrs)
}

// close logs the lines still queued and ends the goroutine: it waits up to
// deadline for their paths, then logs the rest without them, and returns
// once every line is logged (or, should a path read not heed its context,
// at deadline plus the larger of deadline and a second: time enough for the
// lines left to be written without their paths on a loaded machine). A
// main process calls it once its loop has returned, so
// that no line (the quarantine of the last file) is lost with the
// process. Later calls do nothing.
func (p *pathLogger) close(deadline time.Duration) {
	p.once.Do(func() {
		p.mu.Lock()
		p.closed = true
		close(p.queue)
		p.mu.Unlock()
		t := time.AfterFunc(deadline, p.rush)
		defer t.Stop()
		defer p.rush()
		select {
		case <-p.done:
		case <-time.After(deadline + max(deadline, time.Second)):
		}
	})
}

// sync waits until every line queued before it is logged (tests).
func (p *pathLogger) sync() {
	done := make(chan struct{})
	p.queue <- pathLine{done: done}
	<-done
}
