package sim

import (
	"fmt"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/supervisor"
)

// Instance is one simulated main process: the production node (supervisor +
// monitor) and its fake worker processes. It implements supervisor.Processes.
type Instance struct {
	w           *World
	Name        string // node name (stable across restarts)
	ID          string // instance id: <name>:<incarnation>
	incarnation int
	node        *node.Node
	procs       map[string]*Process
	alive       bool
	tickAt      time.Time
	tickToken   uint64
	loop        loopTurns // storelock.go
}

func newInstance(w *World, name string, incarnation int) (*Instance, error) {
	in := &Instance{w: w, Name: name, ID: fmt.Sprintf("%s:%d", name, incarnation), incarnation: incarnation, procs: map[string]*Process{}}
	cfg := w.cfg.Node(in.ID, name)
	cfg.Liveness = w.liveness
	n, err := node.New(cfg, in, w.storeOf(name, in), event.SinkFunc(w.record))
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", in.ID, err)
	}
	in.node = n
	return in, nil
}

// liveness tells a main process whether the holder of a node name still
// runs: all simulated main processes share one host.
func (w *World) liveness(h node.NameHolder) node.Liveness {
	for _, in := range w.Instances {
		if in.ID == h.Instance && in.alive {
			return node.Alive
		}
	}
	return node.Gone
}

// Node exposes the production node driven by this instance.
func (in *Instance) Node() *node.Node { return in.node }

// Alive reports whether the main process is running.
func (in *Instance) Alive() bool { return in.alive }

// Process returns the current process of a component.
func (in *Instance) Process(comp string) *Process { return in.procs[comp] }

func (in *Instance) start() {
	in.alive = true
	in.node.Start(in.w.ctx, in.w.now)
	in.stopIfHalted()
	if in.w.cfg.GPU {
		in.probeGPU()
	}
	in.reschedule()
}

// probeGPU is the supervisor-side probe loop: the fake GPU's state goes into
// the production `gpu:health` cache.
func (in *Instance) probeGPU() {
	if !in.alive {
		return
	}
	reason := ""
	if !in.w.gpuUp {
		reason = "nvidia-smi: no devices found"
	}
	up := in.w.gpuUp
	in.enter(func() { _ = in.node.GPUProbed(in.w.ctx, in.w.now, up, reason) }) // a failed write leaves the cache to go stale
	in.w.after(in.w.cfg.GPUProbeInterval, in.probeGPU)
}

// stopIfHalted stops the node, as the production driver does, when its node
// name is held by another running main process.
func (in *Instance) stopIfHalted() {
	if in.node.Halted() != nil && !in.node.Sup.Stopping() {
		in.node.Stop(in.w.now)
	}
}

// reschedule makes sure a tick is queued for the node's next wake time.
func (in *Instance) reschedule() {
	if !in.alive || in.busy() {
		return // a loop held up ticks once it is free (storelock.go)
	}
	next := in.node.NextWake()
	if in.tickToken != 0 && !next.Before(in.tickAt) {
		return
	}
	in.tickToken++
	tok := in.tickToken
	in.tickAt = next
	in.w.at(next, func() {
		if !in.alive || tok != in.tickToken {
			return
		}
		in.tickToken = 0
		in.tick()
	})
}

// tick is one tick of the main loop; a loop held up by a store call ticks
// once it is free, after the events that came meanwhile (storelock.go).
func (in *Instance) tick() { in.enterTick(in.tickNow) }

// tickNow is the tick itself.
func (in *Instance) tickNow() {
	in.node.Tick(in.w.ctx, in.w.now)
	in.stopIfHalted()
	if in.node.Sup.Done() {
		// A stopped main process exits once its workers are gone, and
		// hands its node name back (a failed write leaves it to lapse).
		_ = in.node.ReleaseName(in.w.ctx, in.w.now)
		in.alive = false
		in.w.record(event.Event{Event: event.WorkerExit, Instance: in.ID, Reason: "main process stopped", Code: event.IntPtr(0)})
	}
}

// Spawn implements supervisor.Processes.
func (in *Instance) Spawn(comp string, gen uint64) (int, error) {
	w := in.w
	w.nextPID++
	p := &Process{in: in, comp: comp, gen: gen, pid: w.nextPID, alive: true}
	in.procs[comp] = p
	w.after(w.sc.BootTime(), p.boot)
	return p.pid, nil
}

// Signal implements supervisor.Processes; delivery is asynchronous.
func (in *Instance) Signal(comp string, gen uint64, sig supervisor.Signal) {
	p := in.procs[comp]
	if p == nil || p.gen != gen {
		return
	}
	in.w.after(0, func() { p.signal(sig) })
}

// deliverExit tells the owner that a process exited (pipe EOF comes with
// it): with code, or ended by the signal named sig (code -1), as the OS
// tells a real main process.
func (in *Instance) deliverExit(p *Process, code int, sig string) {
	if !in.alive {
		return
	}
	in.w.after(0, func() {
		if !in.alive {
			return
		}
		// As with real pipes: the frame pipe closes as the process exits,
		// before its parent reaps it.
		in.enter(func() {
			in.node.Sup.PipeClosed(p.comp, p.gen, in.w.now)
			if sig != "" {
				in.node.Sup.Signaled(in.w.ctx, p.comp, p.gen, sig, in.w.now)
				return
			}
			in.node.Sup.Exited(in.w.ctx, p.comp, p.gen, code, in.w.now)
		})
	})
}

// mainDeath: the main process dies; workers notice on their control pipe.
func (in *Instance) mainDeath(reason string) {
	if !in.alive {
		return
	}
	in.alive = false
	in.w.record(event.Event{Event: event.MainDeath, Instance: in.ID, Reason: reason})
	for _, id := range in.node.Sup.Components() {
		if p := in.procs[id]; p != nil && p.alive {
			p.mainDied()
		}
	}
}

// killTree: SIGKILL the main process and every worker at once.
func (in *Instance) killTree() {
	if in.alive {
		in.alive = false
		in.w.record(event.Event{Event: event.MainDeath, Instance: in.ID, Reason: "process tree killed"})
	}
	for _, id := range in.node.Sup.Components() {
		if p := in.procs[id]; p != nil && p.alive {
			p.killed("SIGKILL", "killed with the process tree")
		}
	}
}
