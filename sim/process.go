package sim

import (
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/frame"
	"github.com/nomarr/nomarr/core/supervisor"
	"github.com/nomarr/nomarr/core/worker"
)

type busy int

const (
	free busy = iota
	loading
	running
)

// Process is a fake worker process: it runs the production worker state
// machine, writes real encoded frames on a fake pipe every frame interval,
// and runs jobs on the fake analyzer.
type Process struct {
	in    *Instance
	comp  string
	gen   uint64
	pid   int
	wk    *worker.Worker
	alive bool
	// hung is SIGSTOP: no frames, no work, until killed.
	hung     bool
	booted   bool
	mainDead bool
	busy     busy
	job      worker.Job
	jobStart time.Time
	// jobGPU is the GPU outage count when the job started; onCPU: an
	// outage during a job moved the loaded models to the CPU, as the
	// inference adapter does (worker.Result.FellBack), until unloaded.
	jobGPU int
	onCPU  bool
	wake   uint64 // token of the pending step wake-up
	buf    []byte
}

// Alive reports whether the process runs.
func (p *Process) Alive() bool { return p.alive }

// Hung reports whether the process is stopped.
func (p *Process) Hung() bool { return p.hung }

// Worker returns the core worker the process runs (nil before boot).
func (p *Process) Worker() *worker.Worker { return p.wk }

func (p *Process) boot() {
	if !p.alive || p.hung {
		return
	}
	w := p.in.w
	wk, err := worker.New(w.cfg.Worker(p.comp, p.in.node.Sup.WorkerID(p.comp), p.in.Name, p.pid), w.storeOf(p.in.Name, nil), event.SinkFunc(w.record))
	if err != nil {
		p.exit(2, "invalid worker config: "+err.Error())
		return
	}
	p.wk, p.booted = wk, true
	if !p.in.alive {
		p.mainDead = true
		wk.MainDied()
	}
	p.frameTick()
	p.schedule(w.now)
}

// schedule queues the next Step at t, replacing any earlier wake-up.
func (p *Process) schedule(t time.Time) {
	p.wake++
	tok := p.wake
	p.in.w.at(t, func() {
		if tok == p.wake {
			p.step()
		}
	})
}

func (p *Process) step() {
	if !p.alive || p.hung || p.busy != free {
		return
	}
	w := p.in.w
	s := p.wk.Step(w.ctx, w.now)
	switch s.Kind {
	case worker.Wait:
		p.schedule(s.Until)
	case worker.LoadModels:
		p.busy = loading
		w.after(w.sc.ModelLoad(), func() {
			if !p.alive || p.hung {
				return
			}
			p.busy, p.onCPU = free, false
			p.wk.ModelsLoaded(w.ctx, w.now, nil)
			p.step()
		})
	case worker.UnloadModels:
		p.onCPU = false
		p.wk.ModelsUnloaded(w.now)
		p.schedule(w.now)
	case worker.Run:
		p.run(s.Job)
	case worker.Exit:
		p.exit(s.Code, s.Reason)
	}
}

// A job whose fence held its write back leaves tagsCheckpoint, as the
// production analyzer leaves its derived tags; resuming from it takes the
// file's job time divided by resumeDivisor.
const (
	tagsCheckpoint = `{"step":"tags"}`
	resumeDivisor  = 10
)

func (p *Process) run(job worker.Job) {
	w := p.in.w
	p.busy, p.job, p.jobStart, p.jobGPU = running, job, w.now, w.gpuGen
	spec := w.specs[job.FileKey]
	jt := w.sc.JobTime(job.FileKey)
	if job.Checkpoint == tagsCheckpoint {
		// Its tags were derived by an earlier run that its fence held
		// back: only the write into the file is left (the production
		// analyzer resumes after decoding and inference).
		jt /= resumeDivisor
	}
	switch {
	case spec.Poison:
		w.after(jt/2, func() {
			if p.alive && !p.hung && p.busy == running && p.job.FileKey == job.FileKey {
				p.killed("SIGSEGV", "crashed on "+job.FileKey+" (SIGSEGV)")
			}
		})
	case spec.Stall:
		// The job never ends and its progress never advances; frames go on.
	default:
		w.after(jt, func() {
			if !p.alive || p.hung || p.busy != running {
				return
			}
			p.busy = free
			job.Fence = func() error { return p.wk.Fence(w.ctx, w.now) }
			if w.cfg.GPU && (!w.gpuUp || w.gpuGen != p.jobGPU) {
				p.onCPU = true
			}
			r := w.analyze(job, p.in.node.Sup.WorkerID(p.comp))
			r.FellBack = p.onCPU
			p.wk.JobDone(w.ctx, w.now, r)
			p.step()
		})
	}
}

