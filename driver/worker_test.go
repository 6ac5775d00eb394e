package driver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/frame"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/worker"
	"github.com/nomarr/nomarr/internal/eventually"
)

const frameEvery = 10 * time.Millisecond

// gateAnalyzer reports each job it starts on started, then holds it until
// release is closed; then, like the production analyzer before its tag
// write, it calls the job's fence.
type gateAnalyzer struct {
	started chan string
	release chan struct{}
}

func newGate() *gateAnalyzer {
	return &gateAnalyzer{started: make(chan string, 8), release: make(chan struct{})}
}

func (g *gateAnalyzer) Analyze(_ context.Context, job worker.Job, progress func(int64)) worker.Result {
	g.started <- job.FileKey
	progress(1)
	<-g.release
	if err := job.Confirm(); err != nil {
		return worker.FenceFailed(err, "")
	}
	return worker.Result{Tags: map[string]string{"nom_version": "v"}, Version: "v"}
}

type noModels struct{}

func (noModels) Load(context.Context) error { return nil }
func (noModels) Unload()                    {}

// frames collects what the worker writes on its frame pipe, and
// announces each frame.
type frames struct {
	changes
	mu  sync.Mutex
	got []frame.Frame
	bad int
}

func (f *frames) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fr, err := frame.Parse(sc.Bytes())
		f.mu.Lock()
		if err != nil {
			f.bad++
		} else {
			f.got = append(f.got, fr)
		}
		f.mu.Unlock()
		f.changed()
	}
}

// during counts the frames that name job as the current job.
func (f *frames) during(job string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, fr := range f.got {
		if fr.CurrentJob == job && fr.Phase == health.Processing {
			n++
		}
	}
	return n
}

// rig is one worker loop run in this process over an in-memory store with
// files a and b. The store is read only after the loop has returned.
type rig struct {
	t    *testing.T
	st   *memstore.Store
	an   *gateAnalyzer
	logs *watchedLog
	code chan int
}

// start runs the loop over the in-memory store, or over what wrap makes of it.
func start(t *testing.T, wio WorkerIO, wrap ...func(*memstore.Store) store.Store) *rig {
	t.Helper()
	return startWith(t, wio, nil, wrap...)
}

// startWith is start with the worker's configuration changed by mod.
func startWith(t *testing.T, wio WorkerIO, mod func(*worker.Config), wrap ...func(*memstore.Store) store.Store) *rig {
	t.Helper()
	return startModels(t, wio, noModels{}, mod, wrap...)
}

// startModels is startWith with the models the worker loads.
func startModels(t *testing.T, wio WorkerIO, models worker.Models, mod func(*worker.Config), wrap ...func(*memstore.Store) store.Store) *rig {
	t.Helper()
	st := memstore.New(1)
	files := []store.File{
		{Key: "a", Path: "/music/a.mp3", Size: 10, MtimeMs: 1, NeedsTagging: true, IsValid: true},
		{Key: "b", Path: "/music/b.mp3", Size: 10, MtimeMs: 1, NeedsTagging: true, IsValid: true},
	}
	if _, err := st.UpsertFiles(context.Background(), files); err != nil {
		t.Fatal(err)
	}
	cfg := worker.DefaultConfig("worker:discovery:0", "i/worker:discovery:0")
	cfg.DiscoverBatch, cfg.IdlePollMin, cfg.IdlePollMax = 1, frameEvery, 5*frameEvery
	if mod != nil {
		mod(&cfg)
	}
	var port store.Store = st
	for _, f := range wrap {
		port = f(st)
	}
	w, err := worker.New(cfg, port, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, st: st, an: newGate(), logs: &watchedLog{}, code: make(chan int, 1)}
	log := slog.New(slog.NewTextHandler(r.logs, nil))
	go func() { r.code <- RunWorker(context.Background(), w, r.an, models, wio, nil, frameEvery, log) }()
	return r
}

// jobStarted waits for the analyzer to start a job and returns its file.
func (r *rig) jobStarted() string {
	r.t.Helper()
	select {
	case k := <-r.an.started:
		return k
	case <-time.After(10 * time.Second):
		r.t.Fatal("no job started")
		return ""
	}
}

// waitLog waits until the worker has logged msg.
func (r *rig) waitLog(msg string) {
	r.t.Helper()
	defer func() {
		if r.t.Failed() {
			r.t.Logf("log:\n%s", r.logs.String())
		}
	}()
	r.logs.until(r.t, 10*time.Second, "the worker to log "+strconv.Quote(msg), func() bool { return strings.Contains(r.logs.String(), msg) })
}

