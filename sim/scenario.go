package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/nomarr/nomarr/core/worker"

	"github.com/nomarr/nomarr/config"
)

// Scenario is one scenario file (docs/design.md §12): a library, a configuration, a
// schedule of faults and the assertions checked after the run.
type Scenario struct {
	Name      string         `yaml:"name"`
	Seed      uint64         `yaml:"seed"`
	Duration  Duration       `yaml:"duration"`
	Config    map[string]any `yaml:"config"`
	Instances []string       `yaml:"instances"` // main processes sharing the store; default ["a"]
	Library   Library        `yaml:"library"`
	Faults    []Fault        `yaml:"faults"`
	Expect    *Expect        `yaml:"expect"`
}

// Library describes the synthetic library f0000..f(N-1).
type Library struct {
	Files     int                 `yaml:"files"`
	JobTime   Duration            `yaml:"job_time"`   // default 20 s
	ModelLoad Duration            `yaml:"model_load"` // lazy model load time; default 2 s
	BootTime  Duration            `yaml:"boot_time"`  // process start to first frame; default 100 ms
	Overrides map[string]FileSpec `yaml:"overrides"`
}

// FileSpec overrides one file's behaviour in the fake analyzer.
type FileSpec struct {
	JobTime   *Duration `yaml:"job_time"`
	Poison    bool      `yaml:"poison"`     // crashes the worker half-way through the job
	Stall     bool      `yaml:"stall"`      // the job stops making progress and never ends
	Error     string    `yaml:"error"`      // permanent | missing | transient | service_down
	FailTimes int       `yaml:"fail_times"` // the error happens this many times, then the job succeeds (0: always)
}

// Fault is one scheduled event. Exactly one action key is set.
type Fault struct {
	Line int `yaml:"-"`

	At       Duration `yaml:"at"`
	For      Duration `yaml:"for"`
	Instance string   `yaml:"instance"` // which main process (default: the first)

	Crash        string  `yaml:"crash"`         // component: SIGKILL the worker
	Hang         string  `yaml:"hang"`          // component: SIGSTOP the worker
	HoldsLock    bool    `yaml:"holds_lock"`    // with hang: it stopped inside a write transaction (storelock.go)
	GPU          string  `yaml:"gpu"`           // down
	Store        string  `yaml:"store"`         // down | slow
	ErrorRate    float64 `yaml:"error_rate"`    // store operations fail with this probability
	LostReplies  float64 `yaml:"lost_replies"`  // store writes are made, then answered with a fault, with this probability (lostreply.go)
	Partition    bool    `yaml:"partition"`     // the instance's host cannot reach the store (partition.go)
	Main         string  `yaml:"main"`          // die: the main process dies, workers remain; hang: it stops (SIGSTOP) for `for`, workers run on
	KillInstance bool    `yaml:"kill_instance"` // SIGKILL the main process and all its workers
	RestartMain  bool    `yaml:"restart_main"`  // kill the process tree, start a new main after `for` (default 1 s)
	Stop         bool    `yaml:"stop"`          // graceful stop (SIGTERM to the main process)
	ForceStop    bool    `yaml:"force_stop"`    // a second stop signal: the stop no longer waits (core/supervisor/forcestop.go)
	Pause        bool    `yaml:"pause"`
	Resume       bool    `yaml:"resume"`
	Reset        string  `yaml:"reset"`  // component: manual reset
	Inject       string  `yaml:"inject"` // component: write a bad frame on its pipe
	Frame        string  `yaml:"frame"`  // garbage | oversized | spoofed | bad_json | missing_field
}

// Duration is a time.Duration written as "30s", "15m", "1h30m".
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML parses a duration string and names the line on error.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 30s or 5m", n.Line)
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: invalid duration %q (want e.g. 30s, 5m, 1h30m)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as text.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

var faultKeys = []string{"at", "for", "instance", "crash", "hang", "holds_lock", "gpu", "store", "error_rate", "lost_replies", "partition", "main", "kill_instance",
	"restart_main", "stop", "force_stop", "pause", "resume", "reset", "inject", "frame"}

// UnmarshalYAML decodes a fault strictly, keeping its line.
func (f *Fault) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "fault", faultKeys); err != nil {
		return err
	}
	type plain Fault
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*f = Fault(p)
	f.Line = n.Line
	return nil
}

var fileKeys = []string{"job_time", "poison", "stall", "error", "fail_times"}

