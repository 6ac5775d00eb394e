// Package sqlite is the embedded default store (docs/design.md §10): one SQLite file,
// shared safely by several processes, implementing store.Store with
// modernc.org/sqlite (pure Go, no cgo).
//
// Connection setup: WAL journal, synchronous=NORMAL, foreign keys off, a busy
// timeout (default 5 s); a WAL grown past 8 MiB is checkpointed and
// truncated by the next write that finds it so (checkpoint.go). Every write runs in a BEGIN IMMEDIATE transaction on
// the handle's single writer connection, so two processes never deadlock on
// a read-to-write lock upgrade and writers in one process queue in Go instead
// of spinning on the file lock; reads use a small pool of query-only
// connections, which WAL lets run beside the writer. Times are stored as Unix
// milliseconds (0 for the zero time).
//
// The SQL is kept document-store shaped, like the port: single-row reads and
// writes by key, conditional UPDATE/DELETE whose condition sits in the same
// statement, and a transaction where the port says "atomically".
//
// Errors: the port's semantic errors come back wrapped (errors.Is works)
// with the operation and key as context; anything else (busy beyond the
// timeout, read-only file, disk full, I/O error) is a fault with a message
// that says which. A damaged file (SQLITE_CORRUPT; SQLITE_NOTADB for a
// file that starts as a SQLite database, its header cut or overwritten)
// is a fault that matches store.ErrCorrupt, at Open as at any operation,
// and says how to repair it (corrupt.go); SQLITE_NOTADB for any other
// file is ErrWrongDatabase.
//
// It has no server clock (store.ServerClock): the processes sharing the
// file run on one machine (never over a network file system), so they
// read one clock, and there is no skew between them to measure.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/nomarr/nomarr/core/store"
)

// SchemaVersion is the schema this package creates and understands; it is
// kept in meta under MetaSchemaVersion. Version 2 added library_counts and
// split the discovery index (version2), version 3 the files' stat_seq
// (version3), version 4 the track vectors (version4), version 5 the
// retag marks and the claims' kinds (version5); a database of an older version is upgraded when it is opened
// for writing.
const SchemaVersion = 5

// MetaSchemaVersion is the meta key holding the schema version.
const MetaSchemaVersion = "schema_version"

// DefaultBusyTimeout is how long an operation waits for another connection's
// lock before it fails.
const DefaultBusyTimeout = 5 * time.Second

// Option configures Open.
type Option func(*config)

type config struct {
	busyTimeout time.Duration
	readOnly    bool
	readers     int
	pragmas     []string      // extra per-connection pragmas (tests)
	fileCheck   time.Duration // how often the path is compared with the opened file (fileid.go)
	// integrityCheck: Open runs PRAGMA quick_check (WithIntegrityCheck).
	integrityCheck bool
}

// WithBusyTimeout sets how long an operation waits for a lock held by another
// connection or process before it fails with a "database is locked" error
// (default 5 s).
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) { c.busyTimeout = d }
}

// WithReadOnly opens the database read-only (SQLite URI mode=ro, plus
// query_only): the schema must exist already; every write fails with a
// read-only error. For inspection tools and for tests that must simulate a
// read-only file where permissions do not apply (root).
func WithReadOnly() Option {
	return func(c *config) { c.readOnly = true }
}

// WithReaders sets the number of read connections (default 4).
func WithReaders(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.readers = n
		}
	}
}

