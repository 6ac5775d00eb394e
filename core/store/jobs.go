package store

import (
	"context"
	"time"
)

// JobKind is the kind of work a claim is for. A claim names its kind and
// the store checks, as it inserts the claim and as its cleanup re-checks
// it, that the file is work of that kind; every kind goes through the same
// claims, leases, fence and releases.
type JobKind string

const (
	// JobTag is a full analysis of a file that needs tagging
	// (File.EligibleIgnoringClaims).
	JobTag JobKind = ""
	// JobRetag re-derives the tags of a tagged file, marked by MarkRetag,
	// from its stored scores, without the models (docs/decisions/tag-writing.md).
	JobRetag JobKind = "retag"
	// JobVector makes the track vector of a file tagged by the claim's
	// model set that has none of that set (NeedsVector,
	// docs/decisions/similarity.md).
	JobVector JobKind = "vector"
)

// Known reports whether k is one of the kinds above.
func (k JobKind) Known() bool { return k == JobTag || k == JobRetag || k == JobVector }

// ClaimableFor reports whether f is work of kind for a claim at time now,
// before the claim check: retag marks whether f is marked for a retag,
// hasVector whether it has a vector of modelSet. The rule every store
// applies in Claim (tag: EligibleIgnoringClaims; retag: marked, tagged,
// valid, not failed, retry and skip times passed; vector: tagged by
// modelSet, valid, not failed, retry and skip times passed, no vector of
// modelSet).
func ClaimableFor(kind JobKind, modelSet string, f *File, retag, hasVector bool, now time.Time) bool {
	switch kind {
	case JobTag:
		return f.EligibleIgnoringClaims(now)
	case JobRetag:
		return retag && f.Tagged && f.IsValid && !f.Failed && !f.NextRetryAt.After(now) && !f.SkipUntil.After(now)
	case JobVector:
		return modelSet != "" && f.Tagged && f.TaggedVersion == modelSet && !hasVector && f.IsValid && !f.Failed &&
			!f.NextRetryAt.After(now) && !f.SkipUntil.After(now)
	}
	return false
}

// KeepsClaim reports whether a claim of kind on f is still work, as
// CleanupClaims re-checks it (times and vectors aside: a waiting file's
// claim is its job's until released, and a vector job puts its vector
// before it releases): tag: needs tagging, valid, not failed; retag:
// marked, tagged, valid, not failed; vector: tagged, valid, not failed.
func KeepsClaim(kind JobKind, f *File, retag bool) bool {
	switch kind {
	case JobTag:
		return f.NeedsTagging && f.IsValid && !f.Failed
	case JobRetag:
		return retag && f.Tagged && f.IsValid && !f.Failed
	case JobVector:
		return f.Tagged && f.IsValid && !f.Failed
	}
	return false
}

// JobCounts counts the work of the kinds other than tagging.
type JobCounts struct {
	// Retag: valid, tagged, unfailed files marked for a retag.
	Retag int
	// Vector: valid, tagged, unfailed files tagged by the model set asked
	// for that have no vector of it (NeedsVector's files, waiting or not,
	// claimed or not).
	Vector int
}

// Jobs is the work other than tagging: retags and vector backfills.
//
// A retag mark lives beside needs_tagging; only a tagged file's mark is
// work, and a completion of the file (of any kind) clears it.
type Jobs interface {
	// MarkRetag marks for a retag the files among keys that are tagged by
	// version, valid, not failed and not marked yet, each checked in the
	// same operation, and returns how many it marked; unknown keys, a
	// repeated key and an empty version change nothing.
	MarkRetag(ctx context.Context, keys []string, version string) (int, error)
	// DiscoverRetag returns up to limit files claimable for a retag
	// (ClaimableFor JobRetag) and unclaimed, in key order, with keys
	// greater than after.
	DiscoverRetag(ctx context.Context, now time.Time, after string, limit int) ([]File, error)
	// NeedsVector returns up to limit files claimable for a vector of
	// modelSet (ClaimableFor JobVector) and unclaimed, in key order, with
	// keys greater than after; none for an empty modelSet.
	NeedsVector(ctx context.Context, now time.Time, modelSet, after string, limit int) ([]File, error)
	// CountJobs counts the retags and the vectors of modelSet still to do.
	CountJobs(ctx context.Context, modelSet string) (JobCounts, error)
}
