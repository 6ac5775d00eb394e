// Package drill plays a scenario with real worker processes, the real
// store and real signals (the hidden `nomarr drill`), and writes the same
// JSONL trace as the simulator, so real and simulated behaviour can be
// compared. Supported faults: crash (SIGKILL), hang (SIGSTOP), stop
// (SIGTERM to this process), pause, resume, reset, main: die (SIGKILL of
// this process; its workers remain).
package drill

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/driver"
	"github.com/nomarr/nomarr/sim"
)

// Options says what to play, against which store.
type Options struct {
	Scenario string // the scenario file
	DB       string // sqlite:PATH of the store
	Trace    string // the JSONL trace's path; "" writes none
	StateDir string // the script analyzer's counters; "" is beside the db
	Stderr   io.Writer
}

// Summary is what a drill ends with.
type Summary struct {
	Files         int               `json:"files"`
	Tagged        int               `json:"tagged"`
	Failed        int               `json:"failed"`
	ClaimsLeft    int               `json:"claims_left"`
	FailedWorkers []string          `json:"failed_workers"`
	Status        map[string]string `json:"status"`
}

// UsageError is an error of the drill's input (scenario, store, trace
// path), as opposed to a failure while it plays.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Run plays the scenario until its duration has passed, then returns the
// state of its files and workers.
func Run(o Options) (Summary, error) {
	sc, err := load(o.Scenario)
	if err != nil {
		return Summary{}, &UsageError{err}
	}
	if o.StateDir == "" {
		o.StateDir = filepath.Join(filepath.Dir(strings.TrimPrefix(o.DB, "sqlite:")), "drill-state")
	}
	log := slog.New(slog.NewTextHandler(o.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()
	st, err := app.OpenStore(ctx, o.DB)
	if err != nil {
		return Summary{}, &UsageError{err}
	}
	defer st.Close()
	lib, err := fillLibrary(ctx, st, sc.Library.Files)
	if err != nil {
		return Summary{}, err
	}
	sink, closeTrace, err := traceSink(o.Trace, time.Now())
	if err != nil {
		return Summary{}, &UsageError{err}
	}
	defer closeTrace()
	m, err := newMain(sc, o, st, log, sink)
	if err != nil {
		return Summary{}, &UsageError{err}
	}
	// A stop fault is a SIGTERM to this process, handled as `nomarr serve`
	// handles it: the context that Run watches ends.
	sigCtx, cancel := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer cancel()
	stop := make(chan struct{})
	for _, f := range sc.Faults {
		time.AfterFunc(f.At.D(), func() { playFault(m, f, sink) })
	}
	time.AfterFunc(sc.Duration.D(), func() { close(stop) })
	if err := m.Run(sigCtx, stop); err != nil {
		return Summary{}, err
	}
	return summarize(ctx, st, m, lib), nil
}

// load reads a scenario and checks that real processes can play it.
func load(path string) (*sim.Scenario, error) {
	sc, err := sim.Load(path)
	if err != nil {
		return nil, err
	}
	for _, f := range sc.Faults {
		switch {
		case f.Crash != "", f.Hang != "", f.Stop, f.Pause, f.Resume, f.Reset != "", f.Main != "":
		default:
			return nil, fmt.Errorf("line %d: this fault cannot be played with real processes (crash, hang, stop, pause, resume, reset, main)", f.Line)
		}
	}
	if len(sc.Instances) != 1 {
		return nil, errors.New("one instance only")
	}
	return sc, nil
}

// fillLibrary stores the scenario's n files, all waiting to be tagged.
func fillLibrary(ctx context.Context, st store.Store, n int) ([]store.File, error) {
	lib := make([]store.File, n)
	for i := range lib {
		k := sim.FileKey(i)
		lib[i] = store.File{Key: k, Path: "/music/" + k + ".flac", Size: int64(1000 + i), NeedsTagging: true, IsValid: true}
	}
	if _, err := st.UpsertFiles(ctx, lib); err != nil {
		return nil, err
	}
	return lib, nil
}

// traceSink writes each event as a line of the simulator's trace, times
// counted from start; with no path it drops them. Every line is flushed: a
// SIGKILL of this process must not lose the trace.
func traceSink(path string, start time.Time) (event.Sink, func(), error) {
	if path == "" {
		return event.SinkFunc(func(event.Event) {}), func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	tw := bufio.NewWriter(f)
	var mu sync.Mutex
	sink := event.SinkFunc(func(e event.Event) {
		if e.T.IsZero() {
			e.T = time.Now()
		}
		b, _ := json.Marshal(&sim.Rec{TMs: e.T.Sub(start).Milliseconds(), Event: e})
		mu.Lock()
		defer mu.Unlock()
		tw.Write(append(b, '\n'))
		tw.Flush()
	})
	return sink, func() {
		mu.Lock()
		defer mu.Unlock()
		tw.Flush()
		f.Close()
	}, nil
}

// newMain composes the main loop whose workers run this binary with the
// scenario's script analyzer.
func newMain(sc *sim.Scenario, o Options, st store.Store, log *slog.Logger, sink event.Sink) (*driver.Main, error) {
	cfg, _ := sc.Settings() // validated by Load
	self, argv0, err := app.SelfBinary()
	if err != nil {
		return nil, err
	}
	name := sc.Instances[0]
	instance := fmt.Sprintf("%s:%d", name, os.Getpid())
	app.KeepInherited(log)
	var m *driver.Main
	command := func(component string, gen uint64) (string, []string) { // called once m is running
		return self, []string{"worker", "--component", component, "--worker-id", m.Node.Sup.WorkerID(component), "--node", name}
	}
	m, err = driver.NewMain(app.HoldingName(cfg.Node(instance, name)), st, nil, log, sink, command, o.Stderr)
	if err != nil {
		return nil, err
	}
	m.Spawner.Name = argv0
	m.Spawner.Env = app.WorkerEnvironment(app.WorkerSpec{DB: o.DB, Config: cfg.Values(), Analyzer: "script:" + o.Scenario,
		StateDir: o.StateDir, ModelLoad: sc.ModelLoad()})
	return m, nil
}

// summarize reads back the library's files and the workers' statuses.
func summarize(ctx context.Context, st store.Store, m *driver.Main, lib []store.File) Summary {
	sum := Summary{Status: map[string]string{}}
	for _, f := range lib {
		got, err := st.File(ctx, f.Key)
		if err != nil {
			continue
		}
		sum.Files++
		if got.Tagged {
			sum.Tagged++
		}
		if got.Failed {
			sum.Failed++
		}
	}
	if c, err := st.Counts(ctx); err == nil {
		sum.ClaimsLeft = c.Claimed
	}
	for _, id := range m.Node.Sup.Components() {
		s := string(m.Node.Status(id, time.Now()))
		sum.Status[id] = s
		if s == "failed" {
			sum.FailedWorkers = append(sum.FailedWorkers, id)
		}
	}
	return sum
}

// playFault carries out one fault on the main loop.
func playFault(m *driver.Main, f sim.Fault, sink event.Sink) {
	_ = m.Do(context.Background(), func(ctx context.Context, now time.Time) {
		name, comp := "", ""
		switch {
		case f.Crash != "":
			name, comp = "crash", f.Crash
		case f.Hang != "":
			name, comp = "hang", f.Hang
		case f.Reset != "":
			name, comp = "reset", f.Reset
		case f.Stop:
			name = "stop"
		case f.Pause:
			name = "pause"
		case f.Resume:
			name = "resume"
		case f.Main != "":
			name = "main"
		}
		sink.Emit(event.Event{T: now, Event: event.Fault, Component: comp, Reason: name})
		switch name {
		case "crash", "hang":
			if pid, ok := m.Spawner.PID(comp); ok {
				sig := syscall.SIGKILL
				if name == "hang" {
					sig = syscall.SIGSTOP
				}
				_ = syscall.Kill(pid, sig)
			}
		case "reset":
			_ = m.Node.Reset(ctx, comp, now)
		case "stop":
			_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		case "pause", "resume":
			_ = m.Node.SetEnabled(ctx, name == "resume")
		case "main":
			sink.Emit(event.Event{T: now, Event: event.MainDeath, Reason: "main process died"})
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	})
}
