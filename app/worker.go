package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nomarr/nomarr/adapters/analyzer"
	"github.com/nomarr/nomarr/adapters/inference"
	"github.com/nomarr/nomarr/adapters/process"
	"github.com/nomarr/nomarr/config"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/core/worker"
	"github.com/nomarr/nomarr/driver"
)

// WorkerEnv carries a worker's whole specification from its main process.
const WorkerEnv = "NOMARR_WORKER"

// WorkerSpec is what a main process tells all its worker processes; each
// one's component and worker id come as arguments.
type WorkerSpec struct {
	DB        string            `json:"db"`
	Config    map[string]string `json:"config"`
	Analyzer  string            `json:"analyzer"` // noop | script:SCENARIO
	StateDir  string            `json:"state_dir,omitempty"`
	ModelLoad time.Duration     `json:"model_load,omitempty"`
	LogLevel  string            `json:"log_level,omitempty"` // the main process's; "" is info
	// For the musicnn analyzer.
	ModelsDir string `json:"models_dir,omitempty"`
	OrtLib    string `json:"onnxruntime_lib,omitempty"`
	WriteMode string `json:"write_mode,omitempty"`
	// Tags are the tag-derivation options (Settings.WorkerTagOptions);
	// nil: tags.DefaultOptions.
	Tags      *tags.Options `json:"tags,omitempty"`
	Reuse     bool          `json:"reuse_file_tags,omitempty"`
	Threads   int           `json:"ort_threads,omitempty"`
	BatchSize int           `json:"batch_size,omitempty"`
	CPUArena  bool          `json:"ort_cpu_arena,omitempty"`
	UseGPU    bool          `json:"gpu,omitempty"`
	// Jobs is the work the workers take: "" every kind their analyzer
	// does (tagging, then retags, then vectors of its model set),
	// JobsRetag retags only (`nomarr retag`).
	Jobs string `json:"jobs,omitempty"`
}

// JobsRetag is WorkerSpec.Jobs of a run that only retags.
const JobsRetag = "retag"

// ScriptAnalyzer builds the drills' script analyzer (analyzer
// script:SCENARIO) with its state directory; the application does not
// know the simulator, so the command that has it passes it in.
type ScriptAnalyzer func(scenario, stateDir string) (worker.Analyzer, error)

// WorkerArgs are a worker process's arguments from its main process.
type WorkerArgs struct {
	Component, WorkerID, Node string
	Script                    ScriptAnalyzer // nil: script:SCENARIO is refused
}

// RunWorker runs a worker process, started by a main process with the
// frame pipe on fd 3, the control pipe on fd 4 and its specification in
// WorkerEnv; it logs to logTo. err is why it could not start (the caller
// exits 2); otherwise code is the worker's exit code.
func RunWorker(a WorkerArgs, logTo io.Writer) (code int, err error) {
	var spec WorkerSpec
	if err := json.Unmarshal([]byte(os.Getenv(WorkerEnv)), &spec); err != nil {
		return 0, fmt.Errorf("%s is missing or invalid (a worker is started by its main process): %v", WorkerEnv, err)
	}
	var level slog.Level // info unless the main process says otherwise
	if spec.LogLevel != "" {
		if err := level.UnmarshalText([]byte(spec.LogLevel)); err != nil {
			return 0, fmt.Errorf("log_level: %v", err)
		}
	}
	log := slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: level})).
		With("component", a.Component, "pid", os.Getpid())
	// Started through /proc/self/exe, the worker would show as `exe` in ps
	// and top: it takes its binary's name, as its main process has.
	if name, err := process.ExecutableName(); err == nil {
		if err := process.NameSelf(name); err != nil {
			log.Debug("worker: naming the process", "err", err)
		}
	}
	cfg, err := config.FromValues(spec.Config)
	if err != nil {
		return 0, err
	}
	frames, control, err := process.ChildPipes()
	if err != nil {
		return 0, err
	}
	termed := workerSignals()
	// An unreachable store is service_down for the worker (back off, keep
	// framing), never a reason to exit and crash-loop.
	st := LazyStore(spec.DB)
	defer st.Close()
	an, err := newAnalyzer(spec, a.Script, log)
	if err != nil {
		return 0, err
	}
	wcfg := cfg.Worker(a.Component, a.WorkerID, a.Node, os.Getpid())
	var models worker.Models = &analyzer.Models{LoadTime: spec.ModelLoad}
	if m, ok := an.(*analyzer.MusiCNN); ok {
		models = m.Models
		// The analyzer re-derives stored tags (retags) and makes the
		// vectors of its model set (a backfill) as well as tagging.
		m.StoredTags = st.FileTags
		wcfg.Retag = true
		if spec.Jobs == JobsRetag {
			wcfg.SkipTagging = true
		} else {
			wcfg.VectorModelSet = m.Models.Version()
		}
	}
	w, err := worker.New(wcfg, st, workerLogSink(log))
	if err != nil {
		return 0, err
	}
	return driver.RunWorker(context.Background(), w, an, models,
		driver.WorkerIO{Frames: frames, Control: control, Term: termed}, nil, cfg.FrameInterval, log), nil
}

