package driver

import (
	"time"

	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/supervisor"
)

// View is a read-only picture of the node's workers that the main loop
// publishes after each step, so that readers (the HTTP API, /metrics)
// never wait for a loop held up in a store call (another process holding
// the SQLite write lock for seconds, a slow ArangoDB). Its statuses are
// those at At, the loop's last step.
type View struct {
	At       time.Time
	Instance string
	Workers  []WorkerView
}

// WorkerView is one component in a View.
type WorkerView struct {
	Info   supervisor.Info
	Status health.Status
}

// View returns the last published view; nil before the loop's first step.
func (m *Main) View() *View { return m.view.Load() }

// publish takes a view of the node at now; on the loop goroutine only.
func (m *Main) publish(now time.Time) {
	sup := m.Node.Sup
	v := &View{At: now, Instance: sup.Instance()}
	for _, id := range sup.Components() {
		in, _ := sup.Info(id)
		v.Workers = append(v.Workers, WorkerView{Info: in, Status: m.Node.Status(id, now)})
	}
	m.view.Store(v)
}
