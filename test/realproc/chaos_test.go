package realproc

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestChaosLosesAndDuplicatesNothing: three real workers tag 120 files
// while, for six seconds, a seeded schedule SIGKILLs one of them every
// 150–400 ms and now and then SIGSTOPs one (killed at hang_after). The
// restart limits are raised so the workers keep coming back. Afterwards the
// store must show that nothing was lost and nothing done twice: no claim
// left, every file tagged once (its result recorded once) or quarantined
// after two of its workers died holding it (as the trace's releases show),
// none still waiting, no worker failed.
func TestChaosLosesAndDuplicatesNothing(t *testing.T) {
	const workers, files = 3, 120
	rng := rand.New(rand.NewPCG(7, 11))
	var faults strings.Builder
	kills, hangs := 0, 0
	for at := 600 + rng.IntN(250); at < 6600; at += 150 + rng.IntN(250) {
		w := rng.IntN(workers)
		if rng.IntN(8) == 0 {
			fmt.Fprintf(&faults, "  - {at: %dms, hang: \"worker:discovery:%d\"}\n", at, w)
			hangs++
			continue
		}
		fmt.Fprintf(&faults, "  - {at: %dms, crash: \"worker:discovery:%d\"}\n", at, w)
		kills++
	}
	file := writeScenario(t, fmt.Sprintf(`name: real-chaos
duration: 16s
config: {workers: %d, frame_interval: 200ms, stale_after: 1s, hang_after: 2s, startup_timeout: 5s, check_interval: 100ms, lease_ttl: 3s, cleanup_period: 1s, idle_poll_min: 100ms, idle_poll_max: 300ms, stop_grace: 2s, backoff_base: 100ms, backoff_max: 400ms, window_limit: 1000, lifetime_limit: 1000}
library: {files: %d, job_time: 120ms, model_load: 50ms}
faults:
%s`, workers, files, faults.String()))
	db := filepath.Join(t.TempDir(), "nomarr.db")
	r := drill(t, file, db)

	sdb, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	count := func(query string) int {
		t.Helper()
		var n int
		if err := sdb.QueryRow(query).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}
	tagged := count(`SELECT count(*) FROM library_files WHERE tagged = 1 AND failed = 0`)
	quarantined := count(`SELECT count(*) FROM library_files WHERE failed = 1 AND crash_count >= 2`)
	otherFailed := count(`SELECT count(*) FROM library_files WHERE failed = 1 AND crash_count < 2`)
	waiting := count(`SELECT count(*) FROM library_files WHERE tagged = 0 AND failed = 0`)
	claims := count(`SELECT count(*) FROM worker_claims`)
	results := count(`SELECT count(*) FROM file_tags`)
	twice := count(`SELECT count(*) FROM file_tags WHERE writes > 1`)
	deaths := 0
	diedHolding := map[string]int{} // file → releases because its worker died
	for _, e := range r.trace {
		switch {
		case e.Event.Event == "exit":
			deaths++
		case e.Event.Event == "release" && e.Event.Reason == "worker died":
			diedHolding[e.Event.File]++
		}
	}
	rows, err := sdb.Query(`SELECT key, crash_count FROM library_files WHERE failed = 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key string
		var crashes int
		if err := rows.Scan(&key, &crashes); err != nil {
			t.Fatal(err)
		}
		if diedHolding[key] < 2 || crashes != diedHolding[key] {
			t.Errorf("%s quarantined with crash_count %d; its workers died holding it %d times", key, crashes, diedHolding[key])
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d kills and %d hangs scheduled, %d worker exits: %d files tagged, %d quarantined; %d claims left",
		kills, hangs, deaths, tagged, quarantined, claims)
	if claims != 0 || r.sum.ClaimsLeft != 0 {
		t.Errorf("%d claims left in the store", claims)
	}
	if waiting != 0 || otherFailed != 0 || tagged+quarantined != files {
		t.Errorf("of %d files: %d tagged, %d quarantined, %d failed otherwise, %d still waiting; want every file tagged or quarantined",
			files, tagged, quarantined, otherFailed, waiting)
	}
	if results != tagged || twice != 0 {
		t.Errorf("%d results recorded for %d tagged files, %d recorded more than once; want one each", results, tagged, twice)
	}
	if len(r.sum.FailedWorkers) != 0 {
		t.Errorf("failed workers %v; the limits were raised so that none fails", r.sum.FailedWorkers)
	}
	if deaths < kills/2 {
		t.Errorf("only %d worker exits for %d kills: the schedule did not reach the workers", deaths, kills)
	}
}