// exit waits for RunWorker to return and checks its code.
func (r *rig) exit(want int) {
	r.t.Helper()
	select {
	case code := <-r.code:
		if code != want {
			r.t.Fatalf("exit code %d, want %d; log:\n%s", code, want, r.logs.String())
		}
	case <-time.After(10 * time.Second):
		r.t.Fatalf("RunWorker did not return; log:\n%s", r.logs.String())
	}
}

// finishedOnlyA: the job under way (a) was completed and nothing else was
// claimed or tagged.
func (r *rig) finishedOnlyA() {
	r.t.Helper()
	if n := len(r.st.Claims()); n != 0 {
		r.t.Errorf("%d claims left", n)
	}
	for _, f := range r.st.Files() {
		switch {
		case f.Key == "a" && (!f.Tagged || f.NeedsTagging):
			r.t.Errorf("a: the job under way was not completed: %+v", f)
		case f.Key == "b" && (f.Tagged || !f.NeedsTagging):
			r.t.Errorf("b: claimed and tagged after the worker was told to stop: %+v", f)
		}
	}
	if r.st.TagWrites["a"] != 1 {
		r.t.Errorf("a tagged %d times", r.st.TagWrites["a"])
	}
}

// The frame writer does not wait for the job: a job that runs for many
// frame intervals keeps framing, naming the job. SIGTERM (Term) lets the
// job finish, claims nothing more and exits 0.
func TestRunWorkerFramesDuringJobAndStops(t *testing.T) {
	pr, pw := io.Pipe()
	fr := &frames{}
	go fr.read(pr)
	term := make(chan struct{})
	r := start(t, WorkerIO{Frames: pw, Term: term})
	if k := r.jobStarted(); k != "a" {
		t.Fatalf("first job %q", k)
	}
	fr.until(t, 10*time.Second, "5 frames during the job", func() bool { return fr.during("a") >= 5 })
	close(term)
	r.waitLog("stop requested") // seen while the job still runs
	close(r.an.release)
	r.exit(0)
	pw.Close()
	r.finishedOnlyA()
	if fr.bad != 0 {
		t.Errorf("%d frames did not parse", fr.bad)
	}
}

// EOF on the control pipe is the main process's death: the worker finishes
// the job under way, completes it, claims nothing more and exits 0.
func TestRunWorkerControlEOFFinishesJob(t *testing.T) {
	cr, cw := io.Pipe()
	r := start(t, WorkerIO{Frames: io.Discard, Control: cr})
	r.jobStarted()
	cw.Close()
	r.waitLog("control pipe closed")
	close(r.an.release)
	r.exit(0)
	r.finishedOnlyA()
}

// hungLoad is a model load that never returns (a wedged GPU driver) until
// done is closed; loading is closed when it starts.
type hungLoad struct{ loading, done chan struct{} }

func (h hungLoad) Load(context.Context) error {
	close(h.loading)
	<-h.done
	return nil
}
func (hungLoad) Unload() {}

// A stop or the main process's death while the models load releases the
// claimed file and ends the loop at once, the load still hanging: the job
// never started, and an orphan's own lease keeping would otherwise hold
// the file for as long as the load hangs.
func TestRunWorkerLeavesAHungModelLoad(t *testing.T) {
	for _, how := range []string{"control EOF", "stop"} {
		t.Run(how, func(t *testing.T) {
			cr, cw := io.Pipe()
			term := make(chan struct{})
			load := hungLoad{loading: make(chan struct{}), done: make(chan struct{})}
			defer close(load.done)
			r := startModels(t, WorkerIO{Frames: io.Discard, Control: cr, Term: term}, load, nil)
			select {
			case <-load.loading:
			case <-time.After(10 * time.Second):
				t.Fatal("the models were never loaded")
			}
			if how == "stop" {
				close(term)
			} else {
				cw.Close()
			}
			r.exit(0)
			if n := len(r.st.Claims()); n != 0 {
				t.Fatalf("%d claims left: %+v", n, r.st.Claims())
			}
			for _, f := range r.st.Files() {
				if f.Tagged || f.Attempts != 0 || f.Failed {
					t.Errorf("%s changed: %+v", f.Key, f)
				}
			}
			cw.Close()
		})
	}
}

