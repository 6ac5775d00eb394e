package driver

// More of RunWorker's translation: what wakes its waits, what it writes
// per frame, the orphan's lease and progress, and the model steps.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/frame"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/worker"
)

// paused sets the cluster's pause flag before the worker starts.
func paused(m *memstore.Store) store.Store {
	if err := m.SetMeta(context.Background(), store.MetaWorkerEnabled, "false"); err != nil {
		panic(err)
	}
	return m
}

// A stop, or the main process's death, wakes a worker from a wait at once
// (here the paused poll, a minute): it exits then, not at its next poll.
func TestRunWorkerWakesFromAWait(t *testing.T) {
	for _, how := range []string{"stop", "control EOF"} {
		t.Run(how, func(t *testing.T) {
			pr, pw := io.Pipe()
			fr := &frames{}
			go fr.read(pr)
			cr, cw := io.Pipe()
			term := make(chan struct{})
			r := startWith(t, WorkerIO{Frames: pw, Control: cr, Term: term}, func(c *worker.Config) { c.PausedPoll = time.Minute }, paused)
			defer pw.Close()
			fr.until(t, 10*time.Second, "a paused frame", func() bool { return fr.inPhase(health.Paused) })
			if how == "stop" {
				close(term)
			} else {
				cw.Close()
			}
			r.exit(0)
		})
	}
}

// inPhase reports whether a frame showed phase p.
func (f *frames) inPhase(p health.Phase) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fr := range f.got {
		if fr.Phase == p {
			return true
		}
	}
	return false
}

// writes records each Write on the frame pipe apart, and announces it.
type writes struct {
	changes
	mu  sync.Mutex
	got [][]byte
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.got = append(w.got, append([]byte(nil), p...))
	w.mu.Unlock()
	w.changed()
	return len(p), nil
}

// Each write on the frame pipe is one whole frame line: the owner's
// reader splits on newlines and bounds a line, so a write must not carry
// the frames before it again.
func TestRunWorkerWritesOneFramePerWrite(t *testing.T) {
	w := &writes{}
	term := make(chan struct{})
	r := start(t, WorkerIO{Frames: w, Term: term})
	r.jobStarted()
	w.until(t, 10*time.Second, "5 frame writes", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.got) >= 5
	})
	close(term)
	close(r.an.release)
	r.exit(0)
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, b := range w.got {
		if bytes.Count(b, []byte("\n")) != 1 || b[len(b)-1] != '\n' {
			t.Fatalf("write %d is not one frame line: %q", i, b)
		}
		if _, err := frame.Parse(b[:len(b)-1]); err != nil {
			t.Fatalf("write %d: %v: %q", i, err, b)
		}
	}
}

// keepCounting counts the orphan's own lease renewals, and announces
// each.
type keepCounting struct {
	*memstore.Store
	changes
	keeps atomic.Int32
}

func (k *keepCounting) KeepClaim(ctx context.Context, ref store.Ref, until time.Time) error {
	k.keeps.Add(1)
	defer k.changed()
	return k.Store.KeepClaim(ctx, ref, until)
}

// An orphan renews its own lease while it finishes its job (no main
// process renews it any more), every lease_ttl/3, on the frame writer's
// ticker: its claim does not run out under a long job.
func TestRunWorkerOrphanKeepsItsLease(t *testing.T) {
	cr, cw := io.Pipe()
	k := &keepCounting{}
	r := startWith(t, WorkerIO{Frames: io.Discard, Control: cr}, func(c *worker.Config) { c.LeaseTTL = 30 * frameEvery },
		func(m *memstore.Store) store.Store { k.Store = m; return k })
	r.jobStarted()
	cw.Close()
	r.waitLog("control pipe closed")
	k.until(t, 10*time.Second, "3 renewals of the orphan's lease (one every lease_ttl/3, 100 ms)", func() bool { return k.keeps.Load() >= 3 })
	close(r.an.release)
	r.exit(0)
	r.finishedOnlyA()
}

// progressing reports a job's progress every frame interval for steps
// intervals, then completes it.
type progressing struct {
	started chan string
	steps   int
}

func (p progressing) Analyze(_ context.Context, job worker.Job, progress func(int64)) worker.Result {
	p.started <- job.FileKey
	for i := 1; i <= p.steps; i++ {
		progress(int64(i))
		// The job runs past stall_after in real time: the stall rule reads
		// the worker's own clock, which the test does not drive.
		time.Sleep(frameEvery)
	}
	if err := job.Confirm(); err != nil {
		return worker.FenceFailed(err, "")
	}
	return worker.Result{Tags: map[string]string{"nom_version": "v"}, Version: "v"}
}

