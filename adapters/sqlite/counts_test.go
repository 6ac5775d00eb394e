package sqlite

import (
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// recountSQL is Counts as a scan of every file, by store.ClassOf's rule (a
// file that is not valid is invalid whatever its tags or failure): what
// library_counts must always equal.
const recountSQL = `SELECT count(*),
		coalesce(sum(is_valid = 1 AND tagged = 1), 0),
		coalesce(sum(is_valid = 1 AND tagged = 0 AND failed = 1), 0),
		coalesce(sum(is_valid = 1 AND tagged = 0 AND failed = 0 AND needs_tagging = 1), 0),
		(SELECT count(*) FROM worker_claims)
	FROM library_files`

func recount(t *testing.T, db *sql.DB) store.Counts {
	t.Helper()
	var c store.Counts
	if err := db.QueryRow(recountSQL).Scan(&c.Total, &c.Tagged, &c.Failed, &c.Pending, &c.Claimed); err != nil {
		t.Fatalf("recount: %v", err)
	}
	return c
}

// Every way a file changes class (scan, claim and completion, release as
// failed or missing, quarantine, retry, retag, a rescan that finds a change, and
// rows edited or deleted by hand with the sqlite3 shell) keeps the counts
// equal to a recount of the files.
func TestCountsEqualARecount(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	db := raw(t, path)
	check := func(step string) {
		t.Helper()
		got, err := s.Counts(bg)
		if err != nil {
			t.Fatalf("%s: Counts: %v", step, err)
		}
		if want := recount(t, db); got != want {
			t.Fatalf("%s: Counts = %+v, a recount gives %+v", step, got, want)
		}
	}
	check("empty")

	var files []store.File
	for i := range 40 {
		f := mkf(fmt.Sprintf("k%02d", i))
		if i%10 == 9 {
			f.IsValid = false // empty file
		}
		files = append(files, f)
	}
	if _, err := s.UpsertFiles(bg, files); err != nil {
		t.Fatal(err)
	}
	check("scan")
	if _, err := s.UpsertFiles(bg, files[:5]); err != nil {
		t.Fatal(err)
	}
	check("rescan, nothing changed")

	for i := range 9 {
		c := claim(fmt.Sprintf("k%02d", i), "i/w0", t0, time.Minute)
		if _, err := s.Claim(bg, c); err != nil {
			t.Fatal(err)
		}
		if i < 3 { // still in progress
			continue
		}
		if err := s.Complete(bg, store.Ref{FileKey: c.FileKey, WorkerID: c.WorkerID}, store.Completion{Version: "v", At: t0}); err != nil {
			t.Fatal(err)
		}
	}
	check("claims and completions")

	ref := func(k string) store.Ref { return store.Ref{FileKey: k, WorkerID: "i/w0"} }
	if err := s.Release(bg, ref("k00"), &store.FileUpdate{Failed: true, LastError: "not audio"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(bg, ref("k01"), &store.FileUpdate{Missing: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Quarantine(bg, "k20", "crashed a worker"); err != nil {
		t.Fatal(err)
	}
	if err := s.Quarantine(bg, "k05", "crashed a worker"); err != nil { // tagged and failed: counted tagged
		t.Fatal(err)
	}
	check("failed, missing, quarantined")

	if _, err := s.MarkMissing(bg, []string{"k11", "k12", "k04", "k19"}); err != nil {
		t.Fatal(err)
	}
	check("marked missing (k04 tagged)")
	if _, err := s.RetryFailed(bg, []string{"k00", "k20", "k05"}); err != nil {
		t.Fatal(err)
	}
	check("retried")
	if n, err := s.Retag(bg, []string{"k03", "k06", "k07", "k08", "k04", "k05"}, "v2"); err != nil || n == 0 {
		t.Fatalf("Retag = %d, %v", n, err)
	}
	check("retagged for another model set")

	changed := []store.File{mkf("k04"), mkf("k11"), mkf("k12"), mkf("k40")}
	changed[0].Size++ // a tagged file whose content changed needs tagging again
	if _, err := s.UpsertFiles(bg, changed); err != nil {
		t.Fatal(err)
	}
	check("rescan: changed, back, new")

	for _, q := range []string{
		`DELETE FROM library_files WHERE key IN ('k03', 'k21', 'k29', 'k01')`,
		`UPDATE library_files SET tagged = 0, needs_tagging = 1 WHERE key = 'k06'`,
		`UPDATE library_files SET failed = 1 WHERE key IN ('k22', 'k07')`,
		`UPDATE library_files SET is_valid = 0 WHERE key IN ('k08', 'k22')`,
		`UPDATE library_files SET is_valid = 1 WHERE key = 'k08'`,
		`UPDATE library_files SET path = 'moved' WHERE key = 'k23'`,
		`INSERT INTO library_files (key, needs_tagging, is_valid, tagged) VALUES ('k99', 0, 1, 1)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		check(strings.Fields(q)[0] + " by hand")
	}
	if _, err := db.Exec(`DELETE FROM library_files`); err != nil {
		t.Fatal(err)
	}
	check("every file deleted")
}

// A database of schema version 1 (no library_counts) is upgraded when it is
// opened for writing: its counts start from the files already there, and
// stay right afterwards. Opened read-only first, it is refused with what to
// do, untouched.
func TestSchemaVersion1IsUpgraded(t *testing.T) {
	path := tempDB(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var files []store.File
	for i := range 30 {
		f := mkf(fmt.Sprintf("k%02d", i))
		f.IsValid = i%7 != 0
		files = append(files, f)
	}
	if _, err := s.UpsertFiles(bg, files); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"k01", "k02", "k03"} {
		c := claim(k, "i/w0", t0, time.Minute)
		if _, err := s.Claim(bg, c); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(bg, store.Ref{FileKey: k, WorkerID: c.WorkerID}, store.Completion{Version: "v", At: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Quarantine(bg, "k04", "crashed a worker"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	downgradeToV1(t, path,
		`UPDATE library_files SET next_retry_at = `+fmt.Sprint(ms(at(time.Hour)))+` WHERE key IN ('k06', 'k08')`,
		`UPDATE library_files SET skip_until = `+fmt.Sprint(ms(at(time.Minute)))+` WHERE key = 'k09'`,
		`UPDATE meta SET value = '1' WHERE key = '`+MetaSchemaVersion+`'`,
		`UPDATE library_files SET failed = 1 WHERE key = 'k05'`,
		// A wait that ends after the upgrade, by the wall clock.
		`UPDATE library_files SET skip_until = `+fmt.Sprint(ms(time.Now().Add(time.Hour)))+` WHERE key = 'k20'`)

	db := raw(t, path)
	want := recount(t, db)

	s = openUpgraded(t, path, 1)
	got, err := s.Counts(bg)
	if err != nil {
		t.Fatal(err)
	}
	if got != want || got.Tagged != 3 || got.Failed != 2 {
		t.Fatalf("Counts after the upgrade = %+v, a recount gives %+v (3 tagged, 2 failed)", got, want)
	}
	// The upgrade puts the files whose wait has not ended in the waiting
	// index (the others' times, T+1m and T+1h, are past by the wall clock).
	if w := strings1(t, db, `SELECT key FROM library_files WHERE waiting = 1`); !slices.Equal(w, []string{"k20"}) {
		t.Fatalf("waiting after the upgrade: %v, want [k20]", w)
	}
	if _, err := s.UpsertFiles(bg, []store.File{mkf("new")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkMissing(bg, []string{"k10"}); err != nil {
		t.Fatal(err)
	}
	got, err = s.Counts(bg)
	if want := recount(t, db); err != nil || got != want {
		t.Fatalf("Counts after writes on the upgraded file = %+v %v, a recount gives %+v", got, err, want)
	}
	// Files that were waiting for a retry or a skip time wait on: not
	// discovered before their time, discovered after it (k07 and k14 are
	// not valid, k10 missing).
	keys := func(now time.Time) []string {
		fs, err := s.Discover(bg, now, "k05", 4)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range fs {
			out = append(out, f.Key)
		}
		return out
	}
	if got, want := keys(t0), []string{"k11", "k12", "k13", "k15"}; !slices.Equal(got, want) {
		t.Fatalf("discovered after the upgrade at T: %v, want %v", got, want)
	}
	if got, want := keys(at(time.Minute)), []string{"k09", "k11", "k12", "k13"}; !slices.Equal(got, want) {
		t.Fatalf("discovered after the upgrade at T+1m: %v, want %v", got, want)
	}
	if got, want := keys(at(time.Hour)), []string{"k06", "k08", "k09", "k11"}; !slices.Equal(got, want) {
		t.Fatalf("discovered after the upgrade at T+1h: %v, want %v", got, want)
	}
	// A second process opening it meanwhile finds it upgraded.
	openT(t, path)
	if got2, _ := s.Counts(bg); got2 != got {
		t.Fatalf("Counts after a second open = %+v, want %+v", got2, got)
	}
}

// downgradeToV1 brings a closed database back to schema version 1's layout,
// then runs extra statements on it.
func downgradeToV1(t testing.TB, path string, extra ...string) {
	t.Helper()
	execAll(t, path, append(append(slices.Concat(undoVersion5, undoVersion4), []string{
		`ALTER TABLE library_files DROP COLUMN stat_seq`,
		`DROP TRIGGER library_counts_insert`, `DROP TRIGGER library_counts_delete`, `DROP TRIGGER library_counts_update`,
		`DROP TABLE library_counts`,
		`DROP INDEX library_files_ready`, `DROP INDEX library_files_waiting`, `DROP INDEX health_history_identity`,
		`ALTER TABLE library_files DROP COLUMN waiting`,
		`CREATE INDEX library_files_pending ON library_files (key) WHERE needs_tagging = 1 AND is_valid = 1 AND failed = 0`,
		`UPDATE meta SET value = '1' WHERE key = '` + MetaSchemaVersion + `'`,
	}...), extra...)...)
}

// A process that opens a version 1 file while another holds the write
// lock (upgrading it: 4–6 s a million files) waits for it past its busy
// timeout, and then finds the file upgraded (or upgrades it), instead of
// failing with "database is locked".
func TestOpenWaitsForAnUpgradeInProgress(t *testing.T) {
	path := tempDB(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "a", "b")
	s.Close()
	downgradeToV1(t, path)
	db := raw(t, path)
	conn, err := db.Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(bg, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	// The holder is another process upgrading the file: the open below
	// read version 1 before the commit, and finds the file upgraded when
	// it gets the lock.
	for _, ddl := range slices.Concat(version2, version3, version4, version5, extrasDDL()) {
		var args []any
		if strings.Contains(ddl, "?1") {
			args = append(args, ms(time.Now()))
		}
		if _, err := conn.ExecContext(bg, ddl, args...); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	if _, err := conn.ExecContext(bg, `UPDATE meta SET value = ? WHERE key = ?`, strconv.Itoa(SchemaVersion), MetaSchemaVersion); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		// The lock is held on the real clock, past the busy timeout: the
		// open must wait it out.
		time.Sleep(1500 * time.Millisecond)
		conn.ExecContext(bg, `COMMIT`)
		conn.Close()
		close(released)
	}()
	start := time.Now()
	s2, err := Open(path, WithBusyTimeout(300*time.Millisecond))
	<-released
	if err != nil {
		t.Fatalf("Open while another process held the lock for 1.5 s (busy timeout 0.3 s): %v", err)
	}
	defer s2.Close()
	if d := time.Since(start); d < time.Second {
		t.Fatalf("Open returned after %s, before the lock was released", d)
	}
	if c, err := s2.Counts(bg); err != nil || c.Pending != 2 {
		t.Fatalf("Counts after the upgrade = %+v, %v", c, err)
	}
}

// Waits that ended while no main process ran its cleanup (between two runs
// of nomarr tag) are settled when the file is next opened for writing, by
// the wall clock, and a cleanup settles every ended wait, not only its
// first batch: unsettled, each discovery sorts them all.
func TestEndedWaitsSettled(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	now := time.Now()
	const n = 2*settleBatch + 500
	var files []store.File
	for i := range 2 * n {
		f := mkf(fmt.Sprintf("k%05d", i))
		f.Attempts, f.NextRetryAt = 1, now.Add(-time.Minute) // ended
		if i%2 == 1 {
			f.NextRetryAt = now.Add(time.Hour) // not yet
		}
		files = append(files, f)
	}
	if _, err := s.UpsertFiles(bg, files); err != nil {
		t.Fatal(err)
	}
	db := raw(t, path)
	waiting := func() (n int) {
		t.Helper()
		if err := db.QueryRow(`SELECT count(*) FROM library_files WHERE waiting = 1`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if w := waiting(); w != 2*n {
		t.Fatalf("waiting after the scan: %d, want %d", w, 2*n)
	}
	s2 := openT(t, path)
	if w := waiting(); w != n {
		t.Fatalf("waiting after an open: %d, want %d (the %d whose wait ended settled)", w, n, n)
	}
	if _, err := s2.CleanupClaims(bg, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if w := waiting(); w != 0 {
		t.Fatalf("waiting after a cleanup past every wait: %d, want 0", w)
	}
}

// An open while another process holds the write lock (a busy writer, or a
// worker stopped inside a write transaction) leaves its settling of ended
// waits to the next cleanup after 200 ms, rather than waiting out the busy
// timeout: a worker restarted while the store is locked starts at once.
func TestOpenNotHeldUpBySettling(t *testing.T) {
	path := tempDB(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "a")
	s.Close()
	conn, err := raw(t, path).Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(bg, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(bg, `ROLLBACK`)
	start := time.Now()
	s2, err := Open(path, WithBusyTimeout(3*time.Second))
	if err != nil {
		t.Fatalf("Open beside a held write lock: %v", err)
	}
	defer s2.Close()
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("Open beside a held write lock took %s (busy timeout 3 s); settling must not wait it out", d)
	}
	if f, err := s2.File(bg, "a"); err != nil || f.Key != "a" {
		t.Fatalf("read after the open: %+v, %v", f, err)
	}
}

// oldFileClass is the class rule of the library_counts triggers before a
// file gone counted as invalid whatever its tags: tagged first.
func oldFileClass(r string) string {
	return `(CASE WHEN ` + r + `.tagged = 1 THEN 'tagged' WHEN ` + r + `.failed = 1 THEN 'failed'
		WHEN ` + r + `.needs_tagging = 1 AND ` + r + `.is_valid = 1 THEN 'pending' ELSE 'invalid' END)`
}

// oldRuleDDL gives a database the library_counts triggers of rule 1 (the
// class rule oldFileClass), as a program before the rule number built
// them: without a counts_rule in meta.
func oldRuleDDL() []string {
	var ddl []string
	for _, name := range []string{"library_counts_insert", "library_counts_delete", "library_counts_update"} {
		ddl = append(ddl, `DROP TRIGGER `+name)
	}
	return append(ddl,
		`CREATE TRIGGER library_counts_insert AFTER INSERT ON library_files BEGIN
			UPDATE library_counts SET n = n + 1 WHERE class = `+oldFileClass("NEW")+`; END`,
		`CREATE TRIGGER library_counts_delete AFTER DELETE ON library_files BEGIN
			UPDATE library_counts SET n = n - 1 WHERE class = `+oldFileClass("OLD")+`; END`,
		`CREATE TRIGGER library_counts_update AFTER UPDATE OF tagged, failed, needs_tagging, is_valid ON library_files
			WHEN `+oldFileClass("OLD")+` <> `+oldFileClass("NEW")+` BEGIN
			UPDATE library_counts SET n = n - 1 WHERE class = `+oldFileClass("OLD")+`;
			UPDATE library_counts SET n = n + 1 WHERE class = `+oldFileClass("NEW")+`; END`,
		`DELETE FROM meta WHERE key = '`+metaCountsRule+`'`)
}

// rewrittenRuleDDL gives a database this rule's triggers in other text
// (the whitespace of each statement collapsed), numbered rule: what
// another program's build of the triggers leaves.
func rewrittenRuleDDL(rule int) []string {
	var ddl []string
	for _, name := range []string{"library_counts_insert", "library_counts_delete", "library_counts_update"} {
		ddl = append(ddl, `DROP TRIGGER `+name)
	}
	for _, x := range countsTriggers() {
		ddl = append(ddl, strings.Join(strings.Fields(x), " "))
	}
	return append(ddl, `UPDATE meta SET value = '`+strconv.Itoa(rule)+`' WHERE key = '`+metaCountsRule+`'`)
}

// countsMark is added to a recount in the pending row of library_counts
// by hand (markCounts): a rebuild (a recount) takes it away, so a file
// that still shows it was not rebuilt.
const countsMark = 1000

func markCounts(t *testing.T, path string) {
	t.Helper()
	execAll(t, path, `UPDATE library_counts SET n = `+strconv.Itoa(countsMark)+` + (SELECT count(*) FROM library_files
		WHERE is_valid = 1 AND tagged = 0 AND failed = 0 AND needs_tagging = 1) WHERE class = '`+store.ClassPending+`'`)
}

// countsMarked reports whether the pending row still carries countsMark
// (not rebuilt since markCounts) or equals a recount (rebuilt).
func countsMarked(t *testing.T, db *sql.DB) bool {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT n FROM library_counts WHERE class = ?`, store.ClassPending).Scan(&n); err != nil {
		t.Fatal(err)
	}
	switch want := recount(t, db).Pending; n {
	case want + countsMark:
		return true
	case want:
		return false
	default:
		t.Fatalf("pending row %d: neither a recount (%d) nor a marked one", n, want)
		return false
	}
}

func countsRuleOf(t *testing.T, db *sql.DB) string {
	t.Helper()
	var v string
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = ?`, metaCountsRule).Scan(&v); err != nil {
		t.Fatalf("%s: %v", metaCountsRule, err)
	}
	return v
}

func triggersOf(t *testing.T, db *sql.DB) []string {
	t.Helper()
	have, err := triggersSQL(bg, db)
	if err != nil {
		t.Fatal(err)
	}
	return have
}

// A new database's rule is numbered in the transaction that creates it.
func TestCountsRuleNumberedOnCreate(t *testing.T) {
	path := tempDB(t)
	openT(t, path)
	if v := countsRuleOf(t, raw(t, path)); v != strconv.Itoa(countsRule) {
		t.Fatalf("%s of a new database = %s, want %d", metaCountsRule, v, countsRule)
	}
}

// A database of this schema version whose triggers count by the older rule
// (a tagged or failed file gone counted as tagged or failed), built before
// the rule number, gets this program's triggers, a recount and the rule's
// number at its first open for writing; a read-only open leaves it as it
// is.
func TestCountsRuleRebuiltOnOpen(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	seed(t, s, "a", "b", "c")
	for _, k := range []string{"a", "b"} {
		if _, err := s.Claim(bg, claim(k, "i/w0", t0, time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Complete(bg, store.Ref{FileKey: "a", WorkerID: "i/w0"}, store.Completion{Version: "v1", At: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(bg, store.Ref{FileKey: "b", WorkerID: "i/w0"}, &store.FileUpdate{Failed: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	execAll(t, path, append(oldRuleDDL(),
		// The tagged and the failed file leave: the old rule keeps them in their class.
		`UPDATE library_files SET is_valid = 0 WHERE key IN ('a', 'b')`)...)
	oldCounts := store.Counts{Total: 3, Tagged: 1, Failed: 1, Pending: 1}

	ro := openT(t, path, WithReadOnly())
	if got, err := ro.Counts(bg); err != nil || got != oldCounts {
		t.Fatalf("read-only Counts = %+v %v, want the file's own %+v", got, err, oldCounts)
	}
	s = openT(t, path)
	want := store.Counts{Total: 3, Pending: 1}
	if got, err := s.Counts(bg); err != nil || got != want {
		t.Fatalf("Counts after an open for writing = %+v %v, want %+v (a, b gone: invalid)", got, err, want)
	}
	db := raw(t, path)
	if got := recount(t, db); got != want {
		t.Fatalf("recount = %+v, want %+v", got, want)
	}
	if got := triggersOf(t, db); !slices.Equal(got, countsTriggers()) {
		t.Fatalf("triggers after an open for writing:\n%s\nwant this program's", strings.Join(got, "\n"))
	}
	if v := countsRuleOf(t, db); v != strconv.Itoa(countsRule) {
		t.Fatalf("%s after the rebuild = %s, want %d", metaCountsRule, v, countsRule)
	}
	if _, err := s.MarkMissing(bg, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpsertFiles(bg, []store.File{mkf("a")}); err != nil { // back, unchanged: tagged again
		t.Fatal(err)
	}
	if got, err := s.Counts(bg); err != nil || got != recount(t, db) || got.Tagged != 1 || got.Invalid() != 2 {
		t.Fatalf("Counts after writes = %+v %v, a recount gives %+v (a tagged, b and c gone)", got, err, recount(t, db))
	}
}

// A file whose rule number is higher than this program's holds a newer
// program's rule: an open for writing leaves its triggers' text and its
// rows as they are (no recount), so that programs of two rules opening one
// file do not rebuild it back and forth.
func TestCountsNewerRuleKept(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	seed(t, s, "a", "b", "c")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	execAll(t, path, rewrittenRuleDDL(countsRule+1)...)
	markCounts(t, path)
	db := raw(t, path)
	newer := triggersOf(t, db)

	s = openT(t, path)
	if got := triggersOf(t, db); !slices.Equal(got, newer) {
		t.Fatalf("triggers of a newer rule replaced by an open for writing:\n%s", strings.Join(got, "\n"))
	}
	if !countsMarked(t, db) {
		t.Fatal("a file of a newer rule was recounted at an open for writing")
	}
	if v := countsRuleOf(t, db); v != strconv.Itoa(countsRule+1) {
		t.Fatalf("%s = %s, want the file's own %d", metaCountsRule, v, countsRule+1)
	}
	if got, err := s.Counts(bg); err != nil || got.Pending != 3+countsMark {
		t.Fatalf("Counts = %+v %v, want the file's rows (pending %d)", got, err, 3+countsMark)
	}
}

// The rebuild runs once: a file rebuilt and numbered is judged by its
// number at every later open, so neither a second open nor the same rule's
// triggers in another text (a program of this rule that writes them
// otherwise) rebuilds it again.
func TestCountsRuleRebuiltOnce(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	seed(t, s, "a", "b", "c")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	execAll(t, path, oldRuleDDL()...)
	markCounts(t, path)
	db := raw(t, path)
	var rebuilt []bool
	for i, prepare := range []func(){
		func() {},                      // old rule, no number: rebuilt
		func() { markCounts(t, path) }, // numbered by the rebuild
		func() { // this rule in other text, numbered
			execAll(t, path, rewrittenRuleDDL(countsRule)...)
			markCounts(t, path)
		},
	} {
		prepare()
		s, err := Open(path)
		if err != nil {
			t.Fatalf("open %d: %v", i+1, err)
		}
		rebuilt = append(rebuilt, !countsMarked(t, db))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if want := []bool{true, false, false}; !slices.Equal(rebuilt, want) {
		t.Fatalf("rebuilt at each open for writing: %v, want %v (the first only)", rebuilt, want)
	}
}