// RunWorker leaves nothing running once it returns: a stop that never
// came does not keep its watcher waiting (a process that runs workers in
// turn, or a test, would gather one per worker).
func TestRunWorkerLeavesNoGoroutine(t *testing.T) {
	// The goroutines of RunWorker, by id: those left by earlier tests on
	// purpose (a frame write blocked forever), or still ending, are
	// counted out by theirs.
	running := func() map[string]string {
		buf := make([]byte, 1<<20)
		out := map[string]string{}
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if id, _, ok := strings.Cut(strings.TrimPrefix(g, "goroutine "), " "); ok && strings.Contains(g, "driver.RunWorker") {
				out[id] = g
			}
		}
		return out
	}
	before := running()
	cr, cw := io.Pipe()
	r := start(t, WorkerIO{Frames: io.Discard, Control: cr, Term: make(chan struct{})})
	r.jobStarted()
	cw.Close()
	close(r.an.release)
	r.exit(0)
	// Nothing announces a goroutine's end: the stacks are polled.
	var left []string
	defer func() {
		if t.Failed() {
			t.Logf("goroutines of RunWorker still running after it returned:\n%s", strings.Join(left, "\n\n"))
		}
	}()
	eventually.True(t, 5*time.Second, "RunWorker's goroutines to end once it returned", func() bool {
		left = left[:0]
		for id, g := range running() {
			if _, ok := before[id]; !ok {
				left = append(left, g)
			}
		}
		return len(left) == 0
	})
}

// An orphan whose job never returns (a hung inference call) and shows no
// progress for stall_after abandons it: RunWorker returns 1 at once, the job
// still running, and the claim is left for its lease to expire — nothing
// else is claimed.
func TestRunWorkerOrphanAbandonsHungJob(t *testing.T) {
	cr, cw := io.Pipe()
	r := startWith(t, WorkerIO{Frames: io.Discard, Control: cr}, func(c *worker.Config) { c.StallAfter = 20 * frameEvery })
	defer close(r.an.release) // the hung job's goroutine ends with the test
	r.jobStarted()
	cw.Close()
	r.waitLog("control pipe closed")
	r.exit(1)
	if !strings.Contains(r.logs.String(), "abandoning the current job") {
		t.Errorf("no log of the abandonment:\n%s", r.logs.String())
	}
	claims := r.st.Claims()
	if len(claims) != 1 || claims[0].FileKey != "a" {
		t.Fatalf("claims %+v, want a's, left to expire", claims)
	}
}

// failAfter fails every write once failing is set.
type failAfter struct {
	mu      sync.Mutex
	failing bool
}

func (f *failAfter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing {
		return 0, errors.New("broken pipe")
	}
	return len(p), nil
}

// A failed frame write is the main process's death too.
func TestRunWorkerFrameWriteErrorFinishesJob(t *testing.T) {
	w := &failAfter{}
	r := start(t, WorkerIO{Frames: w})
	r.jobStarted()
	w.mu.Lock()
	w.failing = true
	w.mu.Unlock()
	r.waitLog("frame write failed: broken pipe")
	close(r.an.release)
	r.exit(0)
	r.finishedOnlyA()
}

// blockAfter blocks every write after the first n, forever: a frame pipe
// whose reader (a stopped main process) no longer reads. blocked is
// closed when the first write blocks.
type blockAfter struct {
	mu      sync.Mutex
	n       int
	blocked chan struct{}
}

func (b *blockAfter) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.n--
	block := b.n < 0
	if b.n == -1 {
		close(b.blocked)
	}
	b.mu.Unlock()
	if block {
		select {}
	}
	return len(p), nil
}

// A frame write that never returns does not keep the worker from exiting:
// it waits at most a second for the frame writer.
func TestRunWorkerExitsPastBlockedFrameWrite(t *testing.T) {
	term := make(chan struct{})
	w := &blockAfter{n: 2, blocked: make(chan struct{})}
	r := start(t, WorkerIO{Frames: w, Term: term})
	r.jobStarted()
	select {
	case <-w.blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("the frame writer never blocked")
	}
	close(term)
	r.waitLog("stop requested")
	close(r.an.release)
	began := time.Now()
	r.exit(0)
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("exit took %v with the frame writer blocked", d)
	}
	r.finishedOnlyA()
}

// holdingStore holds every GetMeta (read before each claim) while hold is
// set: a store call that takes long, like one waiting out a timeout.
type holdingStore struct {
	*memstore.Store
	mu      sync.Mutex
	hold    chan struct{}
	entered chan struct{}
}

func (s *holdingStore) GetMeta(ctx context.Context, key string) (string, bool, error) {
	s.mu.Lock()
	h := s.hold
	s.mu.Unlock()
	if h != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		<-h
	}
	return s.Store.GetMeta(ctx, key)
}

// Frames go on while the loop waits on a store call: the supervisor must
// not take a worker held up by a slow store for a hung one.
func TestRunWorkerFramesWhileStoreCallWaits(t *testing.T) {
	pr, pw := io.Pipe()
	fr := &frames{}
	go fr.read(pr)
	term := make(chan struct{})
	held := &holdingStore{entered: make(chan struct{}, 1)}
	r := start(t, WorkerIO{Frames: pw, Term: term}, func(m *memstore.Store) store.Store {
		held.Store = m
		return held
	})
	r.jobStarted()
	hold := make(chan struct{})
	held.mu.Lock()
	held.hold = hold
	held.mu.Unlock()
	close(r.an.release) // a completes; the next claim reads worker_enabled and waits
	select {
	case <-held.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop never called GetMeta")
	}
	count := func() int {
		fr.mu.Lock()
		defer fr.mu.Unlock()
		return len(fr.got)
	}
	// Five more frames while the call still waits (none would come if the
	// writer waited for it); a busy machine may take longer than 5 intervals.
	before := count()
	fr.until(t, 5*time.Second, "5 frames while a store call waits", func() bool { return count()-before >= 5 })
	held.mu.Lock()
	held.hold = nil
	held.mu.Unlock()
	close(hold)
	close(term)
	r.exit(0)
	pw.Close()
}

