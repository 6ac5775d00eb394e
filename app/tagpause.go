package app

import (
	"context"

	"github.com/nomarr/nomarr/core/store"
)

// A pause is cluster-wide and outlives whoever set it (`nomarr workers
// pause`, the API, a dashboard): a one-shot run under it would wait for
// nothing, its workers idle. So `nomarr tag` treats a pause the same at
// start and during the run: it says so, once, and exits 1 (after a
// graceful stop when its workers run); the files left are tagged by the
// next `tag` after `nomarr workers resume`.

// WorkersPaused reads the cluster-wide pause flag; a store that cannot
// say is not taken for a pause (the run's other checks see a store down).
func WorkersPaused(ctx context.Context, st store.Meta) bool {
	v, ok, err := st.GetMeta(ctx, store.MetaWorkerEnabled)
	return err == nil && !store.Enabled(v, ok)
}