// Store is a store.Store on one SQLite file. It is safe for concurrent use;
// several Stores, in one process or many, may share the file.
type Store struct {
	path string
	cfg  config
	w    *sql.DB // one connection, BEGIN IMMEDIATE
	r    *sql.DB // query-only connections
	ws   stmts   // prepared on w
	rs   stmts   // prepared on r

	closed      atomic.Bool
	id          fileID       // the opened file (fileid.go)
	checkedAt   atomic.Int64 // when the path was last compared with id (unix ns)
	replaced    atomic.Bool  // the path no longer names the opened file
	busyRetries atomic.Int64 // write attempts that found the lock taken
	busyWaitNs  atomic.Int64 // time spent waiting for the write lock
	busyMaxNs   atomic.Int64 // longest wait of one operation

	walBusy        atomic.Bool  // a checkpoint attempt is under way (checkpoint.go)
	walRetryAt     atomic.Int64 // no attempt before then (unix ns)
	walFails       atomic.Int64 // attempts that failed in a row at one frame
	walDone        atomic.Int64 // frames copied when the last attempt failed
	walTruncations atomic.Int64
	walAttempts    atomic.Int64 // checkpoint attempts made (tests)

	holders holders // who has the file open, for "database is locked" (holders.go)

	// The file keeps vector_missing: NeedsVector and CountJobs read it
	// (vectormissing.go). nil: they walk the tagged files.
	vectorMissing *vectorMissingStmts
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path and makes sure the
// schema exists. Several processes may open the same new file at once.
func Open(path string, opts ...Option) (*Store, error) {
	cfg := config{busyTimeout: DefaultBusyTimeout, readers: 4, fileCheck: time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.busyTimeout < 0 {
		cfg.busyTimeout = 0
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s := &Store{path: abs, cfg: cfg}
	if err := s.open(); err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, s.describe(err))
	}
	s.id, _ = statID(abs)
	s.checkedAt.Store(time.Now().UnixNano())
	return s, nil
}

// Path returns the database file's absolute path.
func (s *Store) Path() string { return s.path }

// Close closes the store's connections. Calls after Close fail with an
// error (they do not panic); a second Close does nothing.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if err := s.closeDBs(); err != nil {
		return fmt.Errorf("sqlite: close %s: %w", s.path, err)
	}
	return nil
}

