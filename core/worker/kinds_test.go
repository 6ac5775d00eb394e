package worker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/claim"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/worker"
)

// kindsRig is a rig whose worker takes retags and vectors of v1, with
// files a and b tagged by v1 (through the worker itself).
func kindsRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t, func(c *worker.Config) { c.Retag, c.VectorModelSet = true, "v1" })
	r.addFiles("a", "b")
	now := at(time.Second)
	for range 2 {
		r.job(now, time.Second, ok())
		now = now.Add(2 * time.Second)
	}
	return r
}

// TestRetagRunsWithoutModels: a retag is claimed only when there is no
// tagging work, runs without loading the models, and completes with the
// re-derived tags, which clears the mark.
func TestRetagRunsWithoutModels(t *testing.T) {
	r := kindsRig(t)
	r.w.ModelsUnloaded(at(10 * time.Second)) // as after an idle eviction
	if n, err := r.st.MarkRetag(r.ctx, []string{"a", "b"}, "v1"); err != nil || n != 2 {
		t.Fatalf("MarkRetag = %d, %v", n, err)
	}
	r.addFiles("c") // tagging work comes first
	now := at(time.Minute)
	s := r.startJob(now)
	if s.Job.FileKey != "c" || s.Job.Kind != store.JobTag {
		t.Fatalf("first job = %+v, want c's tagging", s.Job)
	}
	r.w.JobDone(r.ctx, now.Add(time.Second), ok())
	r.w.ModelsUnloaded(now.Add(time.Second))
	now = now.Add(2 * time.Second)
	s = r.wantStep(now, worker.Run) // no LoadModels step
	a := r.file("a")
	if s.Job.FileKey != "a" || s.Job.Kind != store.JobRetag || s.Job.Version != "v1" ||
		s.Job.Stored != (store.Stat{Size: a.Size, MtimeMs: a.MtimeMs}) {
		t.Fatalf("retag job = %+v", s.Job)
	}
	if r.w.ModelsCached() {
		t.Fatal("models loaded for a retag")
	}
	res := ok()
	res.Tags = map[string]string{"nom_version": "v1", "mood-strict": "happy"}
	res.Rewritten = &store.Stat{Size: 11, MtimeMs: 5}
	r.w.JobDone(r.ctx, now.Add(time.Second), res)
	got := r.file("a")
	if !got.Tagged || got.Size != 11 || got.MtimeMs != 5 || r.st.Tags("a")["mood-strict"] != "happy" {
		t.Fatalf("a after its retag = %+v, tags %v", got, r.st.Tags("a"))
	}
	if c, _ := r.st.CountJobs(r.ctx, "v1"); c.Retag != 1 {
		t.Fatalf("retags left = %d, want 1 (b)", c.Retag)
	}
	if ev := r.ev.of(event.Retagged); len(ev) != 1 || ev[0].File != "a" {
		t.Fatalf("retagged events = %+v", ev)
	}
}

// TestRetagOfChangedFileReanalyzes: a file a retag found changed since its
// tags goes back to full analysis; the worker's error count is untouched.
func TestRetagOfChangedFileReanalyzes(t *testing.T) {
	r := kindsRig(t)
	if _, err := r.st.MarkRetag(r.ctx, []string{"a"}, "v1"); err != nil {
		t.Fatal(err)
	}
	now := at(time.Minute)
	s := r.startJob(now)
	if s.Job.Kind != store.JobRetag {
		t.Fatalf("job = %+v", s.Job)
	}
	r.w.JobDone(r.ctx, now.Add(time.Second), worker.Result{Class: worker.Transient, Reanalyze: true, Reason: "changed since tagged"})
	f := r.file("a")
	if f.Tagged || !f.NeedsTagging || f.Failed || !strings.Contains(f.LastError, "changed since tagged") {
		t.Fatalf("a = %+v, want pending again", f)
	}
	if tel := r.w.Telemetry(); tel.Errors != 0 || tel.ConsecutiveErrors != 0 {
		t.Fatalf("telemetry = %+v, want no error counted", tel)
	}
	s = r.startJob(now.Add(2 * time.Second))
	if s.Job.FileKey != "a" || s.Job.Kind != store.JobTag {
		t.Fatalf("next job = %+v, want a's full analysis", s.Job)
	}
}