// UnmarshalYAML decodes a file override strictly.
func (s *FileSpec) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "override", fileKeys); err != nil {
		return err
	}
	type plain FileSpec
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*s = FileSpec(p)
	return nil
}

func checkKeys(n *yaml.Node, what string, allowed []string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: %s must be a mapping", n.Line, what)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(allowed, k.Value) {
			return fmt.Errorf("line %d: unknown %s field %q (known: %s)", k.Line, what, k.Value, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// action names the fault's action and reports how many are set.
func (f *Fault) action() (string, int) {
	var acts []string
	add := func(set bool, name string) {
		if set {
			acts = append(acts, name)
		}
	}
	add(f.Crash != "", "crash")
	add(f.Hang != "", "hang")
	add(f.GPU != "", "gpu")
	add(f.Store != "", "store")
	add(f.ErrorRate != 0, "error_rate")
	add(f.LostReplies != 0, "lost_replies")
	add(f.Partition, "partition")
	add(f.Main != "", "main")
	add(f.KillInstance, "kill_instance")
	add(f.RestartMain, "restart_main")
	add(f.Stop, "stop")
	add(f.ForceStop, "force_stop")
	add(f.Pause, "pause")
	add(f.Resume, "resume")
	add(f.Reset != "", "reset")
	add(f.Inject != "", "inject")
	if len(acts) == 0 {
		return "", 0
	}
	return acts[0], len(acts)
}

// MaxFiles bounds a scenario's library.
const MaxFiles = 1_000_000

// Parse reads a scenario from YAML or JSON and validates it. Errors name the
// line or the field.
func Parse(data []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var sc Scenario
	if err := dec.Decode(&sc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("scenario: empty document")
		}
		return nil, fmt.Errorf("scenario: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("scenario: line %d: a second YAML document; a scenario file holds one", extra.Line)
	}
	if err := sc.validate(); err != nil {
		return nil, err
	}
	return &sc, nil
}

// Load reads and parses a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	sc, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sc, nil
}

func (sc *Scenario) validate() error {
	if sc.Name == "" {
		return fmt.Errorf("scenario: field name is required")
	}
	if sc.Duration <= 0 {
		return fmt.Errorf("scenario: field duration is required and must be > 0")
	}
	if sc.Duration.D() > 400*24*time.Hour {
		return fmt.Errorf("scenario: duration %s is longer than 400 days", sc.Duration.D())
	}
	if sc.Library.Files < 0 || sc.Library.Files > MaxFiles {
		return fmt.Errorf("scenario: library.files must be in [0, %d], got %d", MaxFiles, sc.Library.Files)
	}
	if _, err := sc.Settings(); err != nil {
		return fmt.Errorf("scenario: %w", err)
	}
	if len(sc.Instances) == 0 {
		sc.Instances = []string{"a"}
	}
	seen := map[string]bool{}
	for _, in := range sc.Instances {
		if in == "" || strings.ContainsAny(in, "/:# ") || seen[in] {
			return fmt.Errorf("scenario: instances: invalid or duplicate name %q", in)
		}
		seen[in] = true
	}
	keys := make([]string, 0, len(sc.Library.Overrides))
	for k := range sc.Library.Overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o := sc.Library.Overrides[k]
		switch o.Error {
		case "", "permanent", "missing", "transient", "service_down":
		default:
			return fmt.Errorf("scenario: library.overrides.%s.error: want permanent, missing, transient or service_down, got %q", k, o.Error)
		}
		if o.FailTimes < 0 {
			return fmt.Errorf("scenario: library.overrides.%s.fail_times must be >= 0", k)
		}
	}
	workers := sc.workerCount()
	for i := range sc.Faults {
		f := &sc.Faults[i]
		name, n := f.action()
		if n != 1 {
			return fmt.Errorf("scenario: line %d: a fault needs exactly one action (crash, hang, gpu, store, error_rate, lost_replies, partition, main, kill_instance, restart_main, stop, force_stop, pause, resume, reset, inject), found %d", f.Line, n)
		}
		if f.At.D() > sc.Duration.D() {
			return fmt.Errorf("scenario: line %d: fault at %s is after the end (%s)", f.Line, f.At.D(), sc.Duration.D())
		}
		if f.Instance != "" && !seen[f.Instance] {
			return fmt.Errorf("scenario: line %d: unknown instance %q", f.Line, f.Instance)
		}
		for _, comp := range []string{f.Crash, f.Hang, f.Reset, f.Inject} {
			if comp != "" && !validComponent(comp, workers) {
				return fmt.Errorf("scenario: line %d: unknown component %q (workers are worker:discovery:0..%d)", f.Line, comp, workers-1)
			}
		}
		if f.HoldsLock && name != "hang" {
			return fmt.Errorf("scenario: line %d: holds_lock goes with hang", f.Line)
		}
		switch name {
		case "gpu":
			if f.GPU != "down" {
				return fmt.Errorf("scenario: line %d: gpu: want down, got %q", f.Line, f.GPU)
			}
		case "store":
			if f.Store != "down" && f.Store != "slow" {
				return fmt.Errorf("scenario: line %d: store: want down or slow, got %q", f.Line, f.Store)
			}
		case "error_rate":
			if !(f.ErrorRate >= 0 && f.ErrorRate <= 1) { // also rejects NaN
				return fmt.Errorf("scenario: line %d: error_rate must be in [0, 1]", f.Line)
			}
		case "lost_replies":
			if !(f.LostReplies >= 0 && f.LostReplies <= 1) {
				return fmt.Errorf("scenario: line %d: lost_replies must be in [0, 1]", f.Line)
			}
		case "main":
			if f.Main != "die" && f.Main != "hang" {
				return fmt.Errorf("scenario: line %d: main: want die or hang, got %q", f.Line, f.Main)
			}
			if f.Main == "hang" && f.For <= 0 {
				return fmt.Errorf("scenario: line %d: main: hang needs a positive `for` (how long the main process stays stopped)", f.Line)
			}
		case "inject":
			switch f.Frame {
			case "garbage", "oversized", "spoofed", "bad_json", "missing_field":
			default:
				return fmt.Errorf("scenario: line %d: frame: want garbage, oversized, spoofed, bad_json or missing_field, got %q", f.Line, f.Frame)
			}
		}
	}
	if sc.Expect != nil {
		if err := sc.Expect.validate(workers); err != nil {
			return fmt.Errorf("scenario: expect: %w", err)
		}
	}
	return nil
}

