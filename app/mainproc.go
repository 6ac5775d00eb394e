package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nomarr/nomarr/adapters/process"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/driver"
)

// KeepInherited keeps the descriptors this process inherited from its
// children (process.KeepInheritedFromChildren). Every main process (serve
// and tag through newMain, drill) calls it before it builds its spawner,
// so before any worker or probe is spawned. Where they cannot be listed,
// that is a warning, not a reason not to run.
func KeepInherited(log *slog.Logger) {
	if err := process.KeepInheritedFromChildren(); err != nil {
		log.Warn("inherited file descriptors may pass into the workers", "err", err)
	}
}

// newMain builds the main process for the settings: store, node, spawner.
func newMain(s *Settings, st Store, log *slog.Logger, sink event.Sink) (*driver.Main, error) {
	return newMainFor(s, st, log, sink, "")
}

// newMainFor is newMain whose workers take the work jobs names
// (WorkerSpec.Jobs).
func newMainFor(s *Settings, st Store, log *slog.Logger, sink event.Sink, jobs string) (*driver.Main, error) {
	KeepInherited(log)
	self, name, err := SelfBinary()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	opt, err := s.WorkerTagOptions(ctx, st, "", log)
	if err != nil {
		return nil, err
	}
	instance := fmt.Sprintf("%s:%d:%d", s.Get("node"), os.Getpid(), time.Now().UnixMilli())
	var m *driver.Main
	command := func(component string, gen uint64) (string, []string) { // called once m is running
		return self, []string{"worker", "--component", component, "--worker-id", m.Node.Sup.WorkerID(component), "--node", s.Get("node")}
	}
	m, err = driver.NewMain(HoldingName(s.Core.Node(instance, s.Get("node"))), st, nil, log, sink, command, os.Stderr)
	if err != nil {
		return nil, err
	}
	threads, _ := strconv.Atoi(s.Get("ort_threads"))
	batch, _ := strconv.Atoi(s.Get("batch_size"))
	arena, _ := strconv.ParseBool(s.Get("ort_cpu_arena"))
	reuse, _ := strconv.ParseBool(s.Get("reuse_file_tags"))
	m.Spawner.Name = name
	m.Spawner.Env = WorkerEnvironment(WorkerSpec{DB: s.Get("db"), Config: s.Core.Values(), Analyzer: s.Get("analyzer"),
		StateDir: filepath.Join(s.Get("data_dir"), "analyzer-state"), ModelsDir: s.Get("models_dir"),
		OrtLib: s.Get("onnxruntime_lib"), WriteMode: s.Get("write_mode"), Tags: &opt, Reuse: reuse, Threads: threads, BatchSize: batch, CPUArena: arena, UseGPU: s.Core.GPU,
		LogLevel: s.Get("log_level"), Jobs: jobs})
	return m, nil
}

// HoldingName gives a main process's node config what the hold on its node
// name needs from the operating system: who this process is, and whether
// another holder still runs.
func HoldingName(cfg node.Config) node.Config {
	cfg.Self, cfg.Liveness = process.Self(), process.Liveness
	return cfg
}

// SelfBinary is the binary that workers run: the one this process runs,
// through /proc/self/exe where there is one, so that a binary replaced or
// deleted on disk while the main process runs (an upgrade) does not give it
// workers of another version; name is its path, for the workers' argv[0]
// (the kernel names a process started so `exe`: each worker renames itself
// after the binary, process.NameSelf).
func SelfBinary() (path, name string, err error) {
	name, err = os.Executable()
	if err != nil {
		return "", "", fmt.Errorf("finding the nomarr binary: %w", err)
	}
	if _, err := os.Stat(procSelfExe); err == nil {
		return procSelfExe, name, nil
	}
	return name, name, nil
}

const procSelfExe = "/proc/self/exe"
