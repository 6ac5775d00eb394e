// Package claim is the claim lifecycle of docs/design.md §7: discovery of eligible
// files, claim by unique insert, and the periodic conditional cleanup. Several
// workers on several instances may share one store; the store's unique claim
// key is what makes exactly one of them win a file.
package claim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// Defaults (docs/design.md §13).
const (
	DefaultLeaseTTL      = 30 * time.Second
	DefaultCleanupPeriod = 30 * time.Second
	DefaultBatch         = 8
)

// Claimer finds and claims the next file for one worker. It keeps the last
// discovery batch and tries its candidates in key order; a candidate taken by
// someone else meanwhile is a conflict (counted, not an error). Correctness
// never depends on the cached batch: the store re-checks eligibility and
// uniqueness on every claim, and the file it hands out is the one the claim
// returned, never the batch's copy.
type Claimer struct {
	lib        store.Library
	workerID   string
	leaseTTL   time.Duration
	batch      int
	candidates []store.File
}

// NewClaimer returns a claimer for workerID (instance-qualified).
func NewClaimer(lib store.Library, workerID string, leaseTTL time.Duration, batch int) *Claimer {
	if batch <= 0 {
		batch = DefaultBatch
	}
	return &Claimer{lib: lib, workerID: workerID, leaseTTL: leaseTTL, batch: batch}
}

// Result is the outcome of one Next call.
type Result struct {
	File        store.File
	Found       bool
	Conflicts   []string // files lost to another worker, in order
	Discoveries int      // discovery queries made
	// Doubtful, with a fault, names the file whose claim insert failed
	// without an answer saying it was not made: the store may have
	// inserted it and lost the reply (a timeout, a dropped connection).
	// Such a claim would be held, and renewed by the owner, for as long as
	// the worker lives: the caller releases it (a release of a claim it
	// does not hold changes nothing).
	Doubtful string
}

// Next claims one eligible file, or reports that there is none. It makes at
// most two discovery queries. A store fault is returned wrapped; the cached
// batch is then dropped.
func (c *Claimer) Next(ctx context.Context, now time.Time) (Result, error) {
	var r Result
	for round := 0; round < 2; round++ {
		if len(c.candidates) == 0 {
			files, err := c.lib.Discover(ctx, now, "", c.batch)
			r.Discoveries++
			if err != nil {
				return r, fmt.Errorf("claim: discover: %w", err)
			}
			if len(files) == 0 {
				return r, nil
			}
			c.candidates = files
		}
		for len(c.candidates) > 0 {
			f := c.candidates[0]
			c.candidates = c.candidates[1:]
			claimed, err := c.lib.Claim(ctx, store.Claim{FileKey: f.Key, WorkerID: c.workerID, ClaimedAt: now, LeaseUntil: now.Add(c.leaseTTL)})
			switch {
			case err == nil:
				// The file as claimed, not as discovered: the batch may be
				// old, and the job starts from the store's attempts and
				// checkpoint.
				r.File, r.Found = claimed, true
				return r, nil
			case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotEligible):
				r.Conflicts = append(r.Conflicts, f.Key)
			default:
				c.candidates = nil
				r.Doubtful = f.Key
				return r, fmt.Errorf("claim: claim %s: %w", f.Key, err)
			}
		}
	}
	return r, nil
}

// Forget drops the cached batch (after a long pause, for instance).
func (c *Claimer) Forget() { c.candidates = nil }
