package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

type pathsByKey map[string]string

func (p pathsByKey) File(_ context.Context, key string) (store.File, error) {
	if path, ok := p[key]; ok {
		return store.File{Key: key, Path: path}, nil
	}
	return store.File{}, store.ErrNotFound
}

// TestFileLinesNameThePath: the main process's lines about a file a
// person must find — quarantined, a crash counted against it, a dead
// owner's claim taken back — name its path (the events carry only its
// key) and are seen at the default level (INFO or WARN); a claim removed
// because its file is no longer work stays at DEBUG.
func TestFileLinesNameThePath(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	paths := newPathLogger(log, pathsByKey{"k1": "/music/a b.flac", "k2": "/music/c.mp3"})
	sink := logSinkWith(log, paths)
	sink.Emit(event.Event{Event: event.Release, Component: "worker:discovery:0", File: "k1", Worker: "n:1:2/worker:discovery:0", Reason: "worker died", Count: 1})
	sink.Emit(event.Event{Event: event.Release, Component: "worker:discovery:0", File: "k1", Worker: "n:1:2/worker:discovery:0", Reason: "worker died", Count: 2})
	sink.Emit(event.Event{Event: event.Quarantined, File: "k1", Reason: "crashed a worker (quarantine_after 2 reached)", Count: 2})
	sink.Emit(event.Event{Event: event.LeaseExpired, File: "k2", Worker: "other:9:9/worker:discovery:1", Reason: node.LeaseExpiredReason, Cause: node.CleanupLeaseExpired})
	sink.Emit(event.Event{Event: event.LeaseExpired, File: "k3", Worker: "other:9:9/worker:discovery:1", Reason: "file no longer work", Cause: node.CleanupNotWork})
	sink.Emit(event.Event{Event: event.Release, Component: "worker:discovery:1", File: "k4", Reason: "worker died"}) // no crash counted
	paths.sync()
	got := buf.String()
	for _, want := range []string{
		`level=INFO msg=release path="/music/a b.flac" component=worker:discovery:0 file=k1 worker=n:1:2/worker:discovery:0 reason="worker died" crashes=1`,
		`level=INFO msg=release path="/music/a b.flac" component=worker:discovery:0 file=k1 worker=n:1:2/worker:discovery:0 reason="worker died" crashes=2`,
		`level=WARN msg=quarantined path="/music/a b.flac" file=k1 reason="crashed a worker (quarantine_after 2 reached)" crashes=2`,
		`level=INFO msg=lease_expired path=/music/c.mp3 file=k2 worker=other:9:9/worker:discovery:1 reason="lease expired"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks\n%s\nin\n%s", want, got)
		}
	}
	if strings.Contains(got, "k3") || strings.Contains(got, "k4") {
		t.Errorf("a claim of a file no longer work, or a release without a crash, logged at INFO:\n%s", got)
	}
	if i, j := strings.Index(got, "crashes=1"), strings.Index(got, "msg=quarantined"); i < 0 || j < i {
		t.Errorf("lines out of order:\n%s", got)
	}
}

// A path that cannot be read leaves the line without it, not unlogged.
func TestFileLineWithoutPath(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	paths := newPathLogger(log, pathsByKey{})
	logSinkWith(log, paths).Emit(event.Event{Event: event.Quarantined, File: "gone", Reason: "crashed a worker (quarantine_after 2 reached)", Count: 2})
	paths.sync()
	if got := buf.String(); !strings.Contains(got, `level=WARN msg=quarantined file=gone reason="crashed a worker (quarantine_after 2 reached)" crashes=2`) {
		t.Errorf("log: %s", got)
	}
}

// slowPaths answers a path read after delay; hang: only once the read's
// context ends, with its error. It counts the reads.
type slowPaths struct {
	delay time.Duration
	hang  bool
	reads atomic.Int32
}

func (s *slowPaths) File(ctx context.Context, key string) (store.File, error) {
	s.reads.Add(1)
	if s.hang {
		<-ctx.Done()
		return store.File{}, ctx.Err()
	}
	time.Sleep(s.delay)
	return store.File{Key: key, Path: "/music/" + key + ".flac"}, nil
}

// A file line carries the time of its event, not that of the path read
// that came after it.
func TestFileLineAtItsEventTime(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	paths := newPathLogger(log, &slowPaths{delay: 10 * time.Millisecond})
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	logSinkWith(log, paths).Emit(event.Event{T: at, Event: event.Quarantined, File: "k1", Reason: "crashed a worker 2 times (quarantine_after)", Count: 2})
	paths.sync()
	if want := `time=2026-03-01T12:00:00.000Z level=WARN msg=quarantined path=/music/k1.flac file=k1`; !strings.Contains(buf.String(), want) {
		t.Errorf("log lacks\n%s\nin\n%s", want, buf.String())
	}
}

// TestPathLoggerCloseDrains: close, which a main process calls once its
// loop has returned, logs every line still queued (the quarantine of the
// last file is not lost with the process): with their paths while the
// store answers within the deadline, and without them once it has passed;
// a line given after close is logged at once.
func TestPathLoggerCloseDrains(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	paths := newPathLogger(log, &slowPaths{delay: 20 * time.Millisecond})
	sink := logSinkWith(log, paths)
	for _, k := range []string{"a", "b", "c"} {
		sink.Emit(event.Event{Event: event.Quarantined, File: k, Reason: "crashed a worker 2 times (quarantine_after)", Count: 2})
	}
	paths.close(pathDrainTimeout)
	for _, k := range []string{"a", "b", "c"} {
		if want := "msg=quarantined path=/music/" + k + ".flac file=" + k; !strings.Contains(buf.String(), want) {
			t.Errorf("after close, the log lacks\n%s\nin\n%s", want, buf.String())
		}
	}

	buf = syncbuf.Buffer{}
	hung := &slowPaths{hang: true}
	paths = newPathLoggerWith(log, hung, time.Hour, 0) // no pause: every line would wait out its read
	sink = logSinkWith(log, paths)
	for _, k := range []string{"d", "e", "f"} {
		sink.Emit(event.Event{Event: event.Quarantined, File: k, Reason: "crashed a worker 2 times (quarantine_after)", Count: 2})
	}
	start := time.Now()
	paths.close(50 * time.Millisecond)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("close waited %s for a store that does not answer, past its deadline", d)
	}
	sink.Emit(event.Event{Event: event.Quarantined, File: "g", Reason: "crashed a worker 2 times (quarantine_after)", Count: 2})
	for _, k := range []string{"d", "e", "f", "g"} {
		if want := "msg=quarantined file=" + k; !strings.Contains(buf.String(), want) {
			t.Errorf("the log lacks\n%s\nin\n%s", want, buf.String())
		}
	}
}

// After a path read that failed, the lines of the next pause are logged
// without a path and without a read: a store that is down does not hold
// each of them up for the read's timeout. A file the store no longer has
// is an answer, not a failure.
func TestPathLookupPausesAfterAFailure(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	hung := &slowPaths{hang: true}
	paths := newPathLoggerWith(log, hung, 20*time.Millisecond, time.Hour)
	sink := logSinkWith(log, paths)
	for _, k := range []string{"a", "b", "c"} {
		sink.Emit(event.Event{Event: event.Quarantined, File: k, Reason: "crashed a worker 2 times (quarantine_after)", Count: 2})
	}
	paths.sync()
	if n := hung.reads.Load(); n != 1 || strings.Count(buf.String(), "msg=quarantined") != 3 {
		t.Errorf("%d path reads for 3 lines while the store does not answer, want 1; log:\n%s", n, buf.String())
	}
	paths.close(pathDrainTimeout)

	buf = syncbuf.Buffer{}
	paths = newPathLoggerWith(log, pathsByKey{"k2": "/music/c.mp3"}, 20*time.Millisecond, time.Hour)
	sink = logSinkWith(log, paths)
	sink.Emit(event.Event{Event: event.Quarantined, File: "gone", Reason: "r", Count: 2})
	sink.Emit(event.Event{Event: event.Quarantined, File: "k2", Reason: "r", Count: 2})
	paths.close(pathDrainTimeout)
	if !strings.Contains(buf.String(), "path=/music/c.mp3 file=k2") {
		t.Errorf("a file the store no longer has paused the path reads:\n%s", buf.String())
	}
}

// TestServingLineSaysWhatRuns: the `serving` line names the analyzer, the
// model set's version, the library and the write mode (and, for musicnn,
// the models' folder).
func TestServingLineSaysWhatRuns(t *testing.T) {
	s := testSettings(t, "--data-dir", t.TempDir(), "--analyzer", "noop", "--library-root", "/srv/music", "--write-mode", "none", "--node", "n1")
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("serving", servingAttrs(s, "127.0.0.1:8356")...)
	for _, want := range []string{"http=127.0.0.1:8356", "node=n1", "analyzer=noop", "model_set=", "library_root=/srv/music", "write_mode=none"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("serving line lacks %s: %s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "model_set=unknown") || strings.Contains(buf.String(), "models_dir") {
		t.Errorf("serving line with noop: %s", buf.String())
	}
}

// TestCleanStopNotLoggedAsUnhealthy: during a graceful stop, a worker's
// clean exit (code 0) makes the owner report it unhealthy (dead); the log
// does not show that as an INFO healthy → unhealthy. A death outside a
// stop, or a non-zero exit during one, still is.
func TestCleanStopNotLoggedAsUnhealthy(t *testing.T) {
	var buf bytes.Buffer
	sink := LogSink(slog.New(slog.NewTextHandler(&buf, nil)))
	sink.Emit(event.Event{Event: event.Exit, Component: "worker:discovery:0", Code: event.IntPtr(0), Reason: "exited with code 0"})
	sink.Emit(event.Event{Event: event.Status, Component: "worker:discovery:0", From: "healthy", To: "unhealthy"})
	sink.Emit(event.Event{Event: event.Stop, Reason: "signal"})
	sink.Emit(event.Event{Event: event.Exit, Component: "worker:discovery:0", Code: event.IntPtr(0), Reason: "exited with code 0"})
	sink.Emit(event.Event{Event: event.Exit, Component: "worker:discovery:1", Code: event.IntPtr(1), Reason: "exited with code 1"})
	sink.Emit(event.Event{Event: event.Status, Component: "worker:discovery:0", From: "healthy", To: "unhealthy"})
	sink.Emit(event.Event{Event: event.Status, Component: "worker:discovery:1", From: "healthy", To: "unhealthy"})
	got := buf.String()
	if n := strings.Count(got, "msg=status component=worker:discovery:0"); n != 1 {
		t.Errorf("worker 0's status changes logged %d times, want once (the death before the stop):\n%s", n, got)
	}
	if !strings.Contains(got, "msg=status component=worker:discovery:1 from=healthy to=unhealthy") {
		t.Errorf("a non-zero exit during the stop is not logged as unhealthy:\n%s", got)
	}
	if n := strings.Count(got, "level=INFO msg=exit"); n != 3 {
		t.Errorf("exit lines %d, want 3:\n%s", n, got)
	}
}

// deafPaths is a store whose path read ignores its context: it answers
// only once release is closed.
type deafPaths struct{ release chan struct{} }

func (d deafPaths) File(ctx context.Context, key string) (store.File, error) {
	<-d.release
	return store.File{}, errors.New("late")
}

// A path read that does not heed its context holds close up only for its
// bound (deadline plus a second here), not for as long as the read takes:
// a main process still exits.
func TestPathLoggerCloseBoundedByADeafRead(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	deaf := deafPaths{release: make(chan struct{})}
	defer close(deaf.release)
	paths := newPathLoggerWith(log, deaf, time.Hour, 0)
	logSinkWith(log, paths).Emit(event.Event{Event: event.Quarantined, File: "a", Reason: "r", Count: 2})
	start := time.Now()
	paths.close(50 * time.Millisecond)
	if d := time.Since(start); d < time.Second || d > 10*time.Second {
		t.Errorf("close returned after %s behind a read that ignores its context, want its bound (50ms + 1s)", d)
	}
}
