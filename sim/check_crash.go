package sim

import (
	"cmp"
	"slices"
	"sort"
	"strings"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/supervisor"
)

// quarantineReason is a quarantined file's last error in w (docs/design.md §7:
// failed, reason "crashed N workers", N its quarantine_after).
func quarantineReason(w *World) string { return supervisor.QuarantineReason(w.cfg.QuarantineAfter) }

// crashModel is the checker's own model of the poison-file rule of docs/design.md
// §7: when a worker dies holding a claim, the file's crash_count goes up by
// one, and the death that brings it to quarantine_after quarantines the
// file. Any death counts (a crash, a kill for a hang, a stall, a missed
// startup or cold start), except a death during a stop of its main process
// (graceful or forced: the worker was told to go, or killed by the stop).
//
// Property, exactly: each file released by the owner because its worker
// died (a `release` with reason "worker died", whose count is the file's
// crash count after it; or such a release whose answer was lost, read from
// the store) has crash count c+1 when the death counts and c when it does
// not, c being the count before per this model; it is quarantined in that
// same release (a `quarantined` event right after it, or the store's file
// failed with reason quarantineReason) if and only if the death counts
// and c+1 >= quarantine_after. A quarantine is never reported otherwise.
//
// A death is "during a stop" when its `exit` event comes after its main
// process's `stop` event. A release that fails (store down, partition,
// lock) is retried later with the same verdict, so the verdict is taken at
// the exit. A release whose answer was lost was made: the trace has a
// fault event per file (lostreply.go), checked then against the store;
// the retry finds no claim left, but the store's receipt of the release
// answers it (store.Reply).
//
// Property, reported late: every file of a release whose answer was lost
// gets its `release` event, with the crash count the lost release left,
// and, when that release quarantined it, its `quarantined` event right
// after — once the owner hears an answer (Supervisor.Info.ReleasePending
// turns false). Only an owner that is gone (dead, killed) or that gave the
// release up (a forced stop: Supervisor.Abandoned) is excused. A retry
// whose answer is lost again repeats the fault events of what the receipt
// holds; they are not new releases.
type crashModel struct {
	count  map[string]int  // file → its crash count, per the model
	counts map[string]bool // worker id → its last death counts a crash
	due    map[string]int  // file → the crash count that must have quarantined it in this instant
	// unreported: (file, dead worker's id) → a release of it whose answer
	// was lost, and whose events have not come yet. Keyed by both: once a
	// lost release freed the file, another worker may claim it and die,
	// its release lost too, before the first owner's retry is answered.
	unreported map[lostKey]lostRelease
}

// lostKey names a lost release: the file and the dead worker's id.
type lostKey struct{ file, worker string }

// lostRelease is a release made without an answer, as the store left it.
type lostRelease struct {
	worker      string // the dead worker's id: <instance>/<component>
	count       int
	quarantined bool
}

func newCrashModel() crashModel {
	return crashModel{count: map[string]int{}, counts: map[string]bool{}, due: map[string]int{}, unreported: map[lostKey]lostRelease{}}
}

// crashKnow starts the model of a file from the store when it is first
// claimed (a store that outlived an earlier run may hold counts already).
func (c *checker) crashKnow(file string) {
	if _, ok := c.crash.count[file]; ok || file == "" {
		return
	}
	f, _ := c.w.Store.Peek(file)
	c.crash.count[file] = f.CrashCount
}

// crashExit: the owner declared a worker dead (its `exit` event).
func (c *checker) crashExit(e *event.Event) {
	c.crash.counts[e.Instance+"/"+e.Component] = !c.stopping[e.Instance]
}

// crashRelease checks the owner's release of file, claimed by the dead
// worker wid, that left the file with crash count got (quarantined: the
// release quarantined it, as far as the caller can tell; nil when the
// quarantined event is still to come).
func (c *checker) crashRelease(file, wid string, got int, quarantined *bool) {
	qa := c.w.cfg.QuarantineAfter
	prev, known := c.crash.count[file]
	counts, died := c.crash.counts[wid]
	c.crash.count[file] = got
	if !known || !died {
		if !died {
			c.violate("%s released by the owner as a dead worker's, but no death of %s was reported", file, wid)
		}
		return
	}
	want := prev
	if counts {
		want++
	}
	if got != want {
		what := "counted"
		if !counts {
			what = "not counted (a death during a stop)"
		}
		c.violate("%s released after %s died: crash count %d, want %d (was %d; the death is %s)", file, wid, got, want, prev, what)
		return
	}
	should := counts && want >= qa
	if quarantined == nil {
		if should {
			c.crash.due[file] = want
		}
		return
	}
	switch {
	case should && !*quarantined:
		c.violate("%s reached crash count %d (quarantine_after %d) after %s died, but was not quarantined", file, want, qa, wid)
	case !should && *quarantined && prev < qa:
		c.violate("%s quarantined after %s died at crash count %d, want quarantine_after %d crashes counted by deaths outside a stop", file, wid, got, qa)
	}
}