func (sc *Scenario) workerCount() int {
	c, err := sc.Settings()
	if err != nil {
		return 0
	}
	return c.Workers
}

func validComponent(id string, workers int) bool {
	n, ok := strings.CutPrefix(id, "worker:discovery:")
	if !ok {
		return false
	}
	i, err := strconv.Atoi(n)
	return err == nil && i >= 0 && i < workers && strconv.Itoa(i) == n
}

// Settings returns the production configuration with the scenario's
// overrides applied.
func (sc *Scenario) Settings() (config.Config, error) {
	c := config.Defaults()
	if err := c.Apply(sc.Config); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

// BootTime is the time from spawn to a worker's first frame.
func (sc *Scenario) BootTime() time.Duration {
	if sc.Library.BootTime > 0 {
		return sc.Library.BootTime.D()
	}
	return 100 * time.Millisecond
}

// ModelLoad is the lazy model load time.
func (sc *Scenario) ModelLoad() time.Duration {
	if sc.Library.ModelLoad > 0 {
		return sc.Library.ModelLoad.D()
	}
	return 2 * time.Second
}

// JobTime is the processing time of one file.
func (sc *Scenario) JobTime(key string) time.Duration {
	if o, ok := sc.Library.Overrides[key]; ok && o.JobTime != nil {
		return o.JobTime.D()
	}
	if sc.Library.JobTime > 0 {
		return sc.Library.JobTime.D()
	}
	return 20 * time.Second
}

// Injected is the analyzer's answer for the run-th analysis (1-based) of a
// file with this spec when its injected error applies: the error happens on
// every run, or on the first FailTimes runs. The simulator's fake analyzer
// and the real-process script analyzer share it.
func (s FileSpec) Injected(run int) (worker.Result, bool) {
	if s.Error == "" || (s.FailTimes > 0 && run > s.FailTimes) {
		return worker.Result{}, false
	}
	r := worker.Result{Class: worker.Class(s.Error), Reason: "injected " + s.Error + " error"}
	if s.Error == "missing" { // the file is not on disk: a permanent error that marks it missing
		r.Class, r.Missing = worker.Permanent, true
	}
	switch r.Class {
	case worker.ServiceDown:
		r.Dependency = worker.DepDecoder
	case worker.Transient:
		r.Checkpoint = "decode"
	}
	return r, true
}
