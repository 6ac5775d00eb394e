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

// VectorRecheck is how long a claimer whose look for files that need a
// vector found none waits before it looks again. Such work appears
// rarely (a completion whose vector the store refused, tags reused from
// a file), and on ArangoDB a look that finds nothing walks every file of
// the model set (SQLite reads the files missing one: 0.02 ms at 100,000
// files, BenchmarkNeedsVector).
const VectorRecheck = 5 * time.Minute

// Claimer finds and claims the next file for one worker. Tagging comes
// first: only when there is none does it look for retags, then for files
// that need a vector, as Take allows (store.Jobs). It keeps the last
// discovery batch, of one kind, and tries its candidates in key order; a candidate taken by
// someone else meanwhile is a conflict (counted, not an error). Correctness
// never depends on the cached batch: the store re-checks eligibility and
// uniqueness on every claim, and the file it hands out is the one the claim
// returned, never the batch's copy.
type Claimer struct {
	lib        Source
	workerID   string
	leaseTTL   time.Duration
	batch      int
	candidates []store.File
	kind       store.JobKind // the candidates' kind
	noTagging  bool          // look for no tagging work (Take)
	retag      bool          // look for retags (Take)
	vectorSet  string        // look for files that need a vector of this model set (Take)
	vectorNext time.Time     // no look for vectors before then (VectorRecheck)
}

// Source is what a claimer reads and claims from.
type Source interface {
	store.Library
	store.Jobs
}

// NewClaimer returns a claimer for workerID (instance-qualified), which
// claims tagging work only until Take says otherwise.
func NewClaimer(lib Source, workerID string, leaseTTL time.Duration, batch int) *Claimer {
	if batch <= 0 {
		batch = DefaultBatch
	}
	return &Claimer{lib: lib, workerID: workerID, leaseTTL: leaseTTL, batch: batch}
}

// Take sets the kinds of work the claimer looks for, in this order:
// tagging (tagging), retags (retag), files tagged by vectorSet that need
// its vector ("": none). Each is looked for only when those before it
// found nothing.
func (c *Claimer) Take(tagging, retag bool, vectorSet string) {
	c.noTagging, c.retag, c.vectorSet = !tagging, retag, vectorSet
	c.candidates = nil
}

// Result is the outcome of one Next call.
type Result struct {
	File        store.File
	Found       bool
	Kind        store.JobKind // the work File was claimed for
	Conflicts   []string      // files lost to another worker, in order
	Discoveries int           // discovery queries made
	// Doubtful, with a fault, names the file whose claim insert failed
	// without an answer saying it was not made: the store may have
	// inserted it and lost the reply (a timeout, a dropped connection).
	// Such a claim would be held, and renewed by the owner, for as long as
	// the worker lives: the caller releases it (a release of a claim it
	// does not hold changes nothing).
	Doubtful string
}

// Next claims one eligible file, or reports that there is none. It makes at
// most two rounds of discovery, each of one query per kind until one finds
// work. A store fault is returned wrapped; the cached batch is then
// dropped.
func (c *Claimer) Next(ctx context.Context, now time.Time) (Result, error) {
	var r Result
	for round := 0; round < 2; round++ {
		if len(c.candidates) == 0 {
			files, kind, err := c.discover(ctx, now, &r)
			if err != nil {
				return r, err
			}
			if len(files) == 0 {
				return r, nil
			}
			c.candidates, c.kind = files, kind
		}
		for len(c.candidates) > 0 {
			f := c.candidates[0]
			c.candidates = c.candidates[1:]
			cl := store.Claim{FileKey: f.Key, WorkerID: c.workerID, ClaimedAt: now, LeaseUntil: now.Add(c.leaseTTL), Kind: c.kind}
			if c.kind == store.JobVector {
				cl.ModelSet = c.vectorSet
			}
			claimed, err := c.lib.Claim(ctx, cl)
			switch {
			case err == nil:
				// The file as claimed, not as discovered: the batch may be
				// old, and the job starts from the store's attempts and
				// checkpoint.
				r.File, r.Found, r.Kind = claimed, true, c.kind
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

// discover finds the next batch: tagging work, else retags, else files
// that need a vector, as Take allows (those at most every VectorRecheck
// while none is found); each query made counts in r.
func (c *Claimer) discover(ctx context.Context, now time.Time, r *Result) ([]store.File, store.JobKind, error) {
	if !c.noTagging {
		files, err := c.lib.Discover(ctx, now, "", c.batch)
		r.Discoveries++
		if err != nil || len(files) > 0 {
			return files, store.JobTag, wrapDiscover("discover", err)
		}
	}
	if c.retag {
		files, err := c.lib.DiscoverRetag(ctx, now, "", c.batch)
		r.Discoveries++
		if err != nil || len(files) > 0 {
			return files, store.JobRetag, wrapDiscover("discover retag", err)
		}
	}
	if c.vectorSet != "" && !now.Before(c.vectorNext) {
		files, err := c.lib.NeedsVector(ctx, now, c.vectorSet, "", c.batch)
		r.Discoveries++
		if err == nil && len(files) == 0 {
			c.vectorNext = now.Add(VectorRecheck)
		}
		return files, store.JobVector, wrapDiscover("needs vector", err)
	}
	return nil, store.JobTag, nil
}

func wrapDiscover(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("claim: %s: %w", op, err)
}

// Forget drops the cached batch (after a long pause, for instance).
func (c *Claimer) Forget() { c.candidates = nil }
