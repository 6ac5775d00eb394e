package worker_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/gpu"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/worker"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const (
	comp = "worker:discovery:0"
	wid  = "inst-a/worker:discovery:0"
)

type recorder struct{ events []event.Event }

func (r *recorder) Emit(e event.Event) { r.events = append(r.events, e) }

func (r *recorder) of(kind string) []event.Event {
	var out []event.Event
	for _, e := range r.events {
		if e.Event == kind {
			out = append(out, e)
		}
	}
	return out
}

type rig struct {
	t   *testing.T
	ctx context.Context
	w   *worker.Worker
	st  *memstore.Store
	ev  *recorder
}

func newRig(t *testing.T, mod func(*worker.Config)) *rig {
	t.Helper()
	cfg := worker.DefaultConfig(comp, wid)
	if mod != nil {
		mod(&cfg)
	}
	r := &rig{t: t, ctx: context.Background(), st: memstore.New(1), ev: &recorder{}}
	w, err := worker.New(cfg, r.st, r.ev)
	if err != nil {
		t.Fatalf("worker.New: %v", err)
	}
	r.w = w
	return r
}

func (r *rig) addFiles(keys ...string) {
	r.t.Helper()
	var files []store.File
	for _, k := range keys {
		files = append(files, store.File{Key: k, Path: "/music/" + k + ".mp3", Size: 10, MtimeMs: 1, NeedsTagging: true, IsValid: true})
	}
	if _, err := r.st.UpsertFiles(r.ctx, files); err != nil {
		r.t.Fatalf("UpsertFiles: %v", err)
	}
}

func (r *rig) step(now time.Time) worker.Step { return r.w.Step(r.ctx, now) }

func (r *rig) wantStep(now time.Time, kind worker.StepKind) worker.Step {
	r.t.Helper()
	s := r.step(now)
	if s.Kind != kind {
		r.t.Fatalf("Step at %s = %v %+v, want %v (phase %s)", now.Sub(t0), s.Kind, s, kind, r.w.Phase())
	}
	return s
}

// follow steps the worker at now and then at the end of each wait it asks
// for, as a driver does, until it asks for something other than a wait,
// and returns that step and its time. It fails the test when none comes
// before limit.
func (r *rig) follow(now, limit time.Time) (worker.Step, time.Time) {
	r.t.Helper()
	for now.Before(limit) {
		s := r.step(now)
		if s.Kind != worker.Wait {
			return s, now
		}
		if !s.Until.After(now) {
			r.t.Fatalf("wait at %s until %s: no time passes", now.Sub(t0), s.Until.Sub(t0))
		}
		now = s.Until
	}
	r.t.Fatalf("only waits until %s", limit.Sub(t0))
	return worker.Step{}, now
}

// startJob steps at now until the worker runs a job (loading models if it
// asks) and returns the Run step.
func (r *rig) startJob(now time.Time) worker.Step {
	r.t.Helper()
	s := r.step(now)
	if s.Kind == worker.UnloadModels { // idle eviction came first
		r.w.ModelsUnloaded(now)
		s = r.step(now)
	}
	if s.Kind == worker.LoadModels {
		r.w.ModelsLoaded(r.ctx, now, nil)
		s = r.step(now)
	}
	if s.Kind != worker.Run {
		r.t.Fatalf("Step at %s = %v %+v, want run", now.Sub(t0), s.Kind, s)
	}
	return s
}

// job runs one job from start to start+dur with result res and returns the
// file key.
func (r *rig) job(start time.Time, dur time.Duration, res worker.Result) string {
	r.t.Helper()
	s := r.startJob(start)
	r.w.JobDone(r.ctx, start.Add(dur), res)
	return s.Job.FileKey
}

func (r *rig) file(key string) store.File {
	r.t.Helper()
	f, ok := r.st.Peek(key)
	if !ok {
		r.t.Fatalf("no file %s", key)
	}
	return f
}

func ok() worker.Result {
	return worker.Result{Class: worker.OK, Tags: map[string]string{"nom:mood": "happy"}, Version: "v1"}
}

func TestLazyLoadRunAndComplete(t *testing.T) {
	r := newRig(t, nil)
	if r.w.Phase() != health.Initializing || r.w.ModelsCached() {
		t.Fatalf("initial phase %s, cached %v", r.w.Phase(), r.w.ModelsCached())
	}
	// No work: no model load, just an idle wait.
	s := r.wantStep(t0, worker.Wait)
	if r.w.Phase() != health.Idle || r.w.ModelsCached() {
		t.Fatalf("phase %s cached %v after an empty poll", r.w.Phase(), r.w.ModelsCached())
	}
	r.addFiles("a", "b", "c")
	now := s.Until
	r.wantStep(now, worker.LoadModels)
	if r.w.Phase() != health.LoadingModels {
		t.Fatalf("phase = %s, want loading_models", r.w.Phase())
	}
	if k, held := r.w.Holding(); !held || k != "a" {
		t.Fatalf("Holding = %q %v", k, held)
	}
	if c, ok := r.st.ClaimOf("a"); !ok || c.WorkerID != wid || !c.LeaseUntil.Equal(now.Add(30*time.Second)) {
		t.Fatalf("claim = %+v %v", c, ok)
	}
	r.w.ModelsLoaded(r.ctx, now, nil)
	s = r.wantStep(now, worker.Run)
	if s.Job.FileKey != "a" || s.Job.Path != "/music/a.mp3" {
		t.Fatalf("job = %+v", s.Job)
	}
	if r.w.Phase() != health.Processing {
		t.Fatalf("phase = %s, want processing", r.w.Phase())
	}
	r.w.Progress(5)
	r.w.Progress(3) // not monotonic: ignored
	if f := r.w.Frame(); f.CurrentJob != "a" || f.Progress != 5 || f.Phase != health.Processing || f.ComponentID != comp || !f.CacheLoaded {
		t.Fatalf("frame during job = %+v", f)
	}
	r.w.JobDone(r.ctx, now.Add(20*time.Second), ok())
	f := r.file("a")
	if !f.Tagged || f.NeedsTagging || f.TaggedVersion != "v1" || !f.LastTaggedAt.Equal(now.Add(20*time.Second)) {
		t.Fatalf("file after completion = %+v", f)
	}
	if r.st.Tags("a")["nom:mood"] != "happy" || r.st.TagWrites["a"] != 1 {
		t.Fatalf("tags = %v writes = %d", r.st.Tags("a"), r.st.TagWrites["a"])
	}
	if _, ok := r.st.ClaimOf("a"); ok {
		t.Fatal("claim kept after completion")
	}
	if _, held := r.w.Holding(); held {
		t.Fatal("still holding after completion")
	}
	if tg := r.ev.of(event.Tagged); len(tg) != 1 || tg[0].File != "a" || tg[0].Worker != wid {
		t.Fatalf("tagged events = %+v", tg)
	}
	if fr := r.w.Frame(); fr.CurrentJob != "" || fr.FilesProcessed != 1 {
		t.Fatalf("frame after job = %+v", fr)
	}
	tel := r.w.Telemetry()
	if tel.FilesProcessed != 1 || tel.AvgProcessingMs != 20000 {
		t.Fatalf("telemetry after first job = %+v", tel)
	}
	// Models stay loaded: the next claim runs at once.
	next := now.Add(20 * time.Second)
	r.wantStep(next, worker.Run)
	r.w.JobDone(r.ctx, next.Add(10*time.Second), ok())
	if got := r.w.Telemetry().AvgProcessingMs; got != 0.8*20000+0.2*10000 {
		t.Fatalf("avg after 2 jobs = %v, want 18000", got)
	}
	next = next.Add(10 * time.Second)
	r.job(next, 30*time.Second, ok())
	if got, want := r.w.Telemetry().AvgProcessingMs, 0.8*18000+0.2*30000; math.Abs(got-want) > 1e-9 {
		t.Fatalf("avg after 3 jobs = %v, want %v", got, want)
	}
	if tel := r.w.Telemetry(); tel.FilesProcessed != 3 || tel.Errors != 0 {
		t.Fatalf("telemetry = %+v", tel)
	}
}

