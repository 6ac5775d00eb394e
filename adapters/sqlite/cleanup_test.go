package sqlite

import (
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// TestCleanupClaimsReportsDeletesWhenSettlingFails: the claims' deletes
// commit before settleWaits runs; when settling then fails, the deleted
// claims come back with the error, so that the caller still reports them
// (they are gone whatever the error says).
func TestCleanupClaimsReportsDeletesWhenSettlingFails(t *testing.T) {
	s := openT(t, tempDB(t))
	seed(t, s, "a", "w")
	if _, err := s.Claim(bg, store.Claim{FileKey: "a", WorkerID: "i/w0", ClaimedAt: t0, LeaseUntil: at(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	// w waits for its retry, which has ended by the cleanup: settling it
	// is the cleanup's housekeeping, refused here by a trigger.
	if _, err := s.Claim(bg, store.Claim{FileKey: "w", WorkerID: "i/w1", ClaimedAt: t0, LeaseUntil: at(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(bg, store.Ref{FileKey: "w", WorkerID: "i/w1"}, &store.FileUpdate{Attempts: 1, NextRetryAt: at(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(bg, `CREATE TRIGGER refuse_settle BEFORE UPDATE OF waiting ON library_files
		WHEN NEW.waiting = 0 BEGIN SELECT RAISE(ABORT, 'settling refused'); END`); err != nil {
		t.Fatal(err)
	}
	removed, err := s.CleanupClaims(bg, at(2*time.Minute))
	if err == nil {
		t.Fatal("CleanupClaims succeeded with settling refused")
	}
	if got := claimKeysOf(removed); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("CleanupClaims = %v, %v; want the deleted claim of a with the error", got, err)
	}
	if c, err := s.Counts(bg); err != nil || c.Claimed != 0 {
		t.Fatalf("Counts = %+v, %v: want the claim deleted", c, err)
	}
}

func claimKeysOf(cs []store.Claim) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.FileKey)
	}
	return out
}