// TestVectorJob: with neither tagging nor retag work, a file tagged by the
// worker's model set without a vector gets one: the models run, the
// vector is put and the claim released, the file's tags untouched.
func TestVectorJob(t *testing.T) {
	r := kindsRig(t)
	before := r.file("a")
	now := at(time.Minute)
	s := r.startJob(now)
	if s.Job.FileKey != "a" || s.Job.Kind != store.JobVector || s.Job.Version != "v1" {
		t.Fatalf("job = %+v, want a's vector", s.Job)
	}
	res := worker.Result{Vector: []float32{0.6, 0.8}, Version: "v1"}
	r.w.JobDone(r.ctx, now.Add(time.Second), res)
	vs, err := r.st.TrackVectors(r.ctx, "v1", "", 0)
	if err != nil || len(vs) != 1 || vs[0].FileKey != "a" {
		t.Fatalf("vectors = %+v, %v", vs, err)
	}
	if got := r.file("a"); got != before {
		t.Fatalf("a after its vector = %+v, want %+v", got, before)
	}
	if _, held := r.st.ClaimOf("a"); held {
		t.Fatal("a's claim kept after its vector")
	}
	if ev := r.ev.of(event.Vectored); len(ev) != 1 || ev[0].File != "a" {
		t.Fatalf("vectored events = %+v", ev)
	}
	if c, _ := r.st.CountJobs(r.ctx, "v1"); c.Vector != 1 {
		t.Fatalf("vectors left = %d, want 1", c.Vector)
	}
}

// TestVectorJobFailureSkips: a vector job that fails, or answers no usable
// vector, leaves the file tagged and not failed, skipped for a while.
func TestVectorJobFailureSkips(t *testing.T) {
	r := kindsRig(t)
	now := at(time.Minute)
	r.job(now, time.Second, worker.Result{Class: worker.Transient, Reason: "decoder hiccup"})
	a := r.file("a")
	if !a.Tagged || a.Failed || !a.SkipUntil.Equal(now.Add(time.Second).Add(worker.DefaultConfig(comp, wid).TransientMax)) ||
		a.Attempts != 0 || !strings.HasPrefix(a.LastError, "vector: transient: ") {
		t.Fatalf("a after a failed vector job = %+v", a)
	}
	now = now.Add(2 * time.Second)
	key := r.job(now, time.Second, worker.Result{Version: "v1"}) // OK without a vector
	if key != "b" {
		t.Fatalf("next vector job on %s, want b (a skipped)", key)
	}
	b := r.file("b")
	if !b.Tagged || b.Failed || !b.SkipUntil.Equal(now.Add(time.Second).Add(worker.PermanentSkip)) {
		t.Fatalf("b after a vector job without a vector = %+v", b)
	}
	if vs, _ := r.st.TrackVectors(r.ctx, "v1", "", 0); len(vs) != 0 {
		t.Fatalf("vectors = %+v, want none", vs)
	}
}

// TestVectorPutRetriedWhileStoreDown: a vector the store did not take is
// put again, and the claim released, once the store answers.
func TestVectorPutRetriedWhileStoreDown(t *testing.T) {
	r := kindsRig(t)
	now := at(time.Minute)
	r.startJob(now)
	r.st.SetFault(1) // memstore.Down
	r.w.JobDone(r.ctx, now.Add(time.Second), worker.Result{Vector: []float32{1, 0}, Version: "v1"})
	r.st.SetFault(0)
	r.follow(now.Add(2*time.Second), now.Add(time.Minute)) // flushes, then runs b
	if vs, _ := r.st.TrackVectors(r.ctx, "v1", "", 0); len(vs) != 1 || vs[0].FileKey != "a" {
		t.Fatalf("vectors after the outage = %+v", vs)
	}
}