func TestPermanentError(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b")
	r.job(t0, time.Second, worker.Result{Class: worker.Transient, Reason: "timeout"})
	before := r.w.Telemetry()
	key := r.job(at(2*time.Second), time.Second, worker.Result{Class: worker.Permanent, Reason: "not audio"})
	if key != "b" {
		t.Fatalf("second job on %s, want b", key)
	}
	f := r.file("b")
	if !f.Failed || f.LastError != "permanent: not audio" || f.Attempts != 0 {
		t.Fatalf("file after permanent error = %+v", f)
	}
	if _, ok := r.st.ClaimOf("b"); ok {
		t.Fatal("claim kept")
	}
	tel := r.w.Telemetry()
	if tel.ConsecutiveErrors != before.ConsecutiveErrors || tel.Errors != before.Errors+1 {
		t.Fatalf("telemetry %+v -> %+v: permanent must not count toward the error limit", before, tel)
	}
	if ff := r.ev.of(event.FileFailed); len(ff) != 1 || ff[0].File != "b" || ff[0].Path != "/music/b.mp3" {
		t.Fatalf("file_failed events = %+v, want file b with its path", ff)
	}
	if fr := r.ev.of(event.FileRetry); len(fr) != 1 || fr[0].Path != "/music/a.mp3" {
		t.Fatalf("file_retry events = %+v, want file a with its path", fr)
	}
}

// A file found missing (a drive not mounted, a file deleted) is marked
// missing — not valid, not failed, its attempts kept — and the worker goes
// on with the next file; the error does not count toward the limit.
func TestMissingFile(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b")
	key := r.job(t0, time.Second, worker.Result{Class: worker.Permanent, Missing: true, Reason: "missing"})
	if key != "a" {
		t.Fatalf("job on %s, want a", key)
	}
	f := r.file("a")
	if f.Failed || f.IsValid || !f.NeedsTagging || f.Attempts != 0 || f.LastError != "missing: missing" {
		t.Fatalf("file after a missing error = %+v", f)
	}
	if _, ok := r.st.ClaimOf("a"); ok {
		t.Fatal("claim kept")
	}
	if ff := r.ev.of(event.FileFailed); len(ff) != 0 {
		t.Fatalf("file_failed events = %+v", ff)
	}
	if rel := r.ev.of(event.Release); len(rel) != 1 || rel[0].File != "a" || rel[0].Reason != "missing: missing" {
		t.Fatalf("release events = %+v", rel)
	}
	if tel := r.w.Telemetry(); tel.ConsecutiveErrors != 0 || tel.Errors != 1 {
		t.Fatalf("telemetry %+v: a missing file must not count toward the error limit", tel)
	}
	if key := r.job(at(2*time.Second), time.Second, ok()); key != "b" {
		t.Fatalf("next job on %s, want b", key)
	}
}

func TestTransientRetries(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	now := t0
	for attempt := 1; attempt <= 5; attempt++ {
		js := r.startJob(now)
		if js.Job.FileKey != "a" || js.Job.Attempts != attempt-1 {
			t.Fatalf("attempt %d: job %+v", attempt, js.Job)
		}
		if attempt > 1 && js.Job.Checkpoint != "decode" {
			t.Fatalf("attempt %d: checkpoint of the earlier attempt not passed on: %+v", attempt, js.Job)
		}
		done := now.Add(time.Second)
		r.w.JobDone(r.ctx, done, worker.Result{Class: worker.Transient, Reason: "decoder timeout", Checkpoint: "decode"})
		f := r.file("a")
		if f.Attempts != attempt || f.Checkpoint != "decode" {
			t.Fatalf("attempt %d: file = %+v", attempt, f)
		}
		if tel := r.w.Telemetry(); tel.ConsecutiveErrors != int64(attempt) {
			t.Fatalf("attempt %d: consecutive errors %d", attempt, tel.ConsecutiveErrors)
		}
		if attempt == 5 {
			if !f.Failed {
				t.Fatalf("not failed after 5 attempts: %+v", f)
			}
			break
		}
		want := done.Add(time.Minute << (attempt - 1))
		if f.Failed || !f.NextRetryAt.Equal(want) {
			t.Fatalf("attempt %d: next_retry_at = %s failed=%v, want %s", attempt, f.NextRetryAt.Sub(t0), f.Failed, want.Sub(t0))
		}
		// Not claimable before next_retry_at.
		s := r.step(want.Add(-time.Millisecond))
		if s.Kind == worker.UnloadModels { // idle longer than cache_idle_timeout
			r.w.ModelsUnloaded(want.Add(-time.Millisecond))
			s = r.step(want.Add(-time.Millisecond))
		}
		if s.Kind != worker.Wait || len(r.st.Claims()) != 0 {
			t.Fatalf("attempt %d: claimed before next_retry_at: %+v", attempt, s)
		}
		now = s.Until // the next discovery, past next_retry_at
	}
	if ff := r.ev.of(event.FileFailed); len(ff) != 1 {
		t.Fatalf("file_failed events = %+v", ff)
	}
	if n := len(r.ev.of(event.FileRetry)); n != 4 {
		t.Fatalf("file_retry events = %d, want 4", n)
	}
}

