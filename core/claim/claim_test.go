package claim_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/claim"
	"github.com/nomarr/nomarr/core/store"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func library(t *testing.T, n int) *memstore.Store {
	t.Helper()
	st := memstore.New(1)
	var files []store.File
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("f%02d", i)
		files = append(files, store.File{Key: k, Path: "/m/" + k, Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true})
	}
	if _, err := st.UpsertFiles(context.Background(), files); err != nil {
		t.Fatal(err)
	}
	return st
}

func next(t *testing.T, c *claim.Claimer, now time.Time) claim.Result {
	t.Helper()
	r, err := c.Next(context.Background(), now)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return r
}

func TestNextClaimsInKeyOrderWithLease(t *testing.T) {
	st := library(t, 3)
	c := claim.NewClaimer(st, "i/w0", 30*time.Second, 2)
	for i, want := range []string{"f00", "f01", "f02"} {
		r := next(t, c, at(time.Duration(i)*time.Second))
		if !r.Found || r.File.Key != want || len(r.Conflicts) != 0 {
			t.Fatalf("Next %d = %+v, want %s", i, r, want)
		}
		cl, ok := st.ClaimOf(want)
		if !ok || cl.WorkerID != "i/w0" || !cl.ClaimedAt.Equal(at(time.Duration(i)*time.Second)) ||
			!cl.LeaseUntil.Equal(at(time.Duration(i)*time.Second+30*time.Second)) {
			t.Fatalf("claim = %+v %v", cl, ok)
		}
	}
	// Batch of 2: the first call discovered, the second used the cache, the third discovered again.
	r := next(t, c, at(5*time.Second))
	if r.Found || r.Discoveries != 1 {
		t.Fatalf("Next on an exhausted library = %+v", r)
	}
}

func TestTwoClaimersConflict(t *testing.T) {
	st := library(t, 5)
	a := claim.NewClaimer(st, "i/a", 30*time.Second, 3)
	b := claim.NewClaimer(st, "i/b", 30*time.Second, 3)

	rb := next(t, b, t0) // b caches [f01 f02]
	if rb.File.Key != "f00" || rb.Discoveries != 1 {
		t.Fatalf("b first = %+v", rb)
	}
	ra := next(t, a, t0) // a discovers [f01 f02 f03], takes f01
	if ra.File.Key != "f01" || len(ra.Conflicts) != 0 {
		t.Fatalf("a first = %+v", ra)
	}
	rb = next(t, b, at(time.Second)) // b's cached f01 is a's now
	if !rb.Found || rb.File.Key != "f02" || !slices.Equal(rb.Conflicts, []string{"f01"}) || rb.Discoveries != 0 {
		t.Fatalf("b second = %+v, want f02 with conflict f01 and no discovery", rb)
	}
	if cl, _ := st.ClaimOf("f01"); cl.WorkerID != "i/a" {
		t.Fatalf("f01 claim = %+v", cl)
	}
	// a's cache [f02 f03]: f02 was taken by b.
	ra = next(t, a, at(time.Second))
	if ra.File.Key != "f03" || !slices.Equal(ra.Conflicts, []string{"f02"}) {
		t.Fatalf("a second = %+v", ra)
	}
	// Every file claimed exactly once.
	claims := st.Claims()
	if len(claims) != 4 {
		t.Fatalf("claims = %+v", claims)
	}
}

func TestWholeBatchLostRediscovers(t *testing.T) {
	st := library(t, 4)
	a := claim.NewClaimer(st, "i/a", 30*time.Second, 2)
	b := claim.NewClaimer(st, "i/b", 30*time.Second, 4)
	next(t, a, t0) // a: f00, caches [f01]
	// b takes f01..f03.
	for i := 0; i < 3; i++ {
		next(t, b, t0)
	}
	// a's cache conflicts; it rediscovers and finds nothing.
	ra := next(t, a, t0)
	if ra.Found || !slices.Equal(ra.Conflicts, []string{"f01"}) || ra.Discoveries != 1 {
		t.Fatalf("a = %+v", ra)
	}
}

func TestStaleCandidateNotEligibleIsConflict(t *testing.T) {
	st := library(t, 3)
	ctx := context.Background()
	c := claim.NewClaimer(st, "i/a", 30*time.Second, 3)
	next(t, c, t0) // f00; cache [f01 f02]
	if err := st.Quarantine(ctx, "f01", "crashed a worker"); err != nil {
		t.Fatal(err)
	}
	r := next(t, c, t0)
	if r.File.Key != "f02" || !slices.Equal(r.Conflicts, []string{"f01"}) {
		t.Fatalf("Next = %+v, want f02 with f01 counted as a conflict", r)
	}
	if _, ok := st.ClaimOf("f01"); ok {
		t.Fatal("ineligible file claimed")
	}
}

func TestStoreFaultWrappedAndCacheDropped(t *testing.T) {
	st := library(t, 4)
	c := claim.NewClaimer(st, "i/a", 30*time.Second, 3)
	next(t, c, t0) // f00; cache [f01 f02]
	st.SetFault(memstore.Down)
	r, err := c.Next(context.Background(), t0)
	if err == nil || !errors.Is(err, memstore.ErrDown) || !store.IsFault(err) || r.Found {
		t.Fatalf("Next with the store down = %+v, %v", r, err)
	}
	if r.Doubtful != "f01" { // the cached candidate's insert failed
		t.Fatalf("a claim fault names %q as doubtful, want f01", r.Doubtful)
	}
	st.SetFault(memstore.Healthy)
	r = next(t, c, at(time.Second))
	if r.Discoveries != 1 {
		t.Fatalf("cached batch not dropped after a fault: %+v", r)
	}
	if r.File.Key != "f01" {
		t.Fatalf("Next after recovery = %+v, want f01", r)
	}
	// A fault on discovery is wrapped too.
	st.SetFault(memstore.Slow)
	c.Forget()
	if r, err := c.Next(context.Background(), at(2*time.Second)); !errors.Is(err, memstore.ErrSlow) || r.Doubtful != "" {
		t.Fatalf("discover fault = %+v, %v (no claim was tried: nothing doubtful)", r, err)
	}
}

func TestForgetDropsCache(t *testing.T) {
	st := library(t, 3)
	c := claim.NewClaimer(st, "i/a", 30*time.Second, 3)
	next(t, c, t0)
	c.Forget()
	if r := next(t, c, t0); r.Discoveries != 1 || r.File.Key != "f01" {
		t.Fatalf("after Forget: %+v", r)
	}
}

// lostReply makes claim inserts and answers them with a fault, as a store
// that timed out after committing.
type lostReply struct{ *memstore.Store }

func (s lostReply) Claim(ctx context.Context, cl store.Claim) (store.File, error) {
	if _, err := s.Store.Claim(ctx, cl); err != nil {
		return store.File{}, err
	}
	return store.File{}, memstore.ErrSlow
}

func TestClaimFaultNamesTheDoubtfulClaim(t *testing.T) {
	st := library(t, 2)
	c := claim.NewClaimer(lostReply{st}, "i/a", 30*time.Second, 2)
	r, err := c.Next(context.Background(), t0)
	if !errors.Is(err, memstore.ErrSlow) || r.Found || r.Doubtful != "f00" {
		t.Fatalf("Next with the claim's answer lost = %+v, %v; want Doubtful f00", r, err)
	}
	if cl, ok := st.ClaimOf("f00"); !ok || cl.WorkerID != "i/a" {
		t.Fatalf("the claim was not made: %+v %v", cl, ok)
	}
}