// workerSignals returns a channel closed at the first SIGTERM: a graceful
// stop. SIGINT (a terminal's Ctrl-C) is the main process's business:
// workers live in their own process group. That group is a background one
// on the main process's terminal, so a log line with the terminal's
// `tostop` set would stop the worker with SIGTTOU (and the owner would kill
// it as hung); ignored, the write goes through.
func workerSignals() <-chan struct{} {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	signal.Ignore(syscall.SIGINT, syscall.SIGPIPE, syscall.SIGTTOU)
	termed := make(chan struct{})
	go func() { <-term; close(termed) }()
	return termed
}

// workerLogSink logs a worker's events. Its log reaches the main
// process's stderr: a file's failure (WARN) and its retry (INFO) are seen
// at the default level, with the file's path and the reason, and so are
// its failed model loads (WARN) and its store errors (WARN, each
// operation's at most once per 30 s, as the main process logs its own);
// the other events are DEBUG (the main
// process logs the workers' lives).
func workerLogSink(log *slog.Logger) event.Sink {
	var mu sync.Mutex
	quiet := storeErrorQuiet{}
	return event.SinkFunc(func(e event.Event) {
		lvl := slog.LevelDebug
		attrs := []any{}
		switch e.Event {
		case event.FileFailed, event.FileRetry, event.ModelLoadFailed:
			lvl = eventLevel(e.Event)
		case event.StoreError: // the worker's own store trouble (it may be the only one to have it)
			lvl = slog.LevelWarn
			mu.Lock()
			n, show := quiet.admit(e)
			mu.Unlock()
			if !show {
				return
			}
			if n > 0 {
				attrs = append(attrs, "suppressed", n)
			}
		}
		if e.Path != "" {
			attrs = append(attrs, "path", e.Path)
		}
		if e.Reason != "" {
			attrs = append(attrs, "reason", e.Reason)
		}
		attrs = append(attrs, "file", e.File)
		log.Log(context.Background(), lvl, e.Event, attrs...)
	})
}

func newAnalyzer(spec WorkerSpec, script ScriptAnalyzer, log *slog.Logger) (worker.Analyzer, error) {
	switch {
	case spec.Analyzer == "" || spec.Analyzer == "noop":
		return analyzer.Noop{}, nil
	case strings.HasPrefix(spec.Analyzer, "script:") && script != nil:
		return script(strings.TrimPrefix(spec.Analyzer, "script:"), spec.StateDir)
	case spec.Analyzer == "musicnn":
		if err := inference.Init(spec.OrtLib); err != nil {
			return nil, err
		}
		models := inference.New(inference.Config{LibraryPath: spec.OrtLib, ModelsDir: spec.ModelsDir, Threads: spec.Threads,
			BatchSize: spec.BatchSize, CPUArena: spec.CPUArena, UseCUDA: spec.UseGPU})
		opt := tags.DefaultOptions()
		if spec.Tags != nil {
			opt = *spec.Tags
		}
		if err := opt.Validate(); err != nil {
			return nil, fmt.Errorf("analyzer: %w", err)
		}
		return &analyzer.MusiCNN{Models: models, Tags: opt, WriteMode: spec.WriteMode, ReuseFileTags: spec.Reuse, Log: log}, nil
	}
	return nil, fmt.Errorf("analyzer: unknown analyzer %q (musicnn, noop, script:SCENARIO)", spec.Analyzer)
}

// WorkerEnvironment returns the environment of worker processes.
func WorkerEnvironment(spec WorkerSpec) []string {
	b, _ := json.Marshal(spec)
	return append(os.Environ(), WorkerEnv+"="+string(b))
}