// A worker claims from its discovery batch, which may be minutes old; the
// job must start from the file as the store holds it when claimed. Here
// another worker tries the batch's second file and releases it (attempt 1,
// checkpoint "decode") while this one works on the first: the job on it
// must see attempt 1 and the checkpoint, and its failure must count as the
// second attempt — with the batch's copy, attempts never pass 1 and the
// file would be retried without end.
func TestStaleBatchStartsFromStoredFile(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b")
	if js := r.startJob(t0); js.Job.FileKey != "a" { // batch [a b]: b cached
		t.Fatalf("first job %+v", js.Job)
	}
	other := store.Ref{FileKey: "b", WorkerID: "j/worker:discovery:1"}
	if _, err := r.st.Claim(r.ctx, store.Claim{FileKey: "b", WorkerID: other.WorkerID, ClaimedAt: t0, LeaseUntil: at(30 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := r.st.Release(r.ctx, other, &store.FileUpdate{Attempts: 1, NextRetryAt: at(time.Minute), LastError: "transient: x", Checkpoint: "decode"}); err != nil {
		t.Fatal(err)
	}
	done := at(2 * time.Minute)
	r.w.JobDone(r.ctx, done, ok())
	js := r.startJob(done)
	if js.Job.FileKey != "b" || js.Job.Attempts != 1 || js.Job.Checkpoint != "decode" {
		t.Fatalf("job on b = %+v, want attempt 1 with checkpoint \"decode\" (the stored file)", js.Job)
	}
	r.w.JobDone(r.ctx, done.Add(time.Second), worker.Result{Class: worker.Transient, Reason: "y", Checkpoint: "decode"})
	if f := r.file("b"); f.Attempts != 2 {
		t.Fatalf("b after its second failure: attempts %d, want 2", f.Attempts)
	}
}

func TestTransientBackoffCap(t *testing.T) {
	r := newRig(t, func(c *worker.Config) { c.TransientRetries = 20 })
	r.addFiles("a")
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	now := t0
	for i, m := range want {
		s := r.startJob(now)
		if s.Job.Attempts != i {
			t.Fatalf("job attempts = %d, want %d", s.Job.Attempts, i)
		}
		done := now.Add(time.Second)
		r.w.JobDone(r.ctx, done, worker.Result{Class: worker.Transient, Reason: "x"})
		f := r.file("a")
		if got := f.NextRetryAt.Sub(done); got != m*time.Minute {
			t.Fatalf("attempt %d: retry delay %s, want %s", i+1, got, m*time.Minute)
		}
		now = f.NextRetryAt
	}
}

func TestServiceDownReleasesWithoutAttempt(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	before := r.file("a")
	r.job(t0, 2*time.Second, worker.Result{Class: worker.ServiceDown, Dependency: worker.DepGPU, Reason: "cuda error"})
	done := at(2 * time.Second)
	if f := r.file("a"); f != before {
		t.Fatalf("file after service_down = %+v, want it untouched %+v", f, before)
	}
	if _, ok := r.st.ClaimOf("a"); ok {
		t.Fatal("claim kept after service_down")
	}
	if tel := r.w.Telemetry(); tel.Errors != 0 || tel.ConsecutiveErrors != 0 {
		t.Fatalf("service_down counted as an error: %+v", tel)
	}
	if rel := r.ev.of(event.Release); len(rel) != 1 || rel[0].File != "a" {
		t.Fatalf("release events = %+v", rel)
	}
	s := r.wantStep(done, worker.Wait)
	if !s.Until.Equal(done.Add(time.Second)) || r.w.Phase() != health.BackingOff {
		t.Fatalf("step after service_down = %+v phase %s", s, r.w.Phase())
	}
	if len(r.st.Claims()) != 0 {
		t.Fatal("claimed while backing off")
	}
	if f := r.w.Frame(); f.Phase != health.BackingOff {
		t.Fatalf("frame phase = %s", f.Phase)
	}
	r.wantStep(s.Until, worker.Run)
}

func TestConsecutiveErrorsExit(t *testing.T) {
	r := newRig(t, nil)
	var keys []string
	for i := 0; i < 12; i++ {
		keys = append(keys, fmt.Sprintf("f%02d", i))
	}
	r.addFiles(keys...)
	now := t0
	for i := 0; i < 10; i++ {
		r.job(now, time.Second, worker.Result{Class: worker.Transient, Reason: "boom"})
		now = now.Add(2 * time.Second)
	}
	s := r.wantStep(now, worker.Exit)
	if s.Code != 1 {
		t.Fatalf("exit code = %d, want 1", s.Code)
	}
	if len(r.st.Claims()) != 0 {
		t.Fatalf("claims held at exit: %+v", r.st.Claims())
	}
	// Nine errors are not enough.
	r2 := newRig(t, nil)
	r2.addFiles(keys...)
	now = t0
	for i := 0; i < 9; i++ {
		r2.job(now, time.Second, worker.Result{Class: worker.Transient, Reason: "boom"})
		now = now.Add(2 * time.Second)
	}
	r2.startJob(now)
	// A success resets the count.
	r2.w.JobDone(r2.ctx, now.Add(time.Second), ok())
	if c := r2.w.Telemetry().ConsecutiveErrors; c != 0 {
		t.Fatalf("consecutive errors after success = %d", c)
	}
}

func TestPauseAndResume(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b")
	if err := r.st.SetMeta(r.ctx, store.MetaWorkerEnabled, "false"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		now := at(time.Duration(i) * time.Second)
		s := r.wantStep(now, worker.Wait)
		if s.Until.After(now.Add(time.Second)) || !s.Until.After(now) {
			t.Fatalf("paused wait until %s (now %s)", s.Until.Sub(t0), now.Sub(t0))
		}
		if r.w.Phase() != health.Paused || r.w.Frame().Phase != health.Paused {
			t.Fatalf("phase = %s, want paused", r.w.Phase())
		}
		if len(r.st.Claims()) != 0 {
			t.Fatal("claimed while paused")
		}
	}
	if err := r.st.SetMeta(r.ctx, store.MetaWorkerEnabled, "true"); err != nil {
		t.Fatal(err)
	}
	s := r.startJob(at(3 * time.Second))
	// Pause during a job: the job finishes, then no new claim.
	if err := r.st.SetMeta(r.ctx, store.MetaWorkerEnabled, "false"); err != nil {
		t.Fatal(err)
	}
	r.w.JobDone(r.ctx, at(5*time.Second), ok())
	if !r.file(s.Job.FileKey).Tagged {
		t.Fatal("job in flight at pause not completed")
	}
	r.wantStep(at(5*time.Second), worker.Wait)
	if r.w.Phase() != health.Paused || len(r.st.Claims()) != 0 {
		t.Fatalf("phase %s claims %v", r.w.Phase(), r.st.Claims())
	}
	if err := r.st.SetMeta(r.ctx, store.MetaWorkerEnabled, "true"); err != nil {
		t.Fatal(err)
	}
	r.wantStep(at(6*time.Second), worker.Run)
}

func TestGPUPreflight(t *testing.T) {
	now := at(10 * time.Minute)
	enc := func(h gpu.Health) string { return h.Encode() }
	cases := []struct {
		name    string
		value   string
		present bool
		claim   bool
	}{
		{"missing", "", false, false},
		{"stale", enc(gpu.Health{OK: true, AtMs: now.Add(-61 * time.Second).UnixMilli()}), true, false},
		{"down", enc(gpu.Health{OK: false, AtMs: now.Add(-time.Second).UnixMilli(), Reason: "nvidia-smi failed"}), true, false},
		{"bad json", "{", true, false},
		{"ok", enc(gpu.Health{OK: true, AtMs: now.Add(-10 * time.Second).UnixMilli()}), true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *worker.Config) { c.UseGPU = true })
			r.addFiles("a")
			if tc.present {
				if err := r.st.SetMeta(r.ctx, store.MetaGPUHealth, tc.value); err != nil {
					t.Fatal(err)
				}
			}
			s := r.step(now)
			if tc.claim {
				if s.Kind != worker.LoadModels {
					t.Fatalf("step = %+v, want load_models", s)
				}
				return
			}
			if s.Kind != worker.Wait || !s.Until.After(now) || s.Reason == "" {
				t.Fatalf("step = %+v, want a wait with a reason", s)
			}
			if r.w.Phase() != health.BackingOff {
				t.Fatalf("phase = %s, want backing_off", r.w.Phase())
			}
			if len(r.st.Claims()) != 0 {
				t.Fatal("claimed without a usable GPU")
			}
		})
	}
	// Without UseGPU the probe is not consulted.
	r := newRig(t, nil)
	r.addFiles("a")
	r.wantStep(now, worker.LoadModels)
	// A worker reads its own host's GPU health, not another host's.
	r = newRig(t, func(c *worker.Config) { c.UseGPU, c.GPUHealthKey = true, store.GPUHealthKey("b") })
	r.addFiles("a")
	for node, h := range map[string]gpu.Health{"a": {OK: true, AtMs: now.UnixMilli()}, "b": {OK: false, AtMs: now.UnixMilli(), Reason: "xid 79"}} {
		if err := r.st.SetMeta(r.ctx, store.GPUHealthKey(node), h.Encode()); err != nil {
			t.Fatal(err)
		}
	}
	if s := r.wantStep(now, worker.Wait); !strings.Contains(s.Reason, "xid 79") {
		t.Fatalf("host b's worker waits for %q, want its own GPU's reason", s.Reason)
	}
}

