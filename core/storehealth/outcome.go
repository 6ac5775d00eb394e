package storehealth

import (
	"context"
	"errors"

	"github.com/nomarr/nomarr/core/store"
)

// Outcome is what one store call's result says of the store.
type Outcome uint8

const (
	// Answered: the store took the call, or answered it with a semantic
	// error (store.IsFault is false: a lost race, a file not found).
	Answered Outcome = iota
	// Fault: the call failed as a store fault, the store itself unusable
	// or too slow to answer.
	Fault
	// GaveUp: the call failed because its caller's context ended (an API
	// client that hung up, a forced stop cutting the calls short): it says
	// nothing of the store.
	GaveUp
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case Answered:
		return "answered"
	case Fault:
		return "fault"
	case GaveUp:
		return "gave_up"
	}
	return "unknown"
}

// ErrTooSlow is the cause of a context the main process bounds its own
// store calls with (its store-call deadline, a forced stop's budget): a
// call cut short by it failed because the store did not answer in time.
var ErrTooSlow = errors.New("the store did not answer in time")

// Classify says what a call made with ctx that returned err says of the
// store. A semantic answer is Answered whatever became of ctx: the store
// answered. A fault while ctx is done is GaveUp, unless ctx ended for
// ErrTooSlow (the main process's own bound), which is a Fault.
func Classify(ctx context.Context, err error) Outcome {
	switch {
	case !store.IsFault(err):
		return Answered
	case ctx.Err() != nil && !errors.Is(context.Cause(ctx), ErrTooSlow):
		return GaveUp
	}
	return Fault
}