func (s *Store) closeDBs() error {
	var errs []error
	for _, st := range []*stmts{&s.ws, &s.rs} {
		errs = append(errs, st.close())
	}
	if vm := s.vectorMissing; vm != nil {
		errs = append(errs, vm.needs.Close(), vm.count.Close())
	}
	for _, db := range []*sql.DB{s.w, s.r} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

func (s *Store) dsn(write bool) string {
	q := url.Values{}
	busy := s.cfg.busyTimeout
	if write && !s.cfg.readOnly {
		busy = 0 // withTx waits for the write lock itself
	}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(0)")
	for _, p := range s.cfg.pragmas {
		q.Add("_pragma", p)
	}
	if s.cfg.readOnly {
		q.Set("mode", "ro")
	}
	if write && !s.cfg.readOnly {
		q.Add("_pragma", "journal_size_limit("+strconv.Itoa(walCheckpointAt)+")")
		q.Set("_txlock", "immediate")
	} else {
		q.Set("_query_only", "1")
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: s.path, RawQuery: q.Encode()}
	return u.String()
}

func (s *Store) open() error {
	var err error
	if s.w, err = sql.Open("sqlite", s.dsn(true)); err != nil {
		return err
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if s.r, err = sql.Open("sqlite", s.dsn(false)); err != nil {
		return err
	}
	s.r.SetMaxOpenConns(s.cfg.readers)
	s.r.SetMaxIdleConns(s.cfg.readers)
	s.r.SetConnMaxLifetime(0)
	s.r.SetConnMaxIdleTime(0)
	ctx := context.Background()
	if err := s.bootstrap(ctx); err != nil {
		return err
	}
	if s.cfg.integrityCheck {
		if err := s.quickCheck(ctx); err != nil {
			return err
		}
	}
	if err := s.ws.prepare(ctx, s.w, writeSQL); err != nil {
		return err
	}
	if err := s.rs.prepare(ctx, s.r, readSQL); err != nil {
		return err
	}
	if err := s.ensureVectorMissing(ctx); err != nil { // vectormissing.go
		return err
	}
	if !s.cfg.readOnly {
		s.ensureBrowse(ctx) // browse.go
		// Waits that ended while no main process ran its cleanup (between
		// two runs of `nomarr tag`) are settled now, by the wall clock: a
		// discovery sorts every ended wait not yet settled. Best effort: a
		// flag left as it is costs discovery time, never a file, and the
		// next cleanup settles it. It waits 200 ms at most for another
		// process's write lock: a worker starting while the store is busy
		// or locked is not held up for it.
		_ = s.settleWaits(ctx, time.Now(), openSettleWait)
	}
	return nil
}

// ErrWrongDatabase: the file is not a store of this program, nor a new
// one — another program's database, a file that is not SQLite, or a schema
// newer than this program's. Opening it again will not help: a caller
// treats it as a configuration error, not an outage.
var ErrWrongDatabase = errors.New("wrong database")

// wrongDatabase is an error that matches ErrWrongDatabase and says why in
// its own words.
type wrongDatabase struct{ error }

func (wrongDatabase) Is(target error) bool { return target == ErrWrongDatabase }
func (w wrongDatabase) Unwrap() error      { return w.error }

// bootstrap switches the file to WAL and creates the schema if needed. It is
// idempotent and safe when several processes open a new file at once: the
// journal-mode switch is retried while another process holds the file, and
// the DDL runs in one IMMEDIATE transaction that re-checks the version.
func (s *Store) bootstrap(ctx context.Context) error {
	v, tables, err := s.inspect(ctx)
	if err != nil {
		return err
	}
	if v == SchemaVersion {
		if err := s.checkWAL(ctx); err != nil {
			return err
		}
		if !s.cfg.readOnly {
			s.ensureExtras(ctx)
			s.ensureCounts(ctx)
		}
		return nil
	}
	if v > SchemaVersion {
		return wrongDatabase{fmt.Errorf("schema version %d is newer than this program's %d", v, SchemaVersion)}
	}
	if s.cfg.readOnly {
		if v > 0 {
			return fmt.Errorf("schema version %d is older than this program's %d: open it once for writing (nomarr scan, tag or serve) to upgrade it", v, SchemaVersion)
		}
		return errors.New("no schema (a read-only open needs an existing database)")
	}
	if v > 0 {
		return s.upgrade(ctx, v)
	}
	// Tables without a schema version are not a database this program made
	// (its DDL and the version are written in one transaction): another
	// program's database given by mistake, or an incompatible layout. It is
	// refused untouched, neither switched to WAL nor given tables.
	if len(tables) > 0 {
		return wrongDatabase{fmt.Errorf("not a nomarr database: it has tables (%s) but no %s in a meta table; "+
			"give --db a new file or an existing nomarr database", strings.Join(tables, ", "), MetaSchemaVersion)}
	}
	if err := s.setWAL(ctx); err != nil {
		return err
	}
	return s.withTx(ctx, func(tx *sql.Tx) error {
		var cur int
		err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, MetaSchemaVersion).Scan(&cur)
		if err == nil && cur >= SchemaVersion {
			return nil // another process created it meanwhile
		}
		if err := execSchema(ctx, tx, slices.Concat(schema, version2, version3, version4, version5, extrasDDL())); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
		return stampVersion(ctx, tx)
	})
}

// upgrade brings a database of an older schema version to this one, in one
// IMMEDIATE transaction that re-checks the version (another process may
// have upgraded it meanwhile). Version 1 → 2 adds library_counts, counted
// once from the files there, and the waiting column with its two indexes
// (3.7–5.6 s a million files on a 2-core machine); 2 → 3 adds the stat_seq
// column (SQLite adds a column with a constant default without rewriting
// the table); 3 → 4 adds the empty track_vectors table; 4 → 5 the
// needs_retag and kind columns and the indexes of version5. A program of an
// older version refuses the file once upgraded.
func (s *Store) upgrade(ctx context.Context, from int) error {
	if err := s.checkWAL(ctx); err != nil {
		return err
	}
	// Every process that opens the file meanwhile waits for the upgrade
	// (one transaction: 3.7–5.6 s a million files on a 2-core machine, BenchmarkUpgrade), not
	// for the busy timeout only; then it finds the file upgraded.
	return s.withTxWaiting(ctx, upgradeWait, func(tx *sql.Tx) error {
		cur, err := schemaVersion(ctx, tx)
		if err != nil || cur >= SchemaVersion {
			return err
		}
		var ddl []string
		switch cur {
		case 1:
			ddl = slices.Concat(version2, version3, version4, version5, extrasDDL())
		case 2:
			ddl = slices.Concat(version3, version4, version5, extrasDDL())
		case 3:
			ddl = slices.Concat(version4, version5, extrasDDL())
		case 4:
			ddl = slices.Concat(version5, extrasDDL())
		default:
			return fmt.Errorf("schema version %d cannot be upgraded (known: 1, 2, 3, 4)", cur)
		}
		if err := execSchema(ctx, tx, ddl); err != nil {
			return fmt.Errorf("schema upgrade %d → %d: %w", from, SchemaVersion, err)
		}
		return stampVersion(ctx, tx)
	})
}

// ensureExtras creates the extras a database of this schema version lacks
// (made before they were added). Best effort, as they only make a
// statement faster: when the write lock cannot be had (another process
// holds it past the busy timeout) or the build fails, the store opens
// without them and the next open for writing tries again.
func (s *Store) ensureExtras(ctx context.Context) {
	have, err := strings1Ctx(ctx, s.r, `SELECT name FROM sqlite_schema WHERE type = 'index'`)
	if err != nil {
		return
	}
	var ddl []string
	for _, x := range extras {
		if !slices.Contains(have, x.name) {
			ddl = append(ddl, x.ddl)
		}
	}
	if len(ddl) == 0 {
		return
	}
	_ = s.withTx(ctx, func(tx *sql.Tx) error { return execSchema(ctx, tx, ddl) })
}

// ensureCounts rebuilds the library_counts triggers, recounts the rows
// and numbers the rule (countsDDL) when the file's rule is older than this
// program's (countsStale). One IMMEDIATE transaction that checks again
// (another process may have rebuilt them meanwhile), so the rows equal a
// recount at its commit. Best effort, as ensureExtras: when the write lock
// cannot be had, the counts keep the rule the file holds until the next
// open for writing.
func (s *Store) ensureCounts(ctx context.Context) {
	if !countsStale(ctx, s.r) {
		return
	}
	_ = s.withTx(ctx, func(tx *sql.Tx) error {
		if !countsStale(ctx, tx) {
			return nil
		}
		return execSchema(ctx, tx, countsDDL)
	})
}

// querier reads: a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// countsStale reports whether the file's library_counts triggers count by
// a rule older than countsRule. A file with a rule number is judged by the
// number only: a higher one is a newer program's rule, kept (its triggers'
// text, whatever it is, is that program's). A file without one was built
// before the number existed: by rule 1 unless its triggers are this
// program's text (rule 2 built before the number). Anything unreadable
// (the number not a number included) leaves the file as it is.
func countsStale(ctx context.Context, q querier) bool {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, metaCountsRule).Scan(&v)
	switch {
	case err == nil:
		n, err := strconv.Atoi(v)
		return err == nil && n < countsRule
	case errors.Is(err, sql.ErrNoRows):
		have, err := triggersSQL(ctx, q)
		return err == nil && !slices.Equal(have, countsTriggers())
	default:
		return false
	}
}

