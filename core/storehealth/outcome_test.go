package storehealth

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// Classify: a semantic answer is the store answering whatever became of
// the caller's context; a fault while the context is done is the caller
// giving up, unless the context ended for the main process's own bound on
// its store calls (ErrTooSlow), which is the store too slow.
func TestClassify(t *testing.T) {
	live := context.Background()
	hungUp, cancel := context.WithCancel(live)
	cancel()
	past := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) // a deadline already passed: no timer runs
	late, cancelLate := context.WithDeadline(live, past)
	defer cancelLate()
	bound, cancelBound := context.WithDeadlineCause(live, past, ErrTooSlow)
	defer cancelBound()
	under, cancelUnder := context.WithCancel(bound) // a context derived from the bound ends for it too
	defer cancelUnder()
	locked := errors.New("database is locked")
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want Outcome
	}{
		{"success", live, nil, Answered},
		{"lost race", live, fmt.Errorf("claim: %w", store.ErrConflict), Answered},
		{"not found", live, store.ErrNotFound, Answered},
		{"fault", live, locked, Fault},
		{"success, caller gone", hungUp, nil, Answered},
		{"claim lost, caller gone", hungUp, store.ErrClaimLost, Answered},
		{"fault, caller hung up", hungUp, fmt.Errorf("set meta: %w", context.Canceled), GaveUp},
		{"fault, caller's own deadline", late, fmt.Errorf("set meta: %w", context.DeadlineExceeded), GaveUp},
		{"fault, the main process's bound", bound, fmt.Errorf("set meta: %w", context.DeadlineExceeded), Fault},
		{"fault, under the main process's bound", under, locked, Fault},
	} {
		if got := Classify(c.ctx, c.err); got != c.want {
			t.Errorf("%s: Classify = %s, want %s", c.name, got, c.want)
		}
	}
}

// A write the store answered with a semantic error while its caller's
// context ended (a release answered "claim lost" as a forced stop cut the
// calls short) is the store taking a write: it clears WritesFailing.
func TestAnsweredAfterCallerLeftClears(t *testing.T) {
	var w Watch
	w.Note("renew_leases", true, Classify(context.Background(), errors.New("database is locked")), errors.New("database is locked"), t0)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	err := fmt.Errorf("release: %w", store.ErrClaimLost)
	w.Note("release", true, Classify(gone, err), err, t0.Add(time.Second))
	if f := w.Health().WritesFailing; f != nil {
		t.Fatalf("a write the store answered left writes failing: %+v", f)
	}
}
