package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
)

// apply carries out one scheduled fault or operator action.
func (w *World) apply(f *Fault) {
	in := w.Instances[0]
	if f.Instance != "" {
		for _, x := range w.Instances {
			if x.Name == f.Instance {
				in = x
			}
		}
	}
	name, _ := f.action()
	ev := event.Event{Event: event.Fault, Instance: in.ID, Reason: name}
	switch name {
	case "crash":
		ev.Component = f.Crash
		w.record(ev)
		if p := in.procs[f.Crash]; p != nil && p.alive {
			p.killed("SIGKILL", "SIGKILL (injected crash)")
		}
	case "hang":
		ev.Component = f.Hang
		w.record(ev)
		if p := in.procs[f.Hang]; p != nil && p.alive {
			p.hung = true
			if f.HoldsLock {
				w.takeLock(p)
			}
		}
	case "gpu":
		ev.Detail = "down for " + f.For.D().String()
		w.record(ev)
		w.gpuUp = false
		w.gpuGen++
		gen := w.gpuGen
		if f.For > 0 {
			w.after(f.For.D(), func() {
				if gen != w.gpuGen {
					return // a later outage owns the recovery
				}
				w.gpuUp = true
				w.record(event.Event{Event: event.Fault, Reason: "gpu", Detail: "up"})
			})
		}
	case "store":
		ev.Detail = f.Store + " for " + f.For.D().String()
		w.record(ev)
		if f.Store == "down" {
			w.Store.SetFault(memstore.Down)
		} else {
			w.Store.SetFault(memstore.Slow)
		}
		w.storeGen++
		gen := w.storeGen
		if f.For > 0 {
			w.after(f.For.D(), func() {
				if gen != w.storeGen {
					return // a later outage owns the recovery
				}
				w.Store.SetFault(memstore.Healthy)
				w.record(event.Event{Event: event.Fault, Reason: "store", Detail: "up"})
			})
		}
	case "partition":
		host := in.Name
		ev.Detail = "store unreachable from " + host + " for " + f.For.D().String()
		w.record(ev)
		w.setPartitioned(host, true)
		w.partitionGen[host]++
		gen := w.partitionGen[host]
		if f.For > 0 {
			w.after(f.For.D(), func() {
				if gen != w.partitionGen[host] {
					return
				}
				w.setPartitioned(host, false)
				if w.check != nil {
					w.check.onHeal(host)
				}
				w.record(event.Event{Event: event.Fault, Instance: in.ID, Reason: "partition", Detail: "healed"})
			})
		}
	case "error_rate":
		ev.Detail = "store error rate for " + f.For.D().String()
		w.record(ev)
		w.Store.SetErrorRate(f.ErrorRate)
		w.rateGen++
		gen := w.rateGen
		if f.For > 0 {
			w.after(f.For.D(), func() {
				if gen == w.rateGen {
					w.Store.SetErrorRate(0)
				}
			})
		}
	case "lost_replies":
		ev.Detail = fmt.Sprintf("%g of store writes lose their answer for %s", f.LostReplies, f.For.D())
		w.record(ev)
		w.setLostReplies(f.LostReplies, f.For.D())
	case "main":
		if f.Main == "hang" {
			ev.Detail = "stopped for " + f.For.D().String()
			w.record(ev)
			in.hangMain(f.For.D())
			return
		}
		in.mainDeath("main process died")
	case "kill_instance":
		in.killTree()
	case "restart_main":
		if w.restarting[in.Name] {
			ev.Detail = "ignored: a restart of this main process is already pending"
			w.record(ev)
			return
		}
		w.restarting[in.Name] = true
		in.killTree()
		delay := f.For.D()
		if delay <= 0 {
			delay = time.Second
		}
		w.after(delay, func() { w.restartMain(in) })
	case "stop":
		w.record(ev)
		if in.alive {
			in.enter(func() { in.node.Stop(w.now) })
		}
	case "force_stop":
		w.record(ev)
		if in.alive {
			in.enter(func() { in.node.ForceStop(w.now) })
		}
	case "pause", "resume":
		w.record(ev)
		if in.alive {
			in.enter(func() { _ = in.node.SetEnabled(w.ctx, name == "resume") }) // store down: the operator sees the error and retries
		}
	case "reset":
		ev.Component = f.Reset
		w.record(ev)
		if in.alive {
			in.enter(func() { _ = in.node.Reset(w.ctx, f.Reset, w.now) })
		}
	case "inject":
		ev.Component, ev.Detail = f.Inject, f.Frame
		w.record(ev)
		if p := in.procs[f.Inject]; p != nil && p.alive && in.alive {
			b := badFrame(f.Inject, f.Frame)
			in.enter(func() { in.node.Sup.PipeData(f.Inject, p.gen, b, w.now) })
		}
	}
}

// restartMain starts a new incarnation of a main process on the same store.
func (w *World) restartMain(old *Instance) {
	delete(w.restarting, old.Name)
	in, err := newInstance(w, old.Name, old.incarnation+1)
	if err != nil {
		w.record(event.Event{Event: event.Fault, Instance: old.ID, Reason: "restart_main failed: " + err.Error()})
		return
	}
	for i, x := range w.Instances {
		if x == old {
			w.Instances[i] = in
		}
	}
	in.start()
}

// badFrame returns the bytes of an injected malformed frame.
func badFrame(comp, kind string) []byte {
	switch kind {
	case "oversized":
		return []byte("HEALTH|{\"component_id\":\"" + comp + "\",\"status\":\"ok\",\"pad\":\"" + strings.Repeat("x", 70<<10) + "\"}\n")
	case "spoofed":
		return []byte(`HEALTH|{"component_id":"worker:discovery:99","status":"ok","phase":"idle"}` + "\n")
	case "bad_json":
		return []byte(`HEALTH|{"component_id":"` + comp + `","status":` + "\n")
	case "missing_field":
		return []byte(`HEALTH|{"phase":"idle"}` + "\n")
	default:
		return []byte("Traceback (most recent call last): garbage on the pipe\n")
	}
}
