package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// fileReader is the store read a pathLogger needs.
type fileReader interface {
	File(ctx context.Context, key string) (store.File, error)
}

// pathLookupTimeout bounds one path read: a line waits at most this long
// for its path, then is logged without it.
const pathLookupTimeout = 2 * time.Second

// pathLogger logs the main process's lines about one file that a person
// must find on disk (a file quarantined, a crash counted against it, a
// claim taken over from a dead owner) with the file's path: the core's
// events name the file by its key, and the main process does not know the
// path. One goroutine reads the paths from the store, off the main loop, in
// the order the lines came, so that a slow or failing store never holds
// the loop up: a read that fails or takes longer than pathLookupTimeout
// logs the line without the path, and a line that finds the queue full is
// logged at once, without it.
type pathLogger struct {
	log   *slog.Logger
	files fileReader
	queue chan pathLine
}

type pathLine struct {
	lvl   slog.Level
	msg   string
	key   string
	attrs []any
	done  chan struct{} // closed once logged; nil: nobody waits (sync)
}

// newPathLogger starts the goroutine that logs the lines; it runs for the
// life of the process (a main process has one).
func newPathLogger(log *slog.Logger, files fileReader) *pathLogger {
	p := &pathLogger{log: log, files: files, queue: make(chan pathLine, 256)}
	go p.run()
	return p
}

func (p *pathLogger) run() {
	for l := range p.queue {
		if l.key == "" {
			close(l.done)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), pathLookupTimeout)
		f, err := p.files.File(ctx, l.key)
		cancel()
		attrs := l.attrs
		if err == nil && f.Path != "" {
			attrs = append([]any{"path", f.Path}, attrs...)
		}
		p.log.Log(context.Background(), l.lvl, l.msg, attrs...)
	}
}

// logf logs msg about the file key with its path, once read.
func (p *pathLogger) logf(lvl slog.Level, msg, key string, attrs []any) {
	select {
	case p.queue <- pathLine{lvl: lvl, msg: msg, key: key, attrs: attrs}:
	default:
		p.log.Log(context.Background(), lvl, msg, attrs...)
	}
}

// sync waits until every line queued before it is logged (tests).
func (p *pathLogger) sync() {
	done := make(chan struct{})
	p.queue <- pathLine{done: done}
	<-done
}