// lostClaimOf answers every KeepClaim and Release of one file with
// ErrClaimLost, as a store whose cleanup gave the claim to another host
// would.
type lostClaimOf struct {
	*memstore.Store
	key string
}

func (s lostClaimOf) Release(ctx context.Context, ref store.Ref, upd *store.FileUpdate) error {
	if ref.FileKey == s.key {
		return store.ErrClaimLost
	}
	return s.Store.Release(ctx, ref, upd)
}

func (s lostClaimOf) KeepClaim(ctx context.Context, ref store.Ref, until time.Time) error {
	if ref.FileKey == s.key {
		return store.ErrClaimLost
	}
	return s.Store.KeepClaim(ctx, ref, until)
}

// The driver binds each job's fence to the worker core: a job whose claim
// the store says is lost writes nothing (a stays untagged, its claim left
// to the holder the store knows), and the worker goes on with the next
// file, whose fence confirms.
func TestRunWorkerJobFenceAsksTheStore(t *testing.T) {
	term := make(chan struct{})
	r := start(t, WorkerIO{Frames: io.Discard, Term: term}, func(m *memstore.Store) store.Store {
		return lostClaimOf{Store: m, key: "a"}
	})
	close(r.an.release)
	for _, want := range []string{"a", "b"} {
		if k := r.jobStarted(); k != want {
			t.Fatalf("job %q, want %q", k, want)
		}
	}
	close(term)
	r.exit(0)
	files := map[string]store.File{}
	for _, f := range r.st.Files() {
		files[f.Key] = f
	}
	if a := files["a"]; a.Tagged || r.st.TagWrites["a"] != 0 {
		t.Errorf("a tagged behind a lost claim: %+v", a)
	}
	if b := files["b"]; !b.Tagged || r.st.TagWrites["b"] != 1 {
		t.Errorf("b not tagged once after its fence confirmed: %+v (%d writes)", b, r.st.TagWrites["b"])
	}
	if claims := r.st.Claims(); len(claims) != 1 || claims[0].FileKey != "a" {
		t.Errorf("claims %+v, want a's only, left to its holder", claims)
	}
}

// pausable answers worker_enabled "false" once paused is set, as a store
// whose flag another instance cleared; the test sets it while the loop
// runs, so only the flag is shared.
type pausable struct {
	*memstore.Store
	paused atomic.Bool
}

func (s *pausable) GetMeta(ctx context.Context, key string) (string, bool, error) {
	if key == store.MetaWorkerEnabled && s.paused.Load() {
		return "false", true, nil
	}
	return s.Store.GetMeta(ctx, key)
}

// An idle worker's frames show paused within about paused_poll of a pause,
// though its next discovery is a minute away: the loop reads the flag
// between discoveries (worker.Step).
func TestRunWorkerIdleShowsAPause(t *testing.T) {
	pr, pw := io.Pipe()
	fr := &frames{}
	go fr.read(pr)
	term := make(chan struct{})
	ps := &pausable{}
	r := startWith(t, WorkerIO{Frames: pw, Term: term}, func(c *worker.Config) {
		c.IdlePollMin, c.IdlePollMax, c.PausedPoll = time.Minute, time.Minute, 5*frameEvery
	}, func(m *memstore.Store) store.Store {
		ps.Store = m
		return ps
	})
	close(r.an.release) // a and b complete; then nothing is left
	phase := func() health.Phase {
		fr.mu.Lock()
		defer fr.mu.Unlock()
		if len(fr.got) == 0 {
			return ""
		}
		return fr.got[len(fr.got)-1].Phase
	}
	waitPhase := func(want health.Phase, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		fr.until(t, within, "frames showing "+string(want), func() bool { return phase() == want })
		return time.Since(start)
	}
	waitPhase(health.Idle, 10*time.Second)
	ps.paused.Store(true)
	// paused_poll (50 ms) and a frame interval; a busy machine may take
	// longer, the next discovery comes only a minute later.
	took := waitPhase(health.Paused, 5*time.Second)
	close(term)
	r.exit(0)
	pw.Close()
	t.Logf("paused shown %s after the pause", took)
}