// An orphan's job that makes progress is not abandoned however long it
// runs past stall_after: the analyzer's progress reaches the core.
func TestRunWorkerOrphanKeepsAProgressingJob(t *testing.T) {
	cr, cw := io.Pipe()
	st := memstore.New(1)
	if _, err := st.UpsertFiles(context.Background(), []store.File{{Key: "a", Path: "/music/a.mp3", Size: 10, MtimeMs: 1, NeedsTagging: true, IsValid: true}}); err != nil {
		t.Fatal(err)
	}
	cfg := worker.DefaultConfig("worker:discovery:0", "i/worker:discovery:0")
	cfg.DiscoverBatch, cfg.IdlePollMin, cfg.IdlePollMax = 1, frameEvery, 5*frameEvery
	cfg.StallAfter = 10 * frameEvery
	w, err := worker.New(cfg, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	an := progressing{started: make(chan string, 1), steps: 40}
	code := make(chan int, 1)
	go func() {
		code <- RunWorker(context.Background(), w, an, noModels{}, WorkerIO{Frames: io.Discard, Control: cr}, nil, frameEvery,
			slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	select {
	case <-an.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no job started")
	}
	cw.Close()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit code %d: the orphan abandoned a job that kept making progress", c)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("RunWorker did not return")
	}
	if f, ok := st.Peek("a"); !ok || !f.Tagged {
		t.Fatalf("a = %+v, want the job completed", f)
	}
}

// countingModels counts its loads and unloads, and announces each; its
// loads fail with err.
type countingModels struct {
	changes
	mu             sync.Mutex
	loads, unloads int
	err            error
}

func (m *countingModels) Load(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.changed()
	m.loads++
	return m.err
}

func (m *countingModels) Unload() {
	m.mu.Lock()
	m.unloads++
	m.mu.Unlock()
	m.changed()
}

func (m *countingModels) counts() (int, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loads, m.unloads
}

// discoverCounting counts discoveries, an idle worker's polls, and
// announces each.
type discoverCounting struct {
	*memstore.Store
	changes
	n atomic.Int32
}

func (d *discoverCounting) Discover(ctx context.Context, now time.Time, after string, limit int) ([]store.File, error) {
	defer d.changed()
	defer d.n.Add(1)
	return d.Store.Discover(ctx, now, after, limit)
}

// A worker left without work unloads its models after cache_idle_timeout,
// once, and tells the core so: the next idle poll does not unload again.
func TestRunWorkerUnloadsIdleModelsOnce(t *testing.T) {
	models := &countingModels{}
	term := make(chan struct{})
	polls := &discoverCounting{}
	r := startModels(t, WorkerIO{Frames: io.Discard, Term: term}, models, func(c *worker.Config) { c.CacheIdleTimeout = 2 * frameEvery },
		func(m *memstore.Store) store.Store { polls.Store = m; return polls })
	close(r.an.release) // a and b complete; then nothing is left
	models.until(t, 10*time.Second, "the models of an idle worker unloaded", func() bool { _, unloads := models.counts(); return unloads > 0 })
	before := polls.n.Load()
	polls.until(t, 10*time.Second, "5 idle polls after the unload", func() bool { return polls.n.Load() >= before+5 })
	close(term)
	r.exit(0)
	if loads, unloads := models.counts(); loads != 1 || unloads != 1 {
		t.Fatalf("%d loads, %d unloads; want the models loaded once and unloaded once", loads, unloads)
	}
}

// A model load that fails runs no job: the claim is released, the failure
// counts as an error, and a worker whose loads keep failing exits 1 (its
// restart policy then applies).
func TestRunWorkerModelLoadFailureRunsNoJob(t *testing.T) {
	models := &countingModels{err: errors.New("onnx: no such model file")}
	r := startModels(t, WorkerIO{Frames: io.Discard}, models, func(c *worker.Config) {
		c.MaxConsecutiveErrors, c.ServiceBackoff, c.ServiceMax = 2, frameEvery, frameEvery
	})
	select {
	case k := <-r.an.started:
		t.Fatalf("job %s started though the models did not load", k)
	case c := <-r.code:
		if c != 1 {
			t.Fatalf("exit code %d, want 1 after the loads kept failing", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("RunWorker did not return; log:\n%s", r.logs.String())
	}
	if n := len(r.st.Claims()); n != 0 {
		t.Errorf("%d claims left after failed loads", n)
	}
	if loads, _ := models.counts(); loads != 2 {
		t.Errorf("%d loads, want 2", loads)
	}
}
