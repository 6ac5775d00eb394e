package sqlite_test

// Differential, model-based property test: random sequences of store
// operations are applied to the simulator's in-memory store (adapters/memstore,
// the reference the simulator runs on) and to the SQLite store, and the two
// must agree on every result:
//
//   - returned values (files, claims, releases, counts, meta, restart states),
//   - errors, by kind: nil, or which of the port's sentinel errors matches
//     (errors.Is), or "fault" for any other error,
//   - the state after every mutating operation (ListFiles, Counts, and
//     NeedsVector and CountJobs of each model set), and the
//     whole final state (File, Counts, ListFiles pages, GetMeta, LoadRestart,
//     and, through the adapters' test accessors, tags and history), ending
//     with a CleanupClaims far in the future that returns every claim left.
//
// The pool is small on purpose (6 file keys, 3 workers, 4 sizes/mtimes, a
// handful of times around a virtual clock) so that operations collide:
// claims race, completions see changed files, leases expire on the boundary.
//
// Knobs:
//
//	NOMARR_PROPERTY_CHECKS=N   cases (default 100)
//	-rapid.checks=N            same, rapid's own flag (wins over the default)
//	-rapid.steps=N             mean operations per case (default 20; at most
//	                           40 are applied)
//	-rapid.seed=S / RAPID_SEED rapid's base seed (default: a fixed seed, so CI
//	                           is deterministic; set one to explore)
//
// A failing case prints the operation sequence (a reproduction) with both
// stores' answers.
//
// Where the port leaves something open, the comparison does not hold the
// stores to one answer:
//
//   - ReleaseWorker and CleanupClaims do not specify their order: both are
//     compared sorted by file key (Discover and ListFiles are "key order" and
//     are compared as returned).
//   - An empty slice and nil are the same answer; so are an empty and a nil
//     restart.State.Recent and tag map (SQLite stores them as JSON "[]"/"{}").
//   - Times are compared as instants, in UTC: SQLite keeps Unix milliseconds
//     (a documented property of the adapter), so every time the test gives
//     is a whole millisecond, and none is the Unix epoch (stored as 0, which
//     is the zero time).
//   - SQLite keeps its schema version in meta under "schema_version"; the
//     test never reads or writes that key.
//
// Found by this test and fixed: an UpsertFiles that changed only a known
// file's validity (same size and mtime) also copied the given path in
// SQLite, where the port says such a file takes the given validity only:
//
//	UpsertFiles([{0a0 /music/0a0.flac size=100 mtime=1000 valid:false}])
//	UpsertFiles([{0a0 /music2/0a0.flac size=100 mtime=1000 valid:true}])
//	File("0a0").Path: memstore /music/0a0.flac, SQLite /music2/0a0.flac
//
// (A scan derives a file's key from its path, so scanned files never met
// it.) Keys are therefore given other paths now and then.

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/internal/rapidflags"
)

const (
	diffDefaultChecks = 100
	diffSteps         = 20 // mean operations per case (rapid.steps)
	diffMaxOps        = 40 // at most
)

var (
	// diffBase is the virtual clock's start: whole milliseconds, far from
	// the Unix epoch.
	diffBase = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	// diffKeys is the pool of file keys UpsertFiles draws from: lower-case
	// hexadecimal (byte order is the port's key order), with prefixes of one
	// another so that the `after` cursor is tested between them.
	diffKeys = []string{"0a", "0a0", "1", "7f", "a", "ff"}
	// diffLookupKeys adds a key that is never stored.
	diffLookupKeys = append(slices.Clone(diffKeys), "b0")
	// diffCursors are `after` values: none, every key, and keys between and
	// around them.
	diffCursors = append(slices.Clone(diffLookupKeys), "", "0", "0a00", "8", "fff")
	diffWorkers = []string{"h1/worker:0", "h1/worker:1", "h2/worker:0"}
	diffStats   = []store.Stat{{Size: 100, MtimeMs: 1000}, {Size: 100, MtimeMs: 2000}, {Size: 200, MtimeMs: 1000}, {Size: 200, MtimeMs: 2000}}
	// diffMetaKeys: never "schema_version" (SQLite's own, see above).
	diffMetaKeys    = []string{store.MetaWorkerEnabled, store.MetaGPUHealth, "avg:job_ms"}
	diffMetaLookups = append(slices.Clone(diffMetaKeys), "absent", store.MetaStatSeq)
	diffRestartKeys = []string{"h1/worker:discovery:0", "h2/worker:discovery:1"}
	diffRestartLook = append(slices.Clone(diffRestartKeys), "h3/absent")
	// diffOffsets are the times, relative to the clock, most drawn times
	// take: boundaries (±1 ms) and a lease's worth either side.
	diffOffsets = []time.Duration{0, -time.Millisecond, time.Millisecond, -30 * time.Second, 30 * time.Second,
		-60 * time.Second, 60 * time.Second}
)

// diff is one case: the two stores, the virtual clock and the trace of
// operations so far.
type diff struct {
	t     *rapid.T
	mem   *memstore.Store
	sql   *sqlite.Store
	raw   *sql.DB // the SQLite file, for what the port does not show (checkWaiting)
	now   time.Time
	ops   int
	trace []string
	// settled is the latest time a CleanupClaims settled the waits by
	// (zero: none yet); checkWaiting holds the flags to it.
	settled time.Time
}

