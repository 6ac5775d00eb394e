package main

import (
	"context"
	"fmt"

	"github.com/nomarr/nomarr/core/store"
)

// A pause is cluster-wide and outlives whoever set it (`nomarr workers
// pause`, the API, a dashboard): a one-shot run under it would wait for
// nothing, its workers idle. So `nomarr tag` treats a pause the same at
// start and during the run: it says so, once, and exits 1 (after a
// graceful stop when its workers run); the files left are tagged by the
// next `tag` after `nomarr workers resume`.

// pauseAdvice is what `nomarr tag` says about a pause, followed by
// pauseHint.
const pauseAdvice = "the workers are paused (nomarr workers pause, the API, or the dashboard of a serve on this store)"

// pauseHint is what to run to go on after a pause, with the store flags
// this run was given (settings.again).
func pauseHint(s *settings, dir string) string {
	return fmt.Sprintf("; run `%s`, then `%s` again", s.again("workers", "resume"), s.again("tag", dir))
}

// workersPaused reads the cluster-wide pause flag; a store that cannot
// say is not taken for a pause (the run's other checks see a store down).
func workersPaused(ctx context.Context, st store.Meta) bool {
	v, ok, err := st.GetMeta(ctx, store.MetaWorkerEnabled)
	return err == nil && !store.Enabled(v, ok)
}
