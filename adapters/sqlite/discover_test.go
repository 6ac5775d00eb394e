package sqlite

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// discovered returns the keys Discover gives at now from after.
func discovered(t *testing.T, s *Store, now time.Time, after string, limit int) []string {
	t.Helper()
	fs, err := s.Discover(bg, now, after, limit)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	keys := []string{}
	for _, f := range fs {
		keys = append(keys, f.Key)
	}
	return keys
}

// Files waiting for a retry or skip time at the front of key order (where
// workers' transient failures pile up) are passed over, found again in key
// order with the others once their time has come, whether or not a cleanup
// has settled their wait yet, and a waiting flag set wrong by hand costs
// no file.
func TestDiscoverPastWaitingFiles(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	var files []store.File
	for i := range 40 {
		files = append(files, mkf(fmt.Sprintf("k%02d", i)))
	}
	if _, err := s.UpsertFiles(bg, files); err != nil {
		t.Fatal(err)
	}
	// k00–k09 fail: a retry in 1 to 10 minutes; k10 a service outage (skip 5 min).
	for i := range 11 {
		k := fmt.Sprintf("k%02d", i)
		c := claim(k, "i/w0", t0, time.Minute)
		if _, err := s.Claim(bg, c); err != nil {
			t.Fatal(err)
		}
		upd := &store.FileUpdate{Attempts: 1, NextRetryAt: at(time.Duration(i+1) * time.Minute), LastError: "transient"}
		if i == 10 {
			upd = &store.FileUpdate{SkipUntil: at(5 * time.Minute), LastError: "gpu down"}
		}
		if err := s.Release(bg, store.Ref{FileKey: k, WorkerID: c.WorkerID}, upd); err != nil {
			t.Fatal(err)
		}
	}
	want := func(step string, now time.Time, after string, limit int, keys ...string) {
		t.Helper()
		if got := discovered(t, s, now, after, limit); !slices.Equal(got, keys) {
			t.Fatalf("%s: Discover = %v, want %v", step, got, keys)
		}
	}
	want("all waiting", t0, "", 3, "k11", "k12", "k13")
	want("from a cursor", t0, "k12", 2, "k13", "k14")
	want("k00–k02 due, not settled", at(3*time.Minute), "", 4, "k00", "k01", "k02", "k11")
	want("due and settled", at(3*time.Minute), "k00", 3, "k01", "k02", "k11")
	if _, err := s.CleanupClaims(bg, at(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	want("settled", at(3*time.Minute), "", 4, "k00", "k01", "k02", "k11")
	want("settled, seen before their time (a clock behind)", t0, "", 2, "k11", "k12")
	want("skip over", at(5*time.Minute), "k02", 4, "k03", "k04", "k10", "k11")

	db := raw(t, path)
	waiting := strings1(t, db, `SELECT key FROM library_files WHERE waiting = 1 ORDER BY key`)
	if w := []string{"k03", "k04", "k05", "k06", "k07", "k08", "k09", "k10"}; !slices.Equal(waiting, w) {
		t.Fatalf("waiting after the cleanup at T+3m: %v, want %v (the cleanup settles the waits that ended, only them)", waiting, w)
	}
	// Flags wrong both ways (an edit by hand): discovery still applies the times.
	if _, err := db.Exec(`UPDATE library_files SET waiting = 1 - waiting WHERE key IN ('k05', 'k11', 'k12')`); err != nil {
		t.Fatal(err)
	}
	want("flags flipped", t0, "", 3, "k11", "k12", "k13")
	want("flags flipped, k05 due", at(6*time.Minute), "k03", 3, "k04", "k05", "k10")
	// A rescan that finds k06 changed forgets its wait.
	changed := mkf("k06")
	changed.Size++
	if _, err := s.UpsertFiles(bg, []store.File{changed}); err != nil {
		t.Fatal(err)
	}
	want("changed file", t0, "k05", 1, "k06")
}