func TestDifferentialMemstoreSQLite(t *testing.T) {
	rapidflags.Set(t, diffDefaultChecks, diffSteps, rapidflags.Seed) // fixed seed: CI is reproducible; -rapid.seed explores
	// One SQLite file for all cases, emptied before each (opening one costs
	// about 0.1 s under -race, more than a whole case).
	path := filepath.Join(t.TempDir(), "diff.db")
	sq, err := sqlite.Open(path)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { _ = sq.Close() })
	raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	rapid.Check(t, func(rt *rapid.T) {
		if err := diffEmpty(raw); err != nil {
			rt.Fatalf("emptying the SQLite store: %v", err)
		}
		d := &diff{t: rt, mem: memstore.New(1), sql: sq, raw: raw, now: diffBase}
		d.run()
	})
}

// diffEmpty deletes every row of every table of the SQLite file, except
// the schema version and the counts the files' triggers keep, in one transaction, leaving it as a new store. (Any
// row it missed would show as a divergence from the new memstore.)
func diffEmpty(db *sql.DB) error {
	tx, err := db.BeginTx(bg, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(bg, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, name)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if len(tables) == 0 {
		return errors.New("no tables")
	}
	for _, name := range tables {
		if name == "library_counts" {
			continue // its triggers bring it to zero as the files go
		}
		q := `DELETE FROM "` + name + `"`
		if name == "meta" {
			q += ` WHERE key <> '` + sqlite.MetaSchemaVersion + `'`
		}
		if _, err := tx.ExecContext(bg, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return tx.Commit()
}

// diffOp is one kind of operation; weight is how many times it is listed in
// the draw.
type diffOp struct {
	name   string
	weight int
	fn     func(d *diff)
}

var diffOps = []diffOp{
	{"UpsertFiles", 4, (*diff).opUpsert},
	{"NextStatSeq", 1, (*diff).opNextStatSeq},
	{"Discover", 2, (*diff).opDiscover},
	{"Claim", 8, (*diff).opClaim},
	{"Complete", 4, (*diff).opComplete},
	{"Release", 4, (*diff).opRelease},
	{"ReleaseWorker", 2, (*diff).opReleaseWorker},
	{"Quarantine", 1, (*diff).opQuarantine},
	{"RenewLeases", 2, (*diff).opRenew},
	{"KeepClaim", 2, (*diff).opKeepClaim},
	{"CleanupClaims", 2, (*diff).opCleanup},
	{"MarkMissing", 2, (*diff).opMarkMissing},
	{"RetryFailed", 2, (*diff).opRetryFailed},
	{"Retag", 2, (*diff).opRetag},
	{"ForgetMissing", 1, (*diff).opForgetMissing},
	{"PutTrackVector", 2, (*diff).opPutVector},
	{"NeedsVector", 2, (*diff).opNeedsVector},
	{"CountJobs", 1, (*diff).opCountJobs},
	{"File", 1, (*diff).opFile},
	{"ListFiles", 1, (*diff).opListFiles},
	{"Counts", 1, (*diff).opCounts},
	{"SetMeta", 1, (*diff).opSetMeta},
	{"GetMeta", 1, (*diff).opGetMeta},
	{"SwapMeta", 1, (*diff).opSwapMeta},
	{"SaveRestart", 1, (*diff).opSaveRestart},
	{"LoadRestart", 1, (*diff).opLoadRestart},
	{"AppendHistory", 1, (*diff).opAppendHistory},
	{"PruneHistory", 1, (*diff).opPruneHistory},
	{"Tick", 3, (*diff).opTick},
}

var diffOpIndex = func() []int {
	var idx []int
	for i, op := range diffOps {
		for range op.weight {
			idx = append(idx, i)
		}
	}
	return idx
}()

// run applies a sequence of operations (rapid's Repeat: its length is
// geometric with mean -rapid.steps, and shrinking deletes whole operations;
// operations past diffMaxOps do nothing), then compares the final state.
func (d *diff) run() {
	d.t.Repeat(map[string]func(*rapid.T){
		"op": func(*rapid.T) {
			if d.ops == diffMaxOps {
				return
			}
			d.ops++
			if d.ops == 1 {
				d.opUpsert() // start from a library, most of the time
				return
			}
			diffOps[pick(d, diffOpIndex, "op")].fn(d)
		},
	})
	d.checkFinal()
}

var bg = context.Background()

// ---------------------------------------------------------------------------
// Comparison

// errKind names err's meaning to a caller: what IsFault and errors.Is on the
// port's sentinels tell it.
func errKind(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, store.ErrConflict):
		return "ErrConflict"
	case errors.Is(err, store.ErrNotEligible):
		return "ErrNotEligible"
	case errors.Is(err, store.ErrClaimLost):
		return "ErrClaimLost"
	case errors.Is(err, store.ErrNotFound):
		return "ErrNotFound"
	}
	return "fault"
}

// same fails the case unless both stores answered what with equal values
// (after normalisation) and errors of the same kind; it records the call,
// with the answer, in the trace either way.
func (d *diff) same(what string, memV, sqlV any, memErr, sqlErr error) {
	d.t.Helper()
	mv, sv := diffNorm(memV), diffNorm(sqlV)
	mk, sk := errKind(memErr), errKind(sqlErr)
	if mk == sk && reflect.DeepEqual(mv, sv) {
		d.trace = append(d.trace, fmt.Sprintf("%s = %s %s", what, diffShow(mv), mk))
		return
	}
	d.trace = append(d.trace, fmt.Sprintf("%s  <-- DIVERGES", what))
	d.t.Fatalf("stores diverge on %s\n  memstore: %s %s (%v)\n  sqlite:   %s %s (%v)\n\nsequence (clock starts at T = %s):\n  %s",
		what, diffShow(mv), mk, memErr, diffShow(sv), sk, sqlErr, diffBase.Format(time.RFC3339),
		strings.Join(d.trace, "\n  "))
}

// call formats an operation for the trace.
func (d *diff) call(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// diffNorm puts a result in the canonical form the comparison uses (see the
// file comment): times in UTC, nil for empty, unordered results sorted.
func diffNorm(v any) any {
	switch x := v.(type) {
	case store.File:
		return normFile(x)
	case []store.File:
		if len(x) == 0 {
			return []store.File(nil)
		}
		out := make([]store.File, len(x))
		for i, f := range x {
			out[i] = normFile(f)
		}
		return out
	case store.Claim:
		return normClaim(x)
	case []store.Claim: // CleanupClaims: order unspecified
		if len(x) == 0 {
			return []store.Claim(nil)
		}
		out := make([]store.Claim, len(x))
		for i, c := range x {
			out[i] = normClaim(c)
		}
		slices.SortStableFunc(out, func(a, b store.Claim) int { return cmp.Compare(a.FileKey, b.FileKey) })
		return out
	case []store.Released: // ReleaseWorker: order unspecified
		if len(x) == 0 {
			return []store.Released(nil)
		}
		out := slices.Clone(x)
		slices.SortStableFunc(out, func(a, b store.Released) int { return cmp.Compare(a.FileKey, b.FileKey) })
		return out
	case []store.HistoryRow:
		if len(x) == 0 {
			return []store.HistoryRow(nil)
		}
		out := slices.Clone(x)
		for i := range out {
			out[i].At = normTime(out[i].At)
		}
		return out
	case restart.State:
		if len(x.Recent) == 0 {
			x.Recent = nil
		}
		return x
	case map[string]string:
		if len(x) == 0 {
			return map[string]string(nil)
		}
		return x
	}
	return v
}

func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func normFile(f store.File) store.File {
	f.LastTaggedAt, f.NextRetryAt, f.SkipUntil = normTime(f.LastTaggedAt), normTime(f.NextRetryAt), normTime(f.SkipUntil)
	return f
}

func normClaim(c store.Claim) store.Claim {
	c.ClaimedAt, c.LeaseUntil = normTime(c.ClaimedAt), normTime(c.LeaseUntil)
	return c
}

// fmtT shows a time relative to the clock's start ("T+1m30s"), or 0.
func fmtT(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	s := t.Sub(diffBase)
	if s < 0 {
		return "T" + s.String()
	}
	return "T+" + s.String()
}

func fmtFile(f store.File) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{%s %s size=%d mtime=%d", f.Key, f.Path, f.Size, f.MtimeMs)
	flag := func(on bool, name string) {
		if on {
			b.WriteString(" " + name)
		}
	}
	flag(f.NeedsTagging, "needs")
	flag(f.IsValid, "valid")
	flag(f.Tagged, "tagged")
	flag(f.Failed, "failed")
	if f.TaggedVersion != "" || !f.LastTaggedAt.IsZero() {
		fmt.Fprintf(&b, " version=%q at=%s", f.TaggedVersion, fmtT(f.LastTaggedAt))
	}
	if f.Attempts != 0 || f.CrashCount != 0 {
		fmt.Fprintf(&b, " attempts=%d crashes=%d", f.Attempts, f.CrashCount)
	}
	if !f.NextRetryAt.IsZero() || !f.SkipUntil.IsZero() {
		fmt.Fprintf(&b, " retry=%s skip=%s", fmtT(f.NextRetryAt), fmtT(f.SkipUntil))
	}
	if f.LastError != "" || f.Checkpoint != "" {
		fmt.Fprintf(&b, " error=%q checkpoint=%q", f.LastError, f.Checkpoint)
	}
	if f.StatSeq != 0 {
		fmt.Fprintf(&b, " seq=%d", f.StatSeq)
	}
	b.WriteString("}")
	return b.String()
}

func fmtClaim(c store.Claim) string {
	return fmt.Sprintf("{%s %s at=%s lease=%s}", c.FileKey, c.WorkerID, fmtT(c.ClaimedAt), fmtT(c.LeaseUntil))
}

func fmtStat(st *store.Stat) string {
	if st == nil {
		return "nil"
	}
	return fmt.Sprintf("{%d %d}", st.Size, st.MtimeMs)
}

// diffShow prints a normalised result compactly.
func diffShow(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case store.File:
		return fmtFile(x)
	case []store.File:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = fmtFile(f)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case store.Claim:
		return fmtClaim(x)
	case []store.Claim:
		parts := make([]string, len(x))
		for i, c := range x {
			parts[i] = fmtClaim(c)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case []store.HistoryRow:
		parts := make([]string, len(x))
		for i, r := range x {
			parts[i] = fmt.Sprintf("{%s %s %s %s}", fmtT(r.At), r.Instance, r.Component, r.Status)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("%+v", v)
}

// checkState compares what a caller can see of the library after a
// mutation: every file, the counts and the files that need a vector.
func (d *diff) checkState() {
	d.t.Helper()
	mf, merr := d.mem.ListFiles(bg, "", 0)
	sf, serr := d.sql.ListFiles(bg, "", 0)
	d.same("  state: ListFiles(\"\", 0)", mf, sf, merr, serr)
	mc, merr := d.mem.Counts(bg)
	sc, serr := d.sql.Counts(bg)
	d.same("  state: Counts()", mc, sc, merr, serr)
	d.checkVectorJobs()
	d.checkWaiting()
}

// checkWaiting holds SQLite's private waiting flags (see version2 in
// schema.go) to the rule that keeps the discovery indexes small: a file
// without a retry or skip time does not wait, and a pending file whose
// time is after every settling so far waits (only settleWaits clears the
// flag of a file that has a time). A wrong flag costs discovery time, not
// a file, so the comparison of results cannot see one. (No time is stored
// as 0, so a file waiting on a time at or before 0 waits on none.)
func (d *diff) checkWaiting() {
	d.t.Helper()
	var settledMs int64 // as stored: 0 for none
	if !d.settled.IsZero() {
		settledMs = d.settled.UnixMilli()
	}
	rows, err := d.raw.QueryContext(bg, `SELECT key, waiting, next_retry_at, skip_until FROM library_files
		WHERE (waiting = 1 AND max(next_retry_at, skip_until) <= 0)
			OR (waiting = 0 AND needs_tagging = 1 AND is_valid = 1 AND failed = 0 AND max(next_retry_at, skip_until) > ?)
		ORDER BY key`, settledMs)
	if err != nil {
		d.t.Fatalf("reading the waiting flags: %v", err)
	}
	defer rows.Close()
	var bad []string
	for rows.Next() {
		var key string
		var waiting int
		var retry, skip int64
		if err := rows.Scan(&key, &waiting, &retry, &skip); err != nil {
			d.t.Fatalf("reading the waiting flags: %v", err)
		}
		bad = append(bad, fmt.Sprintf("%s waiting=%d next_retry_at=%d skip_until=%d", key, waiting, retry, skip))
	}
	if err := rows.Err(); err != nil {
		d.t.Fatalf("reading the waiting flags: %v", err)
	}
	if len(bad) > 0 {
		d.t.Fatalf("waiting flags wrong (last settled at %s): %s\n\nsequence (clock starts at T = %s):\n  %s",
			fmtT(d.settled), strings.Join(bad, "; "), diffBase.Format(time.RFC3339), strings.Join(d.trace, "\n  "))
	}
}

// checkFinal compares everything readable, then drains the claims.
func (d *diff) checkFinal() {
	d.t.Helper()
	d.trace = append(d.trace, "-- final state --")
	for _, k := range diffLookupKeys {
		mf, merr := d.mem.File(bg, k)
		sf, serr := d.sql.File(bg, k)
		d.same(d.call("File(%q)", k), mf, sf, merr, serr)
	}
	mc, merr := d.mem.Counts(bg)
	sc, serr := d.sql.Counts(bg)
	d.same("Counts()", mc, sc, merr, serr)
	d.checkVectorJobs()
	// Pages from every cursor (the whole library: checkState, after each
	// mutation; other limits: the ListFiles operation).
	for _, after := range diffCursors {
		mf, merr := d.mem.ListFiles(bg, after, 2)
		sf, serr := d.sql.ListFiles(bg, after, 2)
		d.same(d.call("ListFiles(%q, 2)", after), mf, sf, merr, serr)
	}
	for _, k := range diffMetaLookups {
		mv, mok, merr := d.mem.GetMeta(bg, k)
		sv, sok, serr := d.sql.GetMeta(bg, k)
		d.same(d.call("GetMeta(%q)", k), fmt.Sprintf("%q %v", mv, mok), fmt.Sprintf("%q %v", sv, sok), merr, serr)
	}
	for _, k := range diffRestartLook {
		mst, mok, merr := d.mem.LoadRestart(bg, k)
		sst, sok, serr := d.sql.LoadRestart(bg, k)
		d.same(d.call("LoadRestart(%q) ok", k), mok, sok, merr, serr)
		d.same(d.call("LoadRestart(%q)", k), mst, sst, merr, serr)
	}
	// Not in the port: the tags of each file's last completion and the
	// health history, through the adapters' test accessors (the contract
	// suite's TagReader and HistoryReader).
	for _, k := range diffLookupKeys {
		st, serr := d.sql.Tags(bg, k)
		d.same(d.call("Tags(%q)", k), d.mem.Tags(k), st, nil, serr)
	}
	sh, serr := d.sql.RecentHistory(bg, 1<<20)
	d.same("History()", d.mem.History(), sh, nil, serr)
	// Every claim left: a cleanup far in the future finds all leases expired.
	far := diffBase.Add(1000 * time.Hour)
	mcl, merr := d.mem.CleanupClaims(bg, far)
	scl, serr := d.sql.CleanupClaims(bg, far)
	d.same(d.call("CleanupClaims(%s) (every claim left)", fmtT(far)), mcl, scl, merr, serr)
}

// ---------------------------------------------------------------------------
// Generators

// drawTime draws a time near the clock: zero sometimes, mostly a boundary
// offset, sometimes any millisecond within two minutes.
func (d *diff) drawTime(label string, zeroOK bool) time.Time {
	lo := 0
	if zeroOK {
		lo = -1
	}
	switch k := d.intn(7-lo, label+"Kind") + lo; {
	case k < 0:
		return time.Time{}
	case k < 4:
		return d.now.Add(pick(d, diffOffsets, label+"Offset"))
	default:
		return d.now.Add(time.Duration(rapid.Int64Range(-120_000, 120_000).Draw(d.t, label+"Ms")) * time.Millisecond)
	}
}

// uniform draws an int in [0, n), every value equally likely, shrinking
// towards 0. (rapid's IntRange and SampledFrom favour small values and the
// start of the list, which would make the first operations and pool entries
// far more frequent than the others.)
func uniform(n int) *rapid.Generator[int] {
	bits := 0
	for 1<<bits < n {
		bits++
	}
	return rapid.Custom(func(t *rapid.T) int {
		for {
			v := 0
			for range bits {
				v <<= 1
				if rapid.Bool().Draw(t, "bit") {
					v |= 1
				}
			}
			if v < n {
				return v
			}
		}
	})
}

func (d *diff) intn(n int, label string) int {
	if n == 1 {
		return 0 // a Custom generator must draw something
	}
	return uniform(n).Draw(d.t, label)
}

// chance is true one time in k; it shrinks to false.
func (d *diff) chance(k int, label string) bool { return d.intn(k, label) == k-1 }

func pick[E any](d *diff, s []E, label string) E { return s[d.intn(len(s), label)] }

// some draws up to max elements of s (repeats allowed).
func (d *diff) some(s []string, max int, label string) []string {
	out := make([]string, d.intn(max+1, label+"N"))
	for i := range out {
		out[i] = pick(d, s, label)
	}
	return out
}

func (d *diff) drawKey(label string) string {
	return pick(d, diffLookupKeys, label)
}

func (d *diff) drawWorker(label string) string {
	return pick(d, diffWorkers, label)
}

// drawRef names a claim: mostly one that the reference store holds (so
// that completions and releases often succeed), sometimes with another
// worker, otherwise any key and worker.
func (d *diff) drawRef() store.Ref {
	if claims := d.mem.Claims(); len(claims) > 0 && !d.chance(4, "refAny") {
		c := pick(d, claims, "refClaim")
		if d.chance(5, "refOtherWorker") {
			c.WorkerID = d.drawWorker("refWorker")
		}
		return store.Ref{FileKey: c.FileKey, WorkerID: c.WorkerID}
	}
	return store.Ref{FileKey: d.drawKey("refKey"), WorkerID: d.drawWorker("refWorker")}
}

func (d *diff) drawStat(label string) *store.Stat {
	st := pick(d, diffStats, label)
	return &st
}

var (
	diffErrors      = []string{"", "decode: not audio", "transient: timeout"}
	diffCheckpoints = []string{"", "decoded", "backbone"}
	diffVersions    = []string{"", "v1", "v2"}
)

func (d *diff) drawFile() store.File {
	key := pick(d, diffKeys, "key")
	if d.chance(40, "emptyKey") {
		key = "" // the whole batch must be refused
	}
	// The path: a scan derives the key from it (adapters/library.Key), but
	// the port does not rely on that (see the file comment).
	dir := pick(d, []string{"/music/", "/music2/"}, "dir")
	// The stat: mostly, for a known file, the stored one (an unchanged file
	// at a rescan: only its validity may change), otherwise any.
	st := pick(d, diffStats, "stat")
	if f, ok := d.mem.Peek(key); ok && !d.chance(3, "newStat") {
		st = store.Stat{Size: f.Size, MtimeMs: f.MtimeMs}
	}
	f := store.File{
		Key: key, Path: dir + key + ".flac",
		Size: st.Size, MtimeMs: st.MtimeMs,
		NeedsTagging: true,
		IsValid:      !d.chance(5, "invalid"),
	}
	if d.chance(2, "numbered") {
		// A scan's number: any from 1 to one past the sequence's value,
		// older or newer than the stored file's.
		cur, _ := d.mem.MetaValue(store.MetaStatSeq)
		n, _ := strconv.Atoi(cur)
		f.StatSeq = int64(1 + d.intn(n+1, "statSeq"))
	}
	if d.chance(4, "fullState") {
		// A new file is stored as given, whatever its tagging state.
		f.NeedsTagging = rapid.Bool().Draw(d.t, "needs")
		f.Tagged = rapid.Bool().Draw(d.t, "tagged")
		f.TaggedVersion = pick(d, diffVersions, "version")
		f.LastTaggedAt = d.drawTime("lastTagged", true)
		f.Attempts = d.intn(6, "attempts")
		f.NextRetryAt = d.drawTime("retry", true)
		f.SkipUntil = d.drawTime("skip", true)
		f.CrashCount = d.intn(3, "crashes")
		f.Failed = d.chance(4, "failed")
		f.LastError = pick(d, diffErrors, "error")
		f.Checkpoint = pick(d, diffCheckpoints, "checkpoint")
	}
	return f
}

// ---------------------------------------------------------------------------
// Operations

func (d *diff) opTick() {
	var step time.Duration
	if rapid.Bool().Draw(d.t, "tickBoundary") {
		step = pick(d, []time.Duration{time.Millisecond, time.Second, 10 * time.Second, 30 * time.Second}, "tick")
	} else {
		step = time.Duration(rapid.Int64Range(0, 90_000).Draw(d.t, "tickMs")) * time.Millisecond
	}
	d.now = d.now.Add(step)
	d.trace = append(d.trace, fmt.Sprintf("Tick(%s) -> now %s", step, fmtT(d.now)))
}

func (d *diff) opUpsert() {
	n := d.intn(7, "batch")
	files := make([]store.File, n)
	parts := make([]string, n)
	for i := range files {
		files[i] = d.drawFile()
		parts[i] = fmtFile(files[i])
	}
	mdid, merr := d.mem.UpsertFiles(bg, slices.Clone(files))
	sdid, serr := d.sql.UpsertFiles(bg, slices.Clone(files))
	d.same(d.call("UpsertFiles([%s])", strings.Join(parts, " ")), mdid, sdid, merr, serr)
	d.checkState()
}

func (d *diff) opNextStatSeq() {
	mn, merr := d.mem.NextStatSeq(bg)
	sn, serr := d.sql.NextStatSeq(bg)
	d.same(d.call("NextStatSeq()"), mn, sn, merr, serr)
}

func (d *diff) opDiscover() {
	now := d.now
	if d.chance(4, "discoverOther") {
		now = d.drawTime("discoverNow", true)
	}
	after := pick(d, diffCursors, "after")
	limit := d.intn(6, "limit") - 1
	mf, merr := d.mem.Discover(bg, now, after, limit)
	sf, serr := d.sql.Discover(bg, now, after, limit)
	d.same(d.call("Discover(%s, %q, %d)", fmtT(now), after, limit), mf, sf, merr, serr)
}

func (d *diff) opClaim() {
	// Mostly a file the reference store has as work (claimed or not), so
	// that claims often win or conflict rather than find nothing.
	var work []string
	for _, f := range d.mem.Files() {
		if f.EligibleIgnoringClaims(d.now) {
			work = append(work, f.Key)
		}
	}
	key := ""
	if len(work) > 0 && !d.chance(3, "claimAnyKey") {
		key = pick(d, work, "claimWork")
	} else {
		key = d.drawKey("claimKey")
	}
	c := store.Claim{FileKey: key, WorkerID: d.drawWorker("claimWorker"), ClaimedAt: d.now}
	if d.chance(5, "claimOther") {
		c.ClaimedAt = d.drawTime("claimedAt", false)
	}
	ttl := pick(d, []time.Duration{30 * time.Second, 0, time.Millisecond, 10 * time.Second, 60 * time.Second}, "ttl")
	c.LeaseUntil = c.ClaimedAt.Add(ttl)
	mf, merr := d.mem.Claim(bg, c)
	sf, serr := d.sql.Claim(bg, c)
	d.same(d.call("Claim(%s)", fmtClaim(c)), mf, sf, merr, serr)
	d.checkState()
}

func (d *diff) opComplete() {
	ref := d.drawRef()
	c := store.Completion{
		Version: pick(d, diffVersions[1:], "completeVersion"),
		At:      d.now,
	}
	switch d.intn(3, "tags") {
	case 1:
		c.Tags = map[string]string{}
	case 2:
		c.Tags = map[string]string{"nom:mood": pick(d, []string{"happy", "sad"}, "mood"), "nom_version": c.Version}
	}
	if rapid.Bool().Draw(d.t, "rewritten") {
		c.Rewritten = d.drawStat("rewrittenStat")
	}
	switch d.intn(4, "claimedKind") {
	case 1, 2: // the content as the reference store has it now (usually the claimed one)
		if f, ok := d.mem.Peek(ref.FileKey); ok {
			c.Claimed = &store.Stat{Size: f.Size, MtimeMs: f.MtimeMs}
		} else {
			c.Claimed = d.drawStat("claimedStat")
		}
	case 3:
		c.Claimed = d.drawStat("claimedStat")
	}
	merr := d.mem.Complete(bg, ref, c)
	serr := d.sql.Complete(bg, ref, c)
	d.same(d.call("Complete(%+v, {tags=%v version=%s at=%s rewritten=%s claimed=%s})",
		ref, c.Tags, c.Version, fmtT(c.At), fmtStat(c.Rewritten), fmtStat(c.Claimed)), nil, nil, merr, serr)
	d.checkState()
}

func (d *diff) opRelease() {
	ref := d.drawRef()
	var upd *store.FileUpdate
	desc := "nil"
	if !d.chance(3, "noUpdate") {
		upd = &store.FileUpdate{
			Attempts:    d.intn(6, "updAttempts"),
			NextRetryAt: d.drawTime("updRetry", true),
			SkipUntil:   d.drawTime("updSkip", true),
			Failed:      d.chance(5, "updFailed"),
			LastError:   pick(d, diffErrors, "updError"),
			Checkpoint:  pick(d, diffCheckpoints, "updCheckpoint"),
			Missing:     d.chance(5, "updMissing"),
		}
		switch d.intn(4, "updClaimedKind") {
		case 1, 2: // the content as the reference store has it now (usually the claimed one)
			if f, ok := d.mem.Peek(ref.FileKey); ok {
				upd.Claimed = &store.Stat{Size: f.Size, MtimeMs: f.MtimeMs}
			} else {
				upd.Claimed = d.drawStat("updClaimedStat")
			}
		case 3:
			upd.Claimed = d.drawStat("updClaimedStat")
		}
		desc = fmt.Sprintf("{attempts=%d retry=%s skip=%s failed=%v error=%q checkpoint=%q missing=%v claimed=%s}",
			upd.Attempts, fmtT(upd.NextRetryAt), fmtT(upd.SkipUntil), upd.Failed, upd.LastError, upd.Checkpoint, upd.Missing,
			fmtStat(upd.Claimed))
	}
	merr := d.mem.Release(bg, ref, upd)
	serr := d.sql.Release(bg, ref, upd)
	d.same(d.call("Release(%+v, %s)", ref, desc), nil, nil, merr, serr)
	d.checkState()
}

func (d *diff) opReleaseWorker() {
	w := d.drawWorker("releaseWorker")
	var crash *store.Crash
	desc := "nil"
	if rapid.Bool().Draw(d.t, "countCrash") {
		crash = &store.Crash{QuarantineAt: 1 + d.intn(3, "quarantineAt"), Reason: pick(d, []string{"crashed a worker", "poison"}, "crashReason")}
		desc = fmt.Sprintf("{quarantineAt=%d reason=%q}", crash.QuarantineAt, crash.Reason)
	}
	// A death from a few, so that calls repeat one (a retry) and receipts
	// of other worker ids are about; some far enough apart to prune.
	var death store.Death
	if id := pick(d, []string{"", "1", "2"}, "deathID"); id != "" {
		at := d.now.Add(pick(d, []time.Duration{0, -store.ReceiptKeep, store.ReceiptKeep, store.ReceiptKeep + time.Millisecond}, "deathAt"))
		death = store.Death{ID: id, At: at}
	}
	mr, merr := d.mem.ReleaseWorker(bg, w, death, crash)
	sr, serr := d.sql.ReleaseWorker(bg, w, death, crash)
	d.same(d.call("ReleaseWorker(%q, %+v, %s)", w, death, desc), mr, sr, merr, serr)
	d.checkState()
}

func (d *diff) opQuarantine() {
	k := d.drawKey("quarantineKey")
	reason := pick(d, []string{"crashed a worker", "poison"}, "reason")
	merr := d.mem.Quarantine(bg, k, reason)
	serr := d.sql.Quarantine(bg, k, reason)
	d.same(d.call("Quarantine(%q, %q)", k, reason), nil, nil, merr, serr)
	d.checkState()
}

func (d *diff) opRenew() {
	ids := d.some(diffWorkers, 3, "renewWorkers")
	until := d.drawTime("until", true)
	mn, merr := d.mem.RenewLeases(bg, slices.Clone(ids), until)
	sn, serr := d.sql.RenewLeases(bg, slices.Clone(ids), until)
	d.same(d.call("RenewLeases(%q, %s)", ids, fmtT(until)), mn, sn, merr, serr)
	d.checkState()
}

func (d *diff) opKeepClaim() {
	ref := d.drawRef()
	until := d.drawTime("keepUntil", true)
	merr := d.mem.KeepClaim(bg, ref, until)
	serr := d.sql.KeepClaim(bg, ref, until)
	d.same(d.call("KeepClaim(%+v, %s)", ref, fmtT(until)), nil, nil, merr, serr)
	d.checkState()
}

func (d *diff) opCleanup() {
	var before time.Time // zero: only ineligible files' claims go
	if !d.chance(4, "cleanupZero") {
		before = d.drawTime("expiredBefore", false)
	}
	mc, merr := d.mem.CleanupClaims(bg, before)
	sc, serr := d.sql.CleanupClaims(bg, before)
	d.same(d.call("CleanupClaims(%s)", fmtT(before)), mc, sc, merr, serr)
	if serr == nil && before.After(d.settled) {
		d.settled = before
	}
	d.checkState()
}

func (d *diff) opMarkMissing() {
	d.opKeys("MarkMissing", "missingKeys", store.Store.MarkMissing)
}

func (d *diff) opRetryFailed() {
	d.opKeys("RetryFailed", "retryKeys", store.Store.RetryFailed)
}

func (d *diff) opForgetMissing() {
	d.opKeys("ForgetMissing", "forgetKeys", store.Store.ForgetMissing)
}

// opKeys runs an operation over some lookup keys that returns a count.
func (d *diff) opKeys(name, label string, op func(store.Store, context.Context, []string) (int, error)) {
	keys := d.some(diffLookupKeys, 4, label)
	mn, merr := op(d.mem, bg, slices.Clone(keys))
	sn, serr := op(d.sql, bg, slices.Clone(keys))
	d.same(d.call(name+"(%q)", keys), mn, sn, merr, serr)
	d.checkState()
}

func (d *diff) opRetag() {
	version := pick(d, diffVersions, "retagVersion")
	d.opKeys(fmt.Sprintf("Retag[%q]", version), "retagKeys", func(st store.Store, ctx context.Context, keys []string) (int, error) {
		return st.Retag(ctx, keys, version)
	})
}

func (d *diff) opPutVector() {
	key := pick(d, diffLookupKeys, "vectorKey")
	version := pick(d, diffVersions, "vectorVersion")
	vec := []float32{1, float32(d.intn(3, "vectorValue"))}
	merr := d.mem.PutTrackVector(bg, key, version, vec)
	serr := d.sql.PutTrackVector(bg, key, version, vec)
	d.same(d.call("PutTrackVector(%q, %q, %v)", key, version, vec), nil, nil, merr, serr)
	d.checkState()
}

func (d *diff) opNeedsVector() {
	now := d.now
	if d.chance(4, "needsVectorOther") {
		now = d.drawTime("needsVectorNow", true)
	}
	version := pick(d, diffVersions, "needsVectorVersion")
	after := pick(d, diffCursors, "needsVectorAfter")
	limit := d.intn(6, "needsVectorLimit") - 1
	mf, merr := d.mem.NeedsVector(bg, now, version, after, limit)
	sf, serr := d.sql.NeedsVector(bg, now, version, after, limit)
	d.same(d.call("NeedsVector(%s, %q, %q, %d)", fmtT(now), version, after, limit), mf, sf, merr, serr)
}

func (d *diff) opCountJobs() {
	version := pick(d, diffVersions, "countJobsVersion")
	mc, merr := d.mem.CountJobs(bg, version)
	sc, serr := d.sql.CountJobs(bg, version)
	d.same(d.call("CountJobs(%q)", version), mc, sc, merr, serr)
}

// checkVectorJobs compares the files that need a vector of each model set
// (all of them, far in the future: no retry or skip time holds one back)
// and their count.
func (d *diff) checkVectorJobs() {
	d.t.Helper()
	far := diffBase.Add(1000 * time.Hour)
	for _, v := range diffVersions {
		mf, merr := d.mem.NeedsVector(bg, far, v, "", 0)
		sf, serr := d.sql.NeedsVector(bg, far, v, "", 0)
		d.same(d.call("  state: NeedsVector(%s, %q, \"\", 0)", fmtT(far), v), mf, sf, merr, serr)
		mc, merr := d.mem.CountJobs(bg, v)
		sc, serr := d.sql.CountJobs(bg, v)
		d.same(d.call("  state: CountJobs(%q)", v), mc, sc, merr, serr)
	}
}

func (d *diff) opFile() {
	k := d.drawKey("fileKey")
	mf, merr := d.mem.File(bg, k)
	sf, serr := d.sql.File(bg, k)
	d.same(d.call("File(%q)", k), mf, sf, merr, serr)
}

func (d *diff) opListFiles() {
	after := pick(d, diffCursors, "listAfter")
	limit := d.intn(5, "listLimit") - 1
	mf, merr := d.mem.ListFiles(bg, after, limit)
	sf, serr := d.sql.ListFiles(bg, after, limit)
	d.same(d.call("ListFiles(%q, %d)", after, limit), mf, sf, merr, serr)
}

func (d *diff) opCounts() {
	mc, merr := d.mem.Counts(bg)
	sc, serr := d.sql.Counts(bg)
	d.same("Counts()", mc, sc, merr, serr)
}

func (d *diff) opSetMeta() {
	k := pick(d, diffMetaKeys, "metaKey")
	v := pick(d, diffMetaValues, "metaValue")
	merr := d.mem.SetMeta(bg, k, v)
	serr := d.sql.SetMeta(bg, k, v)
	d.same(d.call("SetMeta(%q, %q)", k, v), nil, nil, merr, serr)
}

var diffMetaValues = []string{"", "true", "false", "h1"}

// opSwapMeta: old is mostly the current value (absent: ""), so that swaps
// succeed as often as they fail.
func (d *diff) opSwapMeta() {
	k := pick(d, diffMetaKeys, "swapMetaKey")
	old := pick(d, diffMetaValues, "swapOld")
	if cur, ok := d.mem.MetaValue(k); !d.chance(3, "swapAnyOld") {
		old = cur
		if !ok {
			old = ""
		}
	}
	v := pick(d, diffMetaValues, "swapValue")
	mok, merr := d.mem.SwapMeta(bg, k, old, v)
	sok, serr := d.sql.SwapMeta(bg, k, old, v)
	d.same(d.call("SwapMeta(%q, %q, %q)", k, old, v), mok, sok, merr, serr)
}

func (d *diff) opGetMeta() {
	k := pick(d, diffMetaLookups, "getMetaKey")
	mv, mok, merr := d.mem.GetMeta(bg, k)
	sv, sok, serr := d.sql.GetMeta(bg, k)
	d.same(d.call("GetMeta(%q)", k), fmt.Sprintf("%q %v", mv, mok), fmt.Sprintf("%q %v", sv, sok), merr, serr)
}

func (d *diff) opSaveRestart() {
	k := pick(d, diffRestartKeys, "restartKey")
	wall := d.now.UnixMilli()
	st := restart.State{
		Component:    pick(d, []string{"", "worker:discovery:0"}, "component"),
		RestartCount: d.intn(6, "restartCount"),
		Consecutive:  d.intn(6, "consecutive"),
	}
	switch d.intn(3, "recentKind") {
	case 1:
		st.Recent = []int64{}
	case 2:
		st.Recent = rapid.SliceOfN(rapid.Int64Range(wall-60_000, wall), 1, 3).Draw(d.t, "recent")
	}
	if rapid.Bool().Draw(d.t, "restarted") {
		st.LastRestartWallMs = wall
	}
	if d.chance(4, "restartFailed") {
		st.FailedAtWallMs, st.FailureReason = wall, "restart limit"
	}
	st.UpdatedAtWallMs = wall
	merr := d.mem.SaveRestart(bg, k, st)
	serr := d.sql.SaveRestart(bg, k, st)
	d.same(d.call("SaveRestart(%q, %+v)", k, st), nil, nil, merr, serr)
}

func (d *diff) opLoadRestart() {
	k := pick(d, diffRestartLook, "loadRestartKey")
	mst, mok, merr := d.mem.LoadRestart(bg, k)
	sst, sok, serr := d.sql.LoadRestart(bg, k)
	d.same(d.call("LoadRestart(%q) ok", k), mok, sok, merr, serr)
	d.same(d.call("LoadRestart(%q)", k), mst, sst, merr, serr)
}

func (d *diff) opAppendHistory() {
	n := d.intn(4, "historyRows")
	rows := make([]store.HistoryRow, n)
	for i := range rows {
		rows[i] = store.HistoryRow{At: d.drawTime("historyAt", false), Instance: "h1",
			Component: d.drawWorker("historyComponent"), Status: pick(d, []string{"healthy", "unhealthy"}, "status")}
	}
	merr := d.mem.AppendHistory(bg, slices.Clone(rows))
	serr := d.sql.AppendHistory(bg, slices.Clone(rows))
	d.same(d.call("AppendHistory(%s)", diffShow(rows)), nil, nil, merr, serr)
}

func (d *diff) opPruneHistory() {
	before := d.drawTime("pruneBefore", true)
	mn, merr := d.mem.PruneHistory(bg, before)
	sn, serr := d.sql.PruneHistory(bg, before)
	d.same(d.call("PruneHistory(%s)", fmtT(before)), mn, sn, merr, serr)
}