// frameTick is the frame writer: independent of the job, every interval.
func (p *Process) frameTick() {
	if !p.alive {
		return
	}
	w := p.in.w
	w.after(w.cfg.FrameInterval, p.frameTick)
	if p.hung {
		return
	}
	if !p.in.alive {
		// The write fails: the main process is gone; the worker keeps the
		// lease of the job it finishes.
		p.mainDied()
		if p.wk != nil {
			p.progress()
			p.wk.KeepLease(w.ctx, w.now)
			if s, stalled := p.wk.OrphanAbandons(w.now); stalled {
				p.exit(s.Code, s.Reason)
			}
		}
		return
	}
	p.progress()
	f := p.wk.Frame()
	p.buf = frame.Append(p.buf[:0], &f)
	p.write(p.buf)
}

// progress reports a running job's progress: it grows with time, except
// for a stalled file's.
func (p *Process) progress() {
	w := p.in.w
	if p.busy == running && !w.specs[p.job.FileKey].Stall {
		p.wk.Progress(int64(w.now.Sub(p.jobStart) / (100 * time.Millisecond)))
	}
}

// write delivers bytes on the pipe, sometimes split in two reads, as a real
// pipe may.
func (p *Process) write(b []byte) {
	in, w := p.in, p.in.w
	if len(b) > 1 && w.rng.IntN(8) == 0 {
		cut := 1 + w.rng.IntN(len(b)-1)
		in.pipeData(p, b[:cut])
		in.pipeData(p, b[cut:])
		return
	}
	in.pipeData(p, b)
}

// mainDied: control EOF. The worker finishes its job, then exits 0.
func (p *Process) mainDied() {
	if p.mainDead || !p.alive {
		return
	}
	p.mainDead = true
	if p.wk == nil {
		return // boot notices
	}
	p.wk.MainDied()
	if p.leaveLoading() {
		return
	}
	if p.busy == free && !p.hung {
		p.schedule(p.in.w.now)
	}
}

// leaveLoading: a stop or the main process's death while the models load
// releases the file and ends the process at once (worker.LeaveLoading), as
// the worker process's driver does.
func (p *Process) leaveLoading() bool {
	if p.busy != loading || p.hung {
		return false
	}
	s, leave := p.wk.LeaveLoading(p.in.w.ctx, p.in.w.now)
	if leave {
		p.exit(s.Code, s.Reason)
	}
	return leave
}

func (p *Process) signal(sig supervisor.Signal) {
	if !p.alive {
		return
	}
	if sig == supervisor.Kill {
		p.killed("SIGKILL", "SIGKILL")
		return
	}
	if p.hung || p.wk == nil {
		return // a stopped process handles SIGTERM only when continued
	}
	p.wk.StopRequested()
	if p.leaveLoading() {
		return
	}
	if p.busy == free {
		p.schedule(p.in.w.now)
	}
}

// exit ends the process with code; the owner learns of it through the OS.
func (p *Process) exit(code int, reason string) { p.end(code, "", reason) }

// killed ends the process by the signal named sig (code -1).
func (p *Process) killed(sig, reason string) { p.end(-1, sig, reason) }

func (p *Process) end(code int, sig, reason string) {
	if !p.alive {
		return
	}
	p.alive = false
	w := p.in.w
	w.dropLock(p)
	w.record(event.Event{Event: event.WorkerExit, Instance: p.in.ID, Component: p.comp, PID: p.pid, Code: event.IntPtr(code), Reason: reason})
	p.in.deliverExit(p, code, sig)
}

// analyze is the fake analyzer's answer for a finished job.
func (w *World) analyze(job worker.Job, workerID string) worker.Result {
	spec := w.specs[job.FileKey]
	w.analyses[job.FileKey]++
	if r, failed := spec.Injected(w.analyses[job.FileKey]); failed {
		return r
	}
	// A GPU that went away mid-job fails the run on CUDA; the inference
	// adapter runs it again on the CPU (adapters/inference, Models.Predict), so
	// the job completes, and the models stay on the CPU (Process.onCPU).
	// The preflight before the next claim is what sees the outage.
	// Its last step writes tags into the file: only while the claim holds.
	if err := job.Confirm(); err != nil {
		return worker.FenceFailed(err, tagsCheckpoint)
	}
	if w.check != nil {
		w.check.onWrite(job.FileKey, workerID)
	}
	return worker.Result{Tags: map[string]string{"mood-strict": "happy"}, Version: "sim-1"}
}