// crashQuarantined: a `quarantined` event. It must follow the release
// whose counted death brought the file to quarantine_after.
func (c *checker) crashQuarantined(e *event.Event) {
	if _, ok := c.crash.due[e.File]; !ok {
		c.violate("%s quarantined (crash count %d) without a death outside a stop bringing its count to quarantine_after %d (model: %d)",
			e.File, e.Count, c.w.cfg.QuarantineAfter, c.crash.count[e.File])
	}
	delete(c.crash.due, e.File)
}

// crashLostRelease: the owner's release of a dead worker's claims was made
// but its answer lost; the store holds its outcome, which the owner must
// report once a retry is answered. The same file and worker again: a
// retry answered from the receipt, its answer lost too.
func (c *checker) crashLostRelease(e *event.Event) {
	if e.File == "" {
		return
	}
	if _, ok := c.crash.unreported[lostKey{e.File, e.Worker}]; ok {
		return
	}
	f, _ := c.w.Store.Peek(e.File)
	q := f.Failed && f.LastError == quarantineReason(c.w)
	c.crashRelease(e.File, e.Worker, f.CrashCount, &q)
	c.crash.unreported[lostKey{e.File, e.Worker}] = lostRelease{worker: e.Worker, count: f.CrashCount, quarantined: q}
}

// crashLateRelease: a `release` of a dead worker's file; reports whether
// it is the late report of a release whose answer was lost (checked here:
// the count it left, and its quarantine due now), or a release of its own.
func (c *checker) crashLateRelease(e *event.Event) bool {
	k := lostKey{e.File, e.Worker}
	u, ok := c.crash.unreported[k]
	if !ok {
		return false
	}
	delete(c.crash.unreported, k)
	if e.Count != u.count {
		c.violate("%s: the release made without an answer after %s died left crash count %d, its late report says %d", e.File, e.Worker, u.count, e.Count)
	}
	if u.quarantined {
		c.crash.due[e.File] = u.count
	}
	return true
}

// crashUnreported: the owner of a release whose answer was lost heard an
// answer since (its release is no longer pending), so its events are due;
// an owner gone, or that gave the release up, is excused.
func (c *checker) crashUnreported() {
	if len(c.crash.unreported) == 0 {
		return
	}
	keys := make([]lostKey, 0, len(c.crash.unreported))
	for k := range c.crash.unreported {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b lostKey) int {
		return cmp.Or(strings.Compare(a.file, b.file), strings.Compare(a.worker, b.worker))
	})
	for _, k := range keys {
		f, u := k.file, c.crash.unreported[k]
		inst, comp, _ := strings.Cut(u.worker, "/")
		in := c.instance(inst)
		if in == nil || !in.alive || slices.Contains(in.node.Sup.Abandoned().WorkerIDs, u.worker) {
			delete(c.crash.unreported, k)
			continue
		}
		if info, ok := in.node.Sup.Info(comp); ok && info.ReleasePending {
			continue
		}
		delete(c.crash.unreported, k)
		what := "released"
		if u.quarantined {
			what = "quarantined"
		}
		c.violate("%s %s when %s died (crash count %d), the answer lost; the owner's release was answered since, but never reported it", f, what, u.worker, u.count)
	}
}

// crashAfterEvent: a release that brought a file to quarantine_after is
// followed, in the same instant, by its quarantine.
func (c *checker) crashAfterEvent() {
	if len(c.crash.due) == 0 {
		return
	}
	files := make([]string, 0, len(c.crash.due))
	for f := range c.crash.due {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		c.violate("%s reached crash count %d (quarantine_after %d) without being quarantined", f, c.crash.due[f], c.w.cfg.QuarantineAfter)
		delete(c.crash.due, f)
	}
}