func TestIdlePollGrowsAndResets(t *testing.T) {
	r := newRig(t, nil)
	want := []time.Duration{
		1000 * time.Millisecond, 1500 * time.Millisecond, 2250 * time.Millisecond, 3375 * time.Millisecond,
		5062500 * time.Microsecond, 7593750 * time.Microsecond, 11390625 * time.Microsecond,
		17085937500 * time.Nanosecond, 25628906250 * time.Nanosecond, 30 * time.Second, 30 * time.Second,
	}
	// The gaps between discoveries, stepping at each wait's end as a
	// driver does; the waits between them read only the pause flag.
	polls := func(now time.Time, n int) ([]time.Duration, time.Time) {
		t.Helper()
		var gaps []time.Duration
		var last time.Time
		for len(gaps) < n {
			before := r.w.Telemetry().DiscoveryAttempts
			s := r.wantStep(now, worker.Wait)
			if r.w.Phase() != health.Idle {
				t.Fatalf("phase = %s", r.w.Phase())
			}
			if d := s.Until.Sub(now); d <= 0 || d > time.Second {
				t.Fatalf("wait at %s = %s, want at most paused_poll (1s)", now.Sub(t0), d)
			}
			if r.w.Telemetry().DiscoveryAttempts != before {
				if !last.IsZero() {
					gaps = append(gaps, now.Sub(last))
				}
				last = now
			}
			now = s.Until
		}
		return gaps, last
	}
	gaps, last := polls(t0, len(want)-1)
	for i, w := range want[:len(want)-1] {
		if gaps[i] != w {
			t.Fatalf("poll %d = %s, want %s", i, gaps[i], w)
		}
	}
	if d := r.w.Telemetry().DiscoveryAttempts; d != int64(len(want)) {
		t.Fatalf("discovery attempts = %d", d)
	}
	now := last.Add(want[len(want)-1])
	r.addFiles("a")
	r.job(now, time.Second, ok())
	now = now.Add(time.Second)
	if gaps, _ := polls(now, 2); gaps[0] != time.Second || gaps[1] != 1500*time.Millisecond {
		t.Fatalf("polls after work = %v, want [1s 1.5s]", gaps)
	}
}

func TestIdleEviction(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.job(t0, time.Second, ok())
	done := at(time.Second)
	if !r.w.ModelsCached() {
		t.Fatal("models not cached after a job")
	}
	r.wantStep(done, worker.Wait)
	r.wantStep(done.Add(time.Minute), worker.Wait)
	r.wantStep(done.Add(5*time.Minute-time.Millisecond), worker.Wait)
	// The unload comes with the first discovery from cache_idle_timeout on,
	// within one idle poll (30 s at most).
	s, evicted := r.follow(done.Add(5*time.Minute-time.Millisecond), done.Add(6*time.Minute))
	if s.Kind != worker.UnloadModels || evicted.Before(done.Add(5*time.Minute)) || evicted.After(done.Add(5*time.Minute+30*time.Second)) {
		t.Fatalf("step %v at %s, want unload_models within 30 s of 5m", s.Kind, evicted.Sub(done))
	}
	if r.w.Phase() != health.Idle {
		t.Fatalf("phase during eviction = %s", r.w.Phase())
	}
	r.w.ModelsUnloaded(evicted)
	if r.w.ModelsCached() || r.w.Frame().CacheLoaded {
		t.Fatal("models still cached after unload")
	}
	r.wantStep(evicted.Add(time.Second), worker.Wait)
	r.wantStep(done.Add(20*time.Minute), worker.Wait)
	r.addFiles("b")
	r.wantStep(done.Add(21*time.Minute), worker.LoadModels)
	if n := len(r.ev.of(event.ModelsUnloaded)); n != 1 {
		t.Fatalf("models_unloaded events = %d", n)
	}
}

func TestMainDiedDuringJob(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave func(w *worker.Worker)
	}{
		{"main died", func(w *worker.Worker) { w.MainDied() }},
		{"stop requested", func(w *worker.Worker) { w.StopRequested() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			r.addFiles("a", "b")
			s := r.startJob(t0)
			tc.leave(r.w)
			r.w.Progress(10)
			if f := r.w.Frame(); f.CurrentJob != "a" {
				t.Fatalf("frame during job after leave = %+v", f)
			}
			r.w.JobDone(r.ctx, at(30*time.Second), ok())
			e := r.wantStep(at(30*time.Second), worker.Exit)
			if e.Code != 0 {
				t.Fatalf("exit code = %d, want 0", e.Code)
			}
			if !r.file(s.Job.FileKey).Tagged {
				t.Fatal("job not completed before exit")
			}
			if len(r.st.Claims()) != 0 {
				t.Fatalf("claims at exit: %+v", r.st.Claims())
			}
			if r.file("b").Tagged || len(r.ev.of(event.Claim)) != 1 {
				t.Fatal("a new file was claimed after the leave signal")
			}
			if r.w.Phase() != health.Stopping {
				t.Fatalf("phase at exit = %s", r.w.Phase())
			}
		})
	}
}

func TestMainDiedBeforeJobStarts(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.wantStep(t0, worker.LoadModels)
	r.w.ModelsLoaded(r.ctx, at(time.Second), nil)
	r.w.MainDied()
	e := r.wantStep(at(time.Second), worker.Exit)
	if e.Code != 0 {
		t.Fatalf("exit code %d", e.Code)
	}
	if _, ok := r.st.ClaimOf("a"); ok {
		t.Fatal("claim kept at exit")
	}
	if f := r.file("a"); f.Tagged || f.Attempts != 0 {
		t.Fatalf("file changed: %+v", f)
	}
}

