package sim

import "github.com/nomarr/nomarr/core/event"

// Clean worker exits (docs/design.md §8). A worker process exits 0 only to leave:
// on a stop (SIGTERM) or once its main process is gone, after finishing
// or releasing its job, or giving up its result write as an orphan. Any
// other end is an error exit (code 1: too many errors in a row, a stalled
// orphan job) or a kill. So a worker's `exit` with code 0 while its main
// process was neither stopping nor dead, per the trace, is a violation: a
// worker that gave up a result it still had a main process to keep for
// (worker.Step's pending write) would exit so, and its result would be
// lost, its file analysed again and its restart counted.

// checkCleanExit checks a worker process's own exit event.
func (c *checker) checkCleanExit(e *event.Event) {
	if e.Component == "" || e.Code == nil || *e.Code != 0 {
		return
	}
	if _, dead := c.mainDied[e.Instance]; dead || c.stopping[e.Instance] {
		return
	}
	c.violate("%s exited 0 (%s) with its main process alive and not stopping", e.Component, e.Reason)
}