// countsTriggers is the text of the CREATE TRIGGER statements of
// countsDDL, as sqlite_schema keeps them, by name.
func countsTriggers() []string {
	var out []string
	for _, ddl := range countsDDL {
		if strings.HasPrefix(ddl, "CREATE TRIGGER ") {
			out = append(out, ddl)
		}
	}
	slices.Sort(out)
	return out
}

// triggersSQL reads the library_counts triggers' text, sorted.
func triggersSQL(ctx context.Context, q querier) ([]string, error) {
	return strings1Ctx(ctx, q, `SELECT sql FROM sqlite_schema
		WHERE type = 'trigger' AND name LIKE 'library\_counts\_%' ESCAPE '\' ORDER BY sql`)
}

// strings1Ctx reads a one-column result of strings.
func strings1Ctx(ctx context.Context, db querier, q string) ([]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// execSchema runs schema statements in order; ?1 in one is now, by the
// wall clock (the waits that have not ended).
func execSchema(ctx context.Context, tx *sql.Tx, stmts []string) error {
	for _, ddl := range stmts {
		var args []any
		if strings.Contains(ddl, "?1") {
			args = append(args, ms(time.Now()))
		}
		if _, err := tx.ExecContext(ctx, ddl, args...); err != nil {
			return err
		}
	}
	return nil
}

// openSettleWait is how long Open waits for the write lock to settle ended
// waits before it leaves them to the next cleanup.
const openSettleWait = 200 * time.Millisecond

// upgradeWait is how long an open waits for the write lock to upgrade the
// schema, or for another process's upgrade to end.
const upgradeWait = 5 * time.Minute

// stampVersion writes SchemaVersion into meta.
func stampVersion(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, MetaSchemaVersion, strconv.Itoa(SchemaVersion))
	return err
}

