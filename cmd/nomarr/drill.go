package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/driver"
	"github.com/nomarr/nomarr/sim"
)

// drillSummary is what `nomarr drill` prints at the end, as JSON.
type drillSummary struct {
	Files         int               `json:"files"`
	Tagged        int               `json:"tagged"`
	Failed        int               `json:"failed"`
	ClaimsLeft    int               `json:"claims_left"`
	FailedWorkers []string          `json:"failed_workers"`
	Status        map[string]string `json:"status"`
}

// runDrill implements the hidden `nomarr drill SCENARIO --db PATH --trace
// FILE`: it plays a scenario with real worker processes, the real store and
// real signals, and writes the same JSONL trace as the simulator, so real and
// simulated behaviour can be compared. Supported faults: crash (SIGKILL),
// hang (SIGSTOP), stop (SIGTERM to this process), pause, resume, reset,
// main: die (SIGKILL of this process; its workers remain).
func runDrill(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("drill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", "", "sqlite:PATH of the store (required)")
	tracePath := fs.String("trace", "", "write the JSONL trace here")
	stateDir := fs.String("state", "", "directory for the script analyzer's counters (default: beside the db)")
	var files []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		args = fs.Args()
		if len(args) > 0 {
			files, args = append(files, args[0]), args[1:]
		}
	}
	if len(files) != 1 || *db == "" {
		fmt.Fprintln(stderr, "usage: nomarr drill SCENARIO --db sqlite:PATH [--trace FILE]")
		return 2
	}
	sc, err := sim.Load(files[0])
	if err != nil {
		fmt.Fprintln(stderr, "nomarr drill:", err)
		return 2
	}
	for _, f := range sc.Faults {
		switch {
		case f.Crash != "", f.Hang != "", f.Stop, f.Pause, f.Resume, f.Reset != "", f.Main != "":
		default:
			fmt.Fprintf(stderr, "nomarr drill: line %d: this fault cannot be played with real processes (crash, hang, stop, pause, resume, reset, main)\n", f.Line)
			return 2
		}
	}
	if len(sc.Instances) != 1 {
		fmt.Fprintln(stderr, "nomarr drill: one instance only")
		return 2
	}
	cfg, _ := sc.Settings() // validated by Load
	if *stateDir == "" {
		*stateDir = filepath.Join(filepath.Dir(trimScheme(*db)), "drill-state")
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := app.OpenStore(context.Background(), *db)
	if err != nil {
		fmt.Fprintln(stderr, "nomarr drill:", err)
		return 2
	}
	defer st.Close()
	ctx := context.Background()
	lib := make([]store.File, sc.Library.Files)
	for i := range lib {
		k := sim.FileKey(i)
		lib[i] = store.File{Key: k, Path: "/music/" + k + ".flac", Size: int64(1000 + i), NeedsTagging: true, IsValid: true}
	}
	if _, err := st.UpsertFiles(ctx, lib); err != nil {
		fmt.Fprintln(stderr, "nomarr drill:", err)
		return 1
	}

	start := time.Now()
	var tw *bufio.Writer
	var tmu sync.Mutex
	if *tracePath != "" {
		f, err := os.Create(*tracePath)
		if err != nil {
			fmt.Fprintln(stderr, "nomarr drill:", err)
			return 2
		}
		defer f.Close()
		tw = bufio.NewWriter(f)
		defer tw.Flush()
	}
	sink := event.SinkFunc(func(e event.Event) {
		if tw == nil {
			return
		}
		if e.T.IsZero() {
			e.T = time.Now()
		}
		b, _ := json.Marshal(&sim.Rec{TMs: e.T.Sub(start).Milliseconds(), Event: e})
		tmu.Lock()
		tw.Write(append(b, '\n'))
		tw.Flush() // a SIGKILL of this process must not lose the trace
		tmu.Unlock()
	})
	self, argv0, err := app.SelfBinary()
	if err != nil {
		fmt.Fprintln(stderr, "nomarr drill:", err)
		return 2
	}
	name := sc.Instances[0]
	instance := fmt.Sprintf("%s:%d", name, os.Getpid())
	values := cfg.Values()
	app.KeepInherited(log)
	var m *driver.Main
	command := func(component string, gen uint64) (string, []string) { // called once m is running
		return self, []string{"worker", "--component", component, "--worker-id", m.Node.Sup.WorkerID(component), "--node", name}
	}
	m, err = driver.NewMain(app.HoldingName(cfg.Node(instance, name)), st, nil, log, sink, command, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "nomarr drill:", err)
		return 2
	}
	m.Spawner.Name = argv0
	m.Spawner.Env = app.WorkerEnvironment(app.WorkerSpec{DB: *db, Config: values, Analyzer: "script:" + files[0],
		StateDir: *stateDir, ModelLoad: sc.ModelLoad()})

	// A stop fault is a SIGTERM to this process, handled as `nomarr serve`
	// handles it: the context that Run watches ends.
	sigCtx, cancel := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer cancel()
	stop := make(chan struct{})
	for _, f := range sc.Faults {
		f := f
		time.AfterFunc(f.At.D(), func() { drillFault(m, f, sink) })
	}
	time.AfterFunc(sc.Duration.D(), func() { close(stop) })
	if err := m.Run(sigCtx, stop); err != nil {
		fmt.Fprintln(stderr, "nomarr drill:", err)
		return 1
	}
	sum := drillSummary{Status: map[string]string{}}
	for _, f := range mustFiles(st, lib) {
		sum.Files++
		if f.Tagged {
			sum.Tagged++
		}
		if f.Failed {
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
	_ = json.NewEncoder(stdout).Encode(sum)
	return 0
}

func mustFiles(st store.Store, lib []store.File) []store.File {
	out := make([]store.File, 0, len(lib))
	for _, f := range lib {
		if got, err := st.File(context.Background(), f.Key); err == nil {
			out = append(out, got)
		}
	}
	return out
}

// drillFault carries out one fault on the main loop.
func drillFault(m *driver.Main, f sim.Fault, sink event.Sink) {
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

func trimScheme(db string) string {
	if len(db) > 7 && db[:7] == "sqlite:" {
		return db[7:]
	}
	return db
}