func TestStoreDownAtCompletionKeepsResult(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b")
	r.startJob(t0)
	r.st.SetFault(memstore.Down)
	r.w.JobDone(r.ctx, at(10*time.Second), ok())
	if r.file("a").Tagged {
		t.Fatal("tagged while the store is down")
	}
	// Far more tries than MaxPendingWrites: while the main process lives,
	// the result is kept for as long as the store is down (the bound is
	// for an orphan only), and the worker does not exit.
	now := at(10 * time.Second)
	for i := 0; i < 3*worker.DefaultConfig(comp, wid).MaxPendingWrites; i++ {
		s := r.wantStep(now, worker.Wait)
		if r.w.Phase() != health.BackingOff || !s.Until.After(now) {
			t.Fatalf("step while down = %+v phase %s", s, r.w.Phase())
		}
		now = s.Until
	}
	r.st.SetFault(memstore.Healthy)
	s := r.step(now)
	if s.Kind != worker.Run || s.Job.FileKey != "b" {
		t.Fatalf("step after recovery = %+v, want run b", s)
	}
	if !r.file("a").Tagged || r.st.TagWrites["a"] != 1 {
		t.Fatalf("result lost or written twice: %+v writes %d", r.file("a"), r.st.TagWrites["a"])
	}
	if r.st.Tags("a")["nom:mood"] != "happy" {
		t.Fatal("tags lost")
	}
	r.w.JobDone(r.ctx, now.Add(time.Second), ok())
	r.step(now.Add(time.Second))
	if r.st.TagWrites["a"] != 1 || r.st.TagWrites["b"] != 1 {
		t.Fatalf("tag writes = %v", r.st.TagWrites)
	}
	if n := len(r.ev.of(event.Tagged)); n != 2 {
		t.Fatalf("tagged events = %d, want 2", n)
	}
}

func TestStoreDownAtCompletionAfterMainDied(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.startJob(t0)
	r.w.MainDied()
	r.st.SetFault(memstore.Down)
	r.w.JobDone(r.ctx, at(time.Second), ok())
	s := r.wantStep(at(time.Second), worker.Wait)
	r.st.SetFault(memstore.Healthy)
	e := r.wantStep(s.Until, worker.Exit)
	if e.Code != 0 || !r.file("a").Tagged || r.st.TagWrites["a"] != 1 {
		t.Fatalf("exit %+v, file %+v", e, r.file("a"))
	}
}

// An orphan (its main process gone) whose result the store keeps refusing
// tries the write exactly MaxPendingWrites times, JobDone's own try
// included, then gives it up and exits 0, holding nothing: the lease
// expiry returns the file.
func TestPendingWriteGivenUpAfterMaxTries(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.startJob(t0)
	r.w.MainDied()
	r.st.SetFault(memstore.Down)
	faults := r.st.Faults
	now := at(time.Second)
	r.w.JobDone(r.ctx, now, ok())
	var s worker.Step
	for i := 0; i < 100; i++ {
		if s = r.step(now); s.Kind != worker.Wait {
			break
		}
		now = s.Until
	}
	if s.Kind != worker.Exit || s.Code != 0 {
		t.Fatalf("last step = %+v, want exit 0", s)
	}
	if n, want := r.st.Faults-faults, int64(worker.DefaultConfig(comp, wid).MaxPendingWrites); n != want {
		t.Fatalf("result write tried %d times, want max_pending_writes (%d)", n, want)
	}
	if _, held := r.w.Holding(); held {
		t.Fatal("still holding after giving the write up")
	}
	if se := r.ev.of(event.StoreError); len(se) == 0 || se[len(se)-1].File != "a" || !strings.Contains(se[len(se)-1].Reason, "giving up") {
		t.Fatalf("store errors = %+v, want the last one giving up the write of a", se)
	}
}

// A frame names the current job, with its progress, only while the job
// runs: not while the models load for it nor while its result waits for
// the store (the owner's stall clock runs while a frame names a job, and a
// cold start is judged by cold_start_max, not stall_after). Each job's
// progress starts at 0.
func TestFrameNamesOnlyARunningJob(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b")
	r.wantStep(t0, worker.LoadModels)
	if f := r.w.Frame(); f.CurrentJob != "" || f.Progress != 0 {
		t.Fatalf("frame while the models load = %+v, want no current job", f)
	}
	r.w.ModelsLoaded(r.ctx, t0, nil)
	r.wantStep(t0, worker.Run)
	r.w.Progress(7)
	if f := r.w.Frame(); f.CurrentJob != "a" || f.Progress != 7 {
		t.Fatalf("frame during job a = %+v", f)
	}
	r.w.JobDone(r.ctx, at(time.Second), ok())
	r.wantStep(at(time.Second), worker.Run)
	if f := r.w.Frame(); f.CurrentJob != "b" || f.Progress != 0 {
		t.Fatalf("frame at the start of job b = %+v, want progress 0", f)
	}
	r.w.Progress(3)
	if f := r.w.Frame(); f.Progress != 3 {
		t.Fatalf("frame during job b = %+v, want progress 3", f)
	}
	r.st.SetFault(memstore.Down)
	r.w.JobDone(r.ctx, at(2*time.Second), ok())
	if _, held := r.w.Holding(); !held {
		t.Fatal("result of b not pending")
	}
	if f := r.w.Frame(); f.CurrentJob != "" || f.Progress != 0 {
		t.Fatalf("frame while the result waits for the store = %+v, want no current job", f)
	}
}