// inspect reads the schema version and the file's tables in one read
// transaction, so both come from one snapshot: read apart, another
// process creating the schema in between showed tables without a version,
// a nomarr database taken for another program's.
func (s *Store) inspect(ctx context.Context) (version int, tables []string, err error) {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read only
	if version, err = schemaVersion(ctx, tx); err != nil {
		return 0, nil, err
	}
	tables, err = listTables(ctx, tx)
	return version, tables, err
}

// listTables lists the file's tables, SQLite's own left out.
func listTables(ctx context.Context, tx *sql.Tx) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

// schemaVersion reads the version in meta, 0 when there is no schema yet.
func schemaVersion(ctx context.Context, db *sql.Tx) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'meta'`).Scan(&n)
	if err != nil || n == 0 {
		return 0, err
	}
	var v string
	err = db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, MetaSchemaVersion).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err = strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("bad %s %q in meta", MetaSchemaVersion, v)
	}
	return n, nil
}

// setWAL switches the file to WAL (persistent in the file). Switching needs
// the file to itself for a moment; another process opening it at the same
// time may make it busy, so it is retried until the busy timeout.
func (s *Store) setWAL(ctx context.Context) error {
	deadline := time.Now().Add(s.cfg.busyTimeout)
	for {
		var mode string
		err := s.w.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode)
		if err == nil {
			if !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("journal_mode is %q, want wal", mode)
			}
			return nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			return fmt.Errorf("set WAL journal: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (s *Store) checkWAL(ctx context.Context) error {
	var mode string
	if err := s.r.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return err
	}
	if strings.EqualFold(mode, "wal") || s.cfg.readOnly {
		return nil
	}
	return s.setWAL(ctx)
}

// withTx runs fn in a write transaction (BEGIN IMMEDIATE) and commits it, or
// rolls it back when fn or the commit fails.
//
// While another connection or process holds the write lock, it tries again
// after short randomized sleeps (50 µs, doubling up to 1 ms) until the busy
// timeout: the writer connection has SQLite's busy timeout at 0, because
// SQLite's own busy handler sleeps 1, 2, 5, 10, … 100 ms between tries, which
// lets a busy neighbour starve everyone else. fn may therefore run more than
// once; every failed attempt has been rolled back, so it starts afresh.
func (s *Store) withTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.withTxWaiting(ctx, s.cfg.busyTimeout, fn)
}

// withTxWaiting is withTx waiting up to limit for the write lock.
func (s *Store) withTxWaiting(ctx context.Context, limit time.Duration, fn func(tx *sql.Tx) error) error {
	if err := s.checkFile(); err != nil {
		return err
	}
	var first, deadline time.Time
	wait := 50 * time.Microsecond
	for {
		err := s.tryTx(ctx, fn)
		if err != nil && !first.IsZero() && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// The caller's deadline came while a try ran, not while it
			// slept between tries: the write gave up on the lock all the
			// same, and says so (the lock is what an operator must find).
			s.noteWait(time.Since(first))
			return fmt.Errorf("database is locked by another connection or process; gave up after %s%s: %w",
				time.Since(first).Round(time.Millisecond), s.holders.describe(s.path), err)
		}
		if err == nil || !isBusy(err) {
			if !first.IsZero() {
				s.noteWait(time.Since(first))
			}
			if err == nil {
				s.maybeCheckpoint(ctx)
			}
			return err
		}
		s.busyRetries.Add(1)
		now := time.Now()
		if deadline.IsZero() {
			first, deadline = now, now.Add(limit)
		}
		if !now.Before(deadline) {
			s.noteWait(now.Sub(first))
			return err
		}
		d := min(wait/2+rand.N(wait), deadline.Sub(now))
		if ctx.Done() == nil {
			time.Sleep(d)
		} else {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				s.noteWait(time.Since(first))
				return fmt.Errorf("database is locked by another connection or process; gave up after %s%s: %w",
					time.Since(first).Round(time.Millisecond), s.holders.describe(s.path), ctx.Err())
			case <-t.C:
			}
		}
		wait = min(2*wait, time.Millisecond)
	}
}

func (s *Store) noteWait(d time.Duration) {
	s.busyWaitNs.Add(int64(d))
	for {
		m := s.busyMaxNs.Load()
		if int64(d) <= m || s.busyMaxNs.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// LockStats reports how often this handle's writes found the write lock
// taken by another connection or process, the total time they waited for it
// and the longest single wait.
func (s *Store) LockStats() (retries int64, total, longest time.Duration) {
	return s.busyRetries.Load(), time.Duration(s.busyWaitNs.Load()), time.Duration(s.busyMaxNs.Load())
}

func (s *Store) tryTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		// A COMMIT that failed may leave the transaction open on the
		// connection: end it (an error here means it was not open).
		_, _ = s.w.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	return nil
}

// describe adds what a SQLite fault means to its message; semantic errors and
// context errors pass unchanged.
func (s *Store) describe(err error) error {
	if err == nil {
		return nil
	}
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return fmt.Errorf("database is locked by another connection or process (waited %s busy_timeout)%s: %w",
			s.cfg.busyTimeout, s.holders.describe(s.path), err)
	case sqlite3.SQLITE_READONLY:
		return fmt.Errorf("database is read-only (file or directory not writable, or opened read-only): %w", err)
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("disk or database full: %w", err)
	case sqlite3.SQLITE_CANTOPEN:
		return fmt.Errorf("cannot open database file (missing directory or permissions): %w", err)
	case sqlite3.SQLITE_IOERR:
		return fmt.Errorf("I/O error: %w", err)
	case sqlite3.SQLITE_NOTADB:
		if looksLikeSQLite(s.path) {
			return corrupt{path: s.path, err: err}
		}
		return wrongDatabase{fmt.Errorf("the file is not a SQLite database: %w", err)}
	case sqlite3.SQLITE_CORRUPT:
		return corrupt{path: s.path, err: err}
	}
	return err
}

func isBusy(err error) bool {
	var se *msqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// fail wraps err with the operation's context: "sqlite: claim f0001: ...".
func (s *Store) fail(op, key string, err error) error {
	if key != "" {
		op += " " + key
	}
	return fmt.Errorf("sqlite: %s: %w", op, s.describe(err))
}

// ms converts a time to stored Unix milliseconds (0 for the zero time).
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// tm converts stored Unix milliseconds back (0 is the zero time).
func tm(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