// TestNoOtherKindsByDefault: a worker not told to take retags or vectors
// claims neither (the simulator's workers, an analyzer that does neither).
func TestNoOtherKindsByDefault(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.job(at(time.Second), time.Second, ok())
	if _, err := r.st.MarkRetag(r.ctx, []string{"a"}, "v1"); err != nil {
		t.Fatal(err)
	}
	if s := r.step(at(time.Minute)); s.Kind != worker.Wait {
		t.Fatalf("step = %+v, want a wait (nothing to do)", s)
	}
}

// TestVectorLookRecheckedAfterAWhile: a look for files that need a vector
// that found none is not made again before claim.VectorRecheck, while
// tagging goes on as before; then the file tagged meanwhile without a
// vector gets its vector job.
func TestVectorLookRecheckedAfterAWhile(t *testing.T) {
	r := newRig(t, func(c *worker.Config) { c.Retag, c.VectorModelSet = true, "v1" })
	r.addFiles("a")
	res := ok()
	res.Vector = []float32{1, 0}
	r.job(at(time.Second), time.Second, res)
	first := at(3 * time.Second)
	if s := r.step(first); s.Kind != worker.Wait { // tagging, retags, vectors: none
		t.Fatalf("step = %+v, want a wait", s)
	}
	r.addFiles("b")
	s, now := r.follow(first, first.Add(time.Minute))
	if s.Kind != worker.Run || s.Job.FileKey != "b" || s.Job.Kind != store.JobTag {
		t.Fatalf("step = %+v, want b's tagging", s)
	}
	r.w.JobDone(r.ctx, now.Add(time.Second), ok()) // no vector
	now = now.Add(2 * time.Second)
	for { // the idle eviction of the models comes first, then their load
		s, now = r.follow(now, first.Add(claim.VectorRecheck+time.Minute))
		switch s.Kind {
		case worker.UnloadModels:
			r.w.ModelsUnloaded(now)
			continue
		case worker.LoadModels:
			r.w.ModelsLoaded(r.ctx, now, nil)
			continue
		}
		break
	}
	if s.Kind != worker.Run || s.Job.FileKey != "b" || s.Job.Kind != store.JobVector {
		t.Fatalf("step = %+v, want b's vector", s)
	}
	if now.Before(first.Add(claim.VectorRecheck)) {
		t.Fatalf("vector job at %s, before the recheck at %s", now.Sub(t0), first.Add(claim.VectorRecheck).Sub(t0))
	}
}

// TestPauseHoldsRetagsAndVectors: under the cluster-wide pause a worker
// claims neither a retag nor a vector job, as it claims no tagging; a
// resume lets it take them.
func TestPauseHoldsRetagsAndVectors(t *testing.T) {
	r := kindsRig(t)
	if _, err := r.st.MarkRetag(r.ctx, []string{"a"}, "v1"); err != nil {
		t.Fatal(err)
	}
	if err := r.st.SetMeta(r.ctx, store.MetaWorkerEnabled, "false"); err != nil {
		t.Fatal(err)
	}
	now := at(time.Minute)
	if s := r.step(now); s.Kind != worker.Wait || r.w.Phase() != "paused" {
		t.Fatalf("paused: step %+v, phase %s", s, r.w.Phase())
	}
	if _, held := r.st.ClaimOf("a"); held {
		t.Fatal("a claimed under the pause")
	}
	if err := r.st.SetMeta(r.ctx, store.MetaWorkerEnabled, "true"); err != nil {
		t.Fatal(err)
	}
	s := r.startJob(now.Add(2 * time.Second))
	if s.Job.FileKey != "a" || s.Job.Kind != store.JobRetag {
		t.Fatalf("after the resume: %+v, want a's retag", s.Job)
	}
}