func TestClaimLostDiscardsResult(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.startJob(t0)
	// The claim is removed behind the worker's back, and another worker takes the file.
	if _, err := r.st.ReleaseWorker(r.ctx, wid, store.Death{}, nil); err != nil {
		t.Fatal(err)
	}
	other := "inst-b/worker:discovery:0"
	if _, err := r.st.Claim(r.ctx, store.Claim{FileKey: "a", WorkerID: other, ClaimedAt: at(time.Second), LeaseUntil: at(31 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	r.w.JobDone(r.ctx, at(5*time.Second), ok())
	if f := r.file("a"); f.Tagged || r.st.TagWrites["a"] != 0 {
		t.Fatalf("lost claim's result written: %+v", f)
	}
	if c, ok := r.st.ClaimOf("a"); !ok || c.WorkerID != other {
		t.Fatalf("other worker's claim disturbed: %+v %v", c, ok)
	}
	if _, held := r.w.Holding(); held {
		t.Fatal("still holding")
	}
	if n := len(r.ev.of(event.StoreError)); n != 0 {
		t.Fatalf("store errors for a lost claim: %+v", r.ev.of(event.StoreError))
	}
	if tel := r.w.Telemetry(); tel.Errors != 0 || tel.ConsecutiveErrors != 0 {
		t.Fatalf("lost claim counted as an error: %+v", tel)
	}
	// The worker carries on normally.
	s := r.wantStep(at(5*time.Second), worker.Wait)
	if r.w.Phase() != health.Idle || s.Reason != "" {
		t.Fatalf("step after lost claim = %+v phase %s", s, r.w.Phase())
	}
}

func TestCircuitBreakerOpens(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.st.SetFault(memstore.Down)
	now := t0
	var s worker.Step
	for i := 1; i <= 5; i++ {
		s = r.wantStep(now, worker.Wait)
		if r.w.Phase() != health.BackingOff {
			t.Fatalf("phase = %s", r.w.Phase())
		}
		if i < 5 {
			if got, want := s.Until.Sub(now), time.Second<<(i-1); got != want {
				t.Fatalf("failure %d: wait %s, want %s", i, got, want)
			}
			now = s.Until
		}
	}
	// Fifth failure at now: the breaker opens for its 30 s cool-down.
	retryAt := now.Add(30 * time.Second)
	if !s.Until.Equal(retryAt) {
		t.Fatalf("wait after the 5th failure until %s, want the breaker's RetryAt %s", s.Until.Sub(t0), retryAt.Sub(t0))
	}
	ops := r.st.Ops
	r.st.SetFault(memstore.Healthy)
	s = r.wantStep(retryAt.Add(-time.Second), worker.Wait)
	if !s.Until.Equal(retryAt) || r.st.Ops != ops {
		t.Fatalf("open breaker: step %+v, store ops %d -> %d", s, ops, r.st.Ops)
	}
	r.wantStep(retryAt, worker.LoadModels)
}

func TestModelLoadFailureReleasesClaim(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.wantStep(t0, worker.LoadModels)
	r.w.ModelsLoaded(r.ctx, t0, errors.New("onnx: no such file"))
	if _, ok := r.st.ClaimOf("a"); ok {
		t.Fatal("claim kept after a failed model load")
	}
	// A model that cannot be loaded is not the store's trouble.
	if got := r.ev.of(event.ModelLoadFailed); len(got) != 1 || got[0].Reason != "onnx: no such file" || len(r.ev.of(event.StoreError)) != 0 {
		t.Fatalf("events %+v, want one model_load_failed and no store_error", r.ev.events)
	}
	if tel := r.w.Telemetry(); tel.ConsecutiveErrors != 1 {
		t.Fatalf("telemetry = %+v", tel)
	}
	s := r.wantStep(t0, worker.Wait)
	if r.w.Phase() != health.BackingOff {
		t.Fatalf("phase = %s", r.w.Phase())
	}
	r.wantStep(s.Until, worker.LoadModels)
}

func TestConfigValidate(t *testing.T) {
	if err := worker.DefaultConfig(comp, wid).Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	for name, mod := range map[string]func(*worker.Config){
		"component":    func(c *worker.Config) { c.Component = "" },
		"worker id":    func(c *worker.Config) { c.WorkerID = "" },
		"lease":        func(c *worker.Config) { c.LeaseTTL = 0 },
		"idle range":   func(c *worker.Config) { c.IdlePollMax = c.IdlePollMin / 2 },
		"idle factor":  func(c *worker.Config) { c.IdlePollFactor = 0.5 },
		"max errors":   func(c *worker.Config) { c.MaxConsecutiveErrors = 0 },
		"retries":      func(c *worker.Config) { c.TransientRetries = 0 },
		"service wait": func(c *worker.Config) { c.ServiceBackoff = 0 },
	} {
		c := worker.DefaultConfig(comp, wid)
		mod(&c)
		if _, err := worker.New(c, memstore.New(1), nil); err == nil {
			t.Errorf("%s: New accepted an invalid config", name)
		}
	}
}

func TestServiceDownKeepsCheckpoint(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.job(t0, time.Second, worker.Result{Class: worker.Transient, Reason: "x"})
	f := r.file("a")
	s := r.startJob(f.NextRetryAt)
	if s.Job.Attempts != 1 {
		t.Fatalf("job = %+v", s.Job)
	}
	r.w.JobDone(r.ctx, f.NextRetryAt.Add(time.Second), worker.Result{Class: worker.ServiceDown, Dependency: worker.DepDecoder, Reason: "ffmpeg gone", Checkpoint: "decode,backbone"})
	g := r.file("a")
	if g.Attempts != 1 || g.Checkpoint != "decode,backbone" || g.Failed || g.NextRetryAt.After(f.NextRetryAt.Add(time.Second)) {
		t.Fatalf("file after service_down with checkpoint = %+v", g)
	}
	if _, ok := r.st.ClaimOf("a"); ok {
		t.Fatal("claim kept")
	}
}

// Consecutive service_down results should back off with a growing wait,
// min(ServiceBackoff·2^n, ServiceMax), before the breaker opens.
func TestServiceDownBackoffGrows(t *testing.T) {
	r := newRig(t, func(c *worker.Config) { c.Breaker.Threshold = 100 })
	r.addFiles("a")
	now := t0
	r.startJob(now)
	for i, want := range []time.Duration{1, 2, 4, 8, 16, 30, 30} {
		r.w.JobDone(r.ctx, now, worker.Result{Class: worker.ServiceDown, Dependency: worker.DepDecoder, Reason: "ffmpeg missing"})
		s, next := r.follow(now, now.Add(time.Minute))
		if got := next.Sub(now); got != want*time.Second || s.Kind != worker.Run {
			t.Fatalf("service_down %d: %v after %s, want a run after %s", i+1, s.Kind, got, want*time.Second)
		}
		now = next
	}
}

func TestGPUBreakerOpensAfterFivePreflightFailures(t *testing.T) {
	r, cs := countingRig(t, func(c *worker.Config) { c.UseGPU = true })
	r.addFiles("a")
	if err := r.st.SetMeta(r.ctx, store.MetaGPUHealth, gpu.Health{OK: false, AtMs: t0.UnixMilli(), Reason: "xid 79"}.Encode()); err != nil {
		t.Fatal(err)
	}
	s, now := r.untilPreflight(cs, t0)
	for i := 2; i <= 5; i++ {
		prev := now
		s, now = r.untilPreflight(cs, s.Until)
		if got := now.Sub(prev); got != time.Second<<(i-2) {
			t.Fatalf("preflight failure %d: %s after the one before, want %s", i, got, time.Second<<(i-2))
		}
	}
	// The GPU recovers; the breaker lets a trial through only after its
	// cool-down: the steps until then are waits, without a preflight.
	if err := r.st.SetMeta(r.ctx, store.MetaGPUHealth, gpu.Health{OK: true, AtMs: now.UnixMilli()}.Encode()); err != nil {
		t.Fatal(err)
	}
	n := cs.preflights
	if s, next := r.follow(s.Until, now.Add(time.Minute)); s.Kind != worker.LoadModels || !next.Equal(now.Add(30*time.Second)) || cs.preflights != n+1 {
		t.Fatalf("after the 5th gpu failure: %v at %s after %d preflights, want load_models at the breaker's RetryAt %s after one",
			s.Kind, next.Sub(t0), cs.preflights-n, now.Add(30*time.Second).Sub(t0))
	}
}

// A worker whose every cached candidate went to someone else looks again
// soon instead of waiting a (growing) idle poll.
func TestAllCandidatesLostRetriesSoon(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b", "c")
	if got := r.job(at(0), time.Second, worker.Result{Tags: map[string]string{"k": "v"}}); got != "a" {
		t.Fatalf("first job %s", got)
	}
	for _, k := range []string{"b", "c"} { // another worker takes the rest
		if _, err := r.st.Claim(r.ctx, store.Claim{FileKey: k, WorkerID: "other/w", ClaimedAt: at(time.Second), LeaseUntil: at(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	s := r.wantStep(at(2*time.Second), worker.Wait)
	if d := s.Until.Sub(at(2 * time.Second)); d > worker.ConflictRetry {
		t.Errorf("waits %s after losing every candidate, want <= %s", d, worker.ConflictRetry)
	}
	// Nothing left at all now: the idle poll starts at its minimum (it was
	// not grown by the lost race).
	s = r.wantStep(s.Until, worker.Wait)
	if d := s.Until.Sub(at(2*time.Second + worker.ConflictRetry)); d > time.Second {
		t.Errorf("first idle wait %s, want the minimum idle poll (1s)", d)
	}
	if n := len(r.ev.of(event.ClaimConflict)); n != 2 {
		t.Errorf("%d conflicts recorded, want 2", n)
	}
}

// A job that rewrote its file hands the file's new size and mtime to the
// store with the completion (store.Completion.Rewritten), so that the next
// scan does not take the job's own write for a change.
func TestCompletionCarriesRewrite(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	res := ok()
	res.Rewritten = &store.Stat{Size: 4321, MtimeMs: 99}
	r.job(t0, time.Second, res)
	if f := r.file("a"); !f.Tagged || f.Size != 4321 || f.MtimeMs != 99 {
		t.Fatalf("file after a rewriting job = %+v", f)
	}
}

// A file that a scan found changed while its job ran is not completed with
// the old content's result: the completion names the size and mtime the
// job claimed, the store refuses it, the result is discarded, and the next
// claim analyses the new content. Before, the file was marked tagged and
// its new content never analysed.
// rescanChanged records what a scan records for a file whose content
// changed: a new size and mtime (its tagging state reset).
func (r *rig) rescanChanged(key string) {
	r.t.Helper()
	changed := r.file(key)
	changed.Size, changed.MtimeMs = 99, 2
	if _, err := r.st.UpsertFiles(r.ctx, []store.File{changed}); err != nil {
		r.t.Fatal(err)
	}
}

func TestChangedDuringJobNotCompleted(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.startJob(t0)
	r.rescanChanged("a")
	r.w.JobDone(r.ctx, at(time.Second), ok())
	if f := r.file("a"); f.Tagged || !f.NeedsTagging {
		t.Fatalf("changed file after the old content's job: %+v", f)
	}
	if _, held := r.st.ClaimOf("a"); held {
		t.Fatal("claim kept")
	}
	if js := r.startJob(at(2 * time.Second)); js.Job.FileKey != "a" {
		t.Fatalf("next job %+v, want a again", js.Job)
	}
}

// lostReplies is a store whose claim inserts, while lose is set, are made
// but answered with a fault, as a store that timed out after committing.
type lostReplies struct {
	*memstore.Store
	lose bool
}

func (s *lostReplies) Claim(ctx context.Context, c store.Claim) (store.File, error) {
	f, err := s.Store.Claim(ctx, c)
	if s.lose && err == nil {
		return store.File{}, memstore.ErrSlow
	}
	return f, err
}

func TestClaimWithoutAnswerReleased(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b")
	lossy := &lostReplies{Store: r.st, lose: true}
	w, err := worker.New(worker.DefaultConfig(comp, wid), lossy, r.ev)
	if err != nil {
		t.Fatal(err)
	}
	r.w = w
	s := r.wantStep(t0, worker.Wait)
	if c, ok := r.st.ClaimOf("a"); !ok || c.WorkerID != wid {
		t.Fatalf("the lost answer's claim is not in the store: %+v %v", c, ok)
	}
	lossy.lose = false
	// The release comes before anything else; the file is then claimed
	// again, in key order, as if nothing had happened.
	r.wantStep(s.Until, worker.LoadModels)
	rel := r.ev.of(event.Release)
	if len(rel) != 1 || rel[0].File != "a" || rel[0].T != s.Until {
		t.Fatalf("release events = %+v, want one of a at %s", rel, s.Until.Sub(t0))
	}
	if key, held := r.w.Holding(); !held || key != "a" {
		t.Fatalf("holding %q %v, want a", key, held)
	}
	if f := r.file("a"); f.Attempts != 0 || f.Failed || f.LastError != "" {
		t.Fatalf("the release changed the file: %+v", f)
	}
}

func TestClaimFaultWithoutClaimReleasesNothing(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	lossy := &lostReplies{Store: r.st}
	w, err := worker.New(worker.DefaultConfig(comp, wid), &faultyClaims{lostReplies: lossy}, r.ev)
	if err != nil {
		t.Fatal(err)
	}
	r.w = w
	s := r.wantStep(t0, worker.Wait)
	r.wantStep(s.Until, worker.LoadModels)
	if rel := r.ev.of(event.Release); len(rel) != 0 {
		t.Fatalf("release events for a claim never made: %+v", rel)
	}
}

// faultyClaims fails the first claim insert without making it.
type faultyClaims struct {
	*lostReplies
	failed bool
}

func (s *faultyClaims) Claim(ctx context.Context, c store.Claim) (store.File, error) {
	if !s.failed {
		s.failed = true
		return store.File{}, memstore.ErrDown
	}
	return s.lostReplies.Claim(ctx, c)
}

// goneAtCompletion is a store in which the job's file record went away
// while the job ran: Complete drops the claim and answers ErrNotFound.
type goneAtCompletion struct{ *memstore.Store }

func (s goneAtCompletion) Complete(ctx context.Context, ref store.Ref, _ store.Completion) error {
	if err := s.Release(ctx, ref, nil); err != nil {
		return err
	}
	return fmt.Errorf("complete %s: %w", ref.FileKey, store.ErrNotFound)
}

func TestFileGoneAtCompletionIsNoFault(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b")
	w, err := worker.New(worker.DefaultConfig(comp, wid), goneAtCompletion{r.st}, r.ev)
	if err != nil {
		t.Fatal(err)
	}
	r.w = w
	r.startJob(t0)
	r.w.JobDone(r.ctx, at(5*time.Second), ok())
	if n := len(r.ev.of(event.StoreError)); n != 0 {
		t.Fatalf("store errors for a file whose record went: %+v", r.ev.of(event.StoreError))
	}
	rel := r.ev.of(event.Release)
	if len(rel) != 1 || rel[0].File != "a" {
		t.Fatalf("release events = %+v, want one of a", rel)
	}
	if _, held := r.w.Holding(); held {
		t.Fatal("still holding")
	}
	if s := r.startJob(at(5 * time.Second)); s.Job.FileKey != "b" {
		t.Fatalf("next job %+v, want b", s.Job)
	}
}

func TestLeaveWhileLoading(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leave  func(*worker.Worker)
		reason string
	}{
		{"main died", (*worker.Worker).MainDied, "main process gone"},
		{"stop", (*worker.Worker).StopRequested, "stop requested"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			r.addFiles("a")
			r.wantStep(t0, worker.LoadModels)
			if _, leave := r.w.LeaveLoading(r.ctx, at(time.Second)); leave {
				t.Fatal("LeaveLoading before a stop or main death")
			}
			tc.leave(r.w)
			e, leave := r.w.LeaveLoading(r.ctx, at(2*time.Second))
			if !leave || e.Kind != worker.Exit || e.Code != 0 || e.Reason != tc.reason {
				t.Fatalf("LeaveLoading = %+v %v, want exit 0 (%s)", e, leave, tc.reason)
			}
			if _, ok := r.st.ClaimOf("a"); ok {
				t.Fatal("claim kept")
			}
			if f := r.file("a"); f.Tagged || f.Attempts != 0 || f.Failed {
				t.Fatalf("file changed: %+v", f)
			}
			if rel := r.ev.of(event.Release); len(rel) != 1 || rel[0].File != "a" {
				t.Fatalf("release events = %+v", rel)
			}
		})
	}
}

func TestLeaveWhileLoadingGivesUpARefusedRelease(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.wantStep(t0, worker.LoadModels)
	r.w.MainDied()
	r.st.SetFault(memstore.Down)
	e, leave := r.w.LeaveLoading(r.ctx, at(time.Second))
	if !leave || e.Kind != worker.Exit || e.Code != 0 {
		t.Fatalf("LeaveLoading with the store down = %+v %v, want exit 0", e, leave)
	}
	if _, held := r.w.Holding(); held {
		t.Fatal("still holding: an orphan would renew the lease")
	}
	if r.w.KeepLease(r.ctx, at(2*time.Second)) {
		t.Fatal("lease renewed after leaving")
	}
	if se := r.ev.of(event.StoreError); len(se) == 0 || se[len(se)-1].File != "a" {
		t.Fatalf("store errors = %+v, want the release given up for a", se)
	}
}

// A failure, like a completion, describes the content the job claimed: a
// file a scan found changed meanwhile does not take the old content's
// attempts, failure or checkpoint.
func TestChangedDuringJobKeepsNoFailure(t *testing.T) {
	for _, res := range []worker.Result{
		{Class: worker.Transient, Reason: "disk full", Checkpoint: `{"step":"tags"}`},
		{Class: worker.Permanent, Reason: "not audio"},
		{Class: worker.Permanent, Reason: "gone", Missing: true},
	} {
		t.Run(res.Reason, func(t *testing.T) {
			r := newRig(t, nil)
			r.addFiles("a")
			r.startJob(t0)
			r.rescanChanged("a")
			r.w.JobDone(r.ctx, at(time.Second), res)
			f := r.file("a")
			if f.Failed || f.Attempts != 0 || f.Checkpoint != "" || f.LastError != "" || !f.IsValid || !f.NeedsTagging {
				t.Fatalf("the new content took the old one's outcome: %+v", f)
			}
			if _, held := r.st.ClaimOf("a"); held {
				t.Fatal("claim kept")
			}
			if n := len(r.ev.of(event.FileFailed)) + len(r.ev.of(event.FileRetry)); n != 0 {
				t.Fatalf("%d failure events for a result not recorded", n)
			}
		})
	}
}

// A job whose models fell back to the CPU (a GPU failure after they were
// loaded on it) makes the worker unload them between jobs once they have
// run on the CPU for cache_idle_timeout and the GPU preflight passes, so
// the next job loads them on the GPU again; not while the GPU is down,
// not before the period, never with a claim held.
func TestFallbackReturnsToTheGPU(t *testing.T) {
	r := newRig(t, func(c *worker.Config) { c.UseGPU = true })
	files := make([]string, 12)
	for i := range files {
		files[i] = fmt.Sprintf("f%02d", i)
	}
	r.addFiles(files...)
	gpuAt := func(now time.Time, up bool) {
		t.Helper()
		h := gpu.Health{OK: up, AtMs: now.UnixMilli()}
		if !up {
			h.Reason = "xid 79"
		}
		if err := r.st.SetMeta(r.ctx, store.MetaGPUHealth, h.Encode()); err != nil {
			t.Fatal(err)
		}
	}
	gpuAt(t0, true)
	fellBack := ok()
	fellBack.FellBack = true
	// 0 s: the first job runs on the GPU; 10 s: the second falls back.
	r.job(t0, 10*time.Second, ok())
	r.job(at(10*time.Second), 10*time.Second, fellBack)
	fell := at(20 * time.Second)
	// Jobs go on, on the CPU, while the period runs.
	now := fell
	for i := 0; i < 5; i++ {
		gpuAt(now, true)
		r.job(now, time.Minute, fellBack)
		now = now.Add(time.Minute)
	}
	if now.Sub(fell) != 5*time.Minute || len(r.ev.of(event.ModelsUnloaded)) != 0 {
		t.Fatalf("after %s on the CPU: %d unloads, want none yet", now.Sub(fell), len(r.ev.of(event.ModelsUnloaded)))
	}
	// The period is over, but the GPU is down: the preflight backs off,
	// and nothing is unloaded.
	gpuAt(now, false)
	if s := r.wantStep(now, worker.Wait); !strings.Contains(s.Reason, "xid 79") {
		t.Fatalf("step = %+v, want a wait for the GPU", s)
	}
	if n := len(r.ev.of(event.ModelsUnloaded)); n != 0 {
		t.Fatalf("%d unloads while the GPU is down", n)
	}
	// The GPU is back: the next step unloads, before any claim.
	now = now.Add(time.Minute)
	gpuAt(now, true)
	claims := len(r.ev.of(event.Claim))
	s := r.wantStep(now, worker.UnloadModels)
	if _, held := r.w.Holding(); held || len(r.ev.of(event.Claim)) != claims {
		t.Fatal("unload asked with a claim held")
	}
	r.w.ModelsUnloaded(now)
	if u := r.ev.of(event.ModelsUnloaded); len(u) != 1 || !strings.Contains(u[0].Reason, "GPU") || u[0].Reason != s.Reason {
		t.Fatalf("unload events %+v, want one naming the return to the GPU", u)
	}
	// The next job loads the models again, and a job that does not fall
	// back keeps them where they are, for good.
	r.wantStep(now, worker.LoadModels)
	r.w.ModelsLoaded(r.ctx, now, nil)
	r.wantStep(now, worker.Run)
	r.w.JobDone(r.ctx, now.Add(time.Minute), ok())
	for i := 0; i < 3; i++ {
		now = now.Add(5 * time.Minute)
		gpuAt(now, true)
		r.job(now, time.Minute, ok())
	}
	if n := len(r.ev.of(event.ModelsUnloaded)); n != 1 {
		t.Fatalf("%d unloads, want 1: models on the GPU stay loaded", n)
	}
	// Without a GPU to return to (UseGPU off), a fallback report asks for
	// nothing.
	r = newRig(t, nil)
	r.addFiles("a", "b")
	r.job(t0, time.Second, fellBack)
	r.job(at(time.Hour), time.Second, ok())
	u := r.ev.of(event.ModelsUnloaded)
	if len(u) != 1 || u[0].Reason != "idle" {
		t.Fatalf("unloads %+v without UseGPU, want the one idle eviction of the hour between the jobs", u)
	}
}

// Model files replaced under a loaded worker (new models put in place):
// the job that notices says so (Result.ModelsChanged) and the worker
// unloads before its next claim, whether or not it runs on a GPU, so the
// next job loads the new set and records its version.
func TestModelsChangedUnloadBeforeTheNextClaim(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b", "c")
	changed := ok()
	changed.ModelsChanged = true
	r.job(t0, time.Second, ok())
	r.job(at(time.Second), time.Second, changed)
	claims := len(r.ev.of(event.Claim))
	s := r.wantStep(at(2*time.Second), worker.UnloadModels)
	if _, held := r.w.Holding(); held || len(r.ev.of(event.Claim)) != claims {
		t.Fatal("unload asked with a claim held")
	}
	r.w.ModelsUnloaded(at(2 * time.Second))
	if u := r.ev.of(event.ModelsUnloaded); len(u) != 1 || u[0].Reason != "model files changed" || s.Reason != u[0].Reason {
		t.Fatalf("unload events %+v (step %+v), want one for the changed model files", u, s)
	}
	r.wantStep(at(2*time.Second), worker.LoadModels)
	r.w.ModelsLoaded(r.ctx, at(2*time.Second), nil)
	r.wantStep(at(2*time.Second), worker.Run)
	r.w.JobDone(r.ctx, at(3*time.Second), ok())
	if n := len(r.ev.of(event.ModelsUnloaded)); n != 1 {
		t.Fatalf("%d unloads, want 1: the new models stay loaded", n)
	}
}
