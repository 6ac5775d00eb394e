// Package arangodb is the ArangoDB store (docs/design.md §1, §10): one ArangoDB
// database shared by the supervisors of several hosts, implementing
// store.Store with github.com/arangodb/go-driver/v2 over HTTP/1.1.
//
// Layout: the collections library_files, worker_claims,
// worker_restart_policy, health_history, meta and file_tags, created on
// first start together with their persistent indexes (see schema.go). Every
// port method is one AQL query (queries.go), or one stream transaction where
// the port says "atomically" across collections (Complete, Release with an
// update, ReleaseWorker), or a read-only one where a library page takes
// more than one query (browseByScore). Booleans are JSON booleans, times Unix
// milliseconds (0 for the zero time), as in the SQLite store.
//
// Concurrency: ArangoDB's RocksDB engine locks documents on write; two
// operations writing the same document at once make one of them fail with a
// write-write conflict (error 1200) and roll it back. Such an operation is
// run again (it had no effect) with a short randomized backoff, for at most
// the conflict budget (default 2 s). A statement over many documents
// (RenewLeases, CleanupClaims, ReleaseWorker, PruneHistory) that meets one a
// concurrent transaction deleted fails with "document not found" (error
// 1202); it is run again the same way, on a fresh snapshot that no longer
// selects the document. A claim insert that meets an existing claim fails
// with a unique-constraint violation (error 1210): that is the lost race,
// store.ErrConflict.
//
// Deployment: a single server, or a cluster with all collections' shards
// on one DB-Server — only then are the stream transactions (Complete,
// Release, ReleaseWorker) and the queries that read one collection and
// write another (Claim, CleanupClaims) atomic and isolated. A database this
// package creates is a OneShard database (sharding "single"); collections it
// creates in an existing database get one shard, all placed like
// library_files's (distributeShardsLike), see schema.go.
//
// Errors: the port's semantic errors come back wrapped (errors.Is works),
// "arangodb: claim f0001: store: claim already exists". Anything else is a
// fault (store.IsFault): connection refused, timeouts and HTTP 5xx read
// "arangodb: <op>: server unreachable at HOST:PORT: …"; authentication,
// permission and missing-database errors say which. The password given in
// the URL is only ever sent in the Authorization header: no error or log
// line carries it (Redacted shows a URL safely). Read-only operations are
// retried on HTTP 503 and on transport errors (a few attempts, short
// backoff); writes never are, since a write whose answer was lost may have
// been applied.
package arangodb

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/arangodb/go-driver/v2/arangodb"
	"github.com/arangodb/go-driver/v2/arangodb/shared"
	"github.com/arangodb/go-driver/v2/connection"

	"github.com/nomarr/nomarr/core/store"
)

// DefaultPort is used when the URL names none.
const DefaultPort = 8529

// DefaultDatabase is used when the URL names none.
const DefaultDatabase = "nomarr"

// Defaults of the options.
const (
	DefaultTimeout        = 10 * time.Second
	DefaultReadAttempts   = 3
	DefaultConflictBudget = 2 * time.Second
)

// Option configures Open.
type Option func(*config)

type config struct {
	timeout        time.Duration
	readAttempts   int
	conflictBudget time.Duration
	createDB       bool
	tlsConfig      *tls.Config
	transport      http.RoundTripper
	retryBase      time.Duration
}

// WithTimeout bounds every operation (and Open's bootstrap, per request)
// when the caller's context has no earlier deadline (default 10 s; 0: no
// bound of the store's own).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithReadAttempts sets how often a read-only operation is tried when the
// server answers 503 or the connection fails (default 3; 1: no retry).
func WithReadAttempts(n int) Option {
	return func(c *config) {
		if n >= 1 {
			c.readAttempts = n
		}
	}
}

// WithConflictBudget sets how long an operation that meets write-write
// conflicts is tried again before it fails (default 2 s).
func WithConflictBudget(d time.Duration) Option { return func(c *config) { c.conflictBudget = d } }

// WithoutCreateDatabase makes Open fail when the database does not exist
// instead of creating it (for users without the right to create databases
// this is what happens anyway, with a clear error).
func WithoutCreateDatabase() Option { return func(c *config) { c.createDB = false } }

// WithTLSConfig sets the TLS configuration for arangodbs:// URLs (custom CA,
// client certificates).
func WithTLSConfig(t *tls.Config) Option { return func(c *config) { c.tlsConfig = t } }

// WithTransport replaces the HTTP transport (tests, proxies).
func WithTransport(rt http.RoundTripper) Option { return func(c *config) { c.transport = rt } }

// withRetryBase shortens the backoff between attempts (tests).
func withRetryBase(d time.Duration) Option { return func(c *config) { c.retryBase = d } }

// target is a parsed store URL.
type target struct {
	endpoint string // http(s)://host:port
	host     string // host:port, for messages
	user     string
	password string
	auth     bool
	db       string
}

// Store is a store.Store on one ArangoDB database. It is safe for concurrent
// use; any number of Stores, in one process or on many hosts, may share the
// database.
type Store struct {
	t         target
	redacted  string
	cfg       config
	transport *http.Transport // ours, when not replaced by WithTransport
	client    arangodb.Client
	db        arangodb.Database

	closed          atomic.Bool
	conflictRetries atomic.Int64
	readRetries     atomic.Int64
}

var _ store.Store = (*Store)(nil)

// Open connects to the database named by rawURL — arangodb://USER:PASS@HOST:PORT/DB
// (HTTP) or arangodbs://… (HTTPS); without USER:PASS no authentication is
// sent — creating the database (when missing and permitted), its
// collections and indexes if needed. Several processes may open a new
// database at once.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	cfg := config{
		timeout: DefaultTimeout, readAttempts: DefaultReadAttempts,
		conflictBudget: DefaultConflictBudget, createDB: true, retryBase: 20 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	red := Redacted(rawURL)
	t, err := parseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("arangodb: open %s: %w", red, err)
	}
	s := &Store{t: t, redacted: red, cfg: cfg}
	rt := cfg.transport
	if rt == nil {
		s.transport = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:       cfg.tlsConfig,
			TLSHandshakeTimeout:   5 * time.Second,
			MaxIdleConns:          128,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       60 * time.Second, // below arangod's keep-alive timeout (300 s)
			ExpectContinueTimeout: time.Second,
		}
		rt = s.transport
	}
	conn := connection.NewHttpConnection(connection.HttpConfiguration{
		Endpoint:    connection.NewRoundRobinEndpoints([]string{t.endpoint}),
		ContentType: connection.ApplicationJSON,
		Transport:   rt,
	})
	if t.auth {
		if err := conn.SetAuthentication(connection.NewBasicAuth(t.user, t.password)); err != nil {
			return nil, fmt.Errorf("arangodb: open %s: %w", red, err)
		}
	}
	s.client = arangodb.NewClient(conn)
	s.db, err = s.client.GetDatabase(ctx, t.db, &arangodb.GetDatabaseOptions{SkipExistCheck: true})
	if err != nil {
		return nil, s.fault("open "+red, err)
	}
	if err := s.bootstrap(ctx); err != nil {
		s.closeIdle()
		return nil, err
	}
	return s, nil
}

// String returns the store's URL without its password.
func (s *Store) String() string { return s.redacted }

// Database returns the database name.
func (s *Store) Database() string { return s.t.db }

// Close releases the store's idle connections. Calls after Close fail with
// an error (they do not panic); a second Close does nothing.
func (s *Store) Close() error {
	if s.closed.CompareAndSwap(false, true) {
		s.closeIdle()
	}
	return nil
}

func (s *Store) closeIdle() {
	if s.transport != nil {
		s.transport.CloseIdleConnections()
	}
}

// Stats reports how many times operations were run again after a
// write-write conflict, and how many read attempts were repeated after a
// 503 or a transport error.
func (s *Store) Stats() (conflictRetries, readRetries int64) {
	return s.conflictRetries.Load(), s.readRetries.Load()
}

// --- URLs ---

// parseURL parses arangodb://USER:PASS@HOST:PORT/DB. Its errors never
// contain the password.
func parseURL(raw string) (target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the url.Error repeats the whole URL
		}
		return target{}, fmt.Errorf("invalid URL: %s", scrub(err.Error(), passwordOf(raw)))
	}
	var t target
	switch strings.ToLower(u.Scheme) {
	case "arangodb", "http":
		t.endpoint = "http://"
	case "arangodbs", "https":
		t.endpoint = "https://"
	default:
		return target{}, fmt.Errorf("invalid URL: scheme %q, want arangodb:// or arangodbs://", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return target{}, errors.New("invalid URL: no host (want arangodb://USER:PASS@HOST:8529/DB)")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return target{}, errors.New("invalid URL: no host")
	}
	if port == "" {
		port = strconv.Itoa(DefaultPort)
	}
	t.host = net.JoinHostPort(host, port)
	t.endpoint += t.host
	if u.User != nil {
		t.auth = true
		t.user = u.User.Username()
		t.password, _ = u.User.Password()
		if t.user == "" {
			return target{}, errors.New("invalid URL: empty user name")
		}
	}
	db := strings.TrimPrefix(u.Path, "/")
	switch {
	case db == "":
		db = DefaultDatabase
	case strings.ContainsAny(db, "/@"):
		return target{}, errors.New("invalid URL: the path must be one database name (a password with '/' or '@' must be percent-encoded)")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return target{}, errors.New("invalid URL: no query or fragment expected")
	}
	t.db = db
	return t, nil
}

// Redacted returns rawURL with its password replaced by "xxxxx", for logs
// and messages. When the URL cannot be parsed it redacts everything between
// the first ':' after the scheme and the last '@', so that no password can
// show even in a malformed URL.
func Redacted(rawURL string) string {
	if !strings.Contains(rawURL, "@") {
		return rawURL // no user info, nothing to hide
	}
	if u, err := url.Parse(rawURL); err == nil && u.User != nil && !strings.Contains(u.Host+u.Path+u.RawQuery+u.Fragment, "@") {
		return u.Redacted()
	}
	rest, prefix := rawURL, ""
	if i := strings.Index(rest, "://"); i >= 0 {
		prefix, rest = rest[:i+3], rest[i+3:]
	}
	at := strings.LastIndex(rest, "@")
	user := rest[:at]
	if c := strings.Index(user, ":"); c >= 0 {
		user = user[:c] + ":xxxxx"
	} else {
		user = "xxxxx" // could be a password without a user
	}
	return prefix + user + rest[at:]
}

// passwordOf extracts the password of a possibly malformed URL, so that it
// can be scrubbed from messages.
func passwordOf(raw string) string {
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return ""
	}
	user := rest[:at]
	if c := strings.Index(user, ":"); c >= 0 {
		return user[c+1:]
	}
	return user
}

// scrub removes a password from a message. Very short passwords are left
// alone: they cannot be told apart from ordinary text (and never get into
// messages in the first place: this is a second line of defence).
func scrub(msg, password string) string {
	if len(password) < 4 {
		return msg
	}
	msg = strings.ReplaceAll(msg, password, "xxxxx")
	if esc := url.QueryEscape(password); esc != password {
		msg = strings.ReplaceAll(msg, esc, "xxxxx")
	}
	if esc := url.PathEscape(password); esc != password {
		msg = strings.ReplaceAll(msg, esc, "xxxxx")
	}
	return msg
}

// --- errors ---

// ArangoDB error numbers this package reacts to.
const (
	errLockTimeout   = 18
	errDeadlock      = 29
	errDuplicateID   = 1005 // an index name taken by another definition ("duplicate value for `id` or `name`")
	errConflict      = 1200 // write-write conflict, lock timeout on a document
	errDocNotFound   = 1202
	errCollNotFound  = 1203
	errDuplicateName = 1207
	errUniqueViolate = 1210
	errDBNotFound    = 1228
	errTxInUse       = 28 // a stream transaction still running a query ("transaction ... is already in use")
	errTryAgain      = 1302
	errBusy          = 1303
)

func arangoErr(err error) (shared.ArangoError, bool) {
	var ae shared.ArangoError
	if errors.As(err, &ae) && ae.HasError {
		return ae, true
	}
	return ae, false
}

func hasErrorNum(err error, nums ...int) bool {
	ae, ok := arangoErr(err)
	if !ok {
		return false
	}
	for _, n := range nums {
		if ae.ErrorNum == n {
			return true
		}
	}
	return false
}

// isWriteConflict: the operation was rolled back because another one held
// or changed a document it writes; running it again is safe.
func isWriteConflict(err error) bool {
	return hasErrorNum(err, errConflict, errLockTimeout, errDeadlock, errTryAgain, errBusy)
}

// isTransient: a read may be tried again.
func isTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if ae, ok := arangoErr(err); ok {
		return ae.Code == http.StatusServiceUnavailable
	}
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne)
}

// faultError is a store fault. Its message never contains the password.
type faultError struct {
	msg   string
	cause error
}

func (e *faultError) Error() string { return e.msg }
func (e *faultError) Unwrap() error { return e.cause }

var errClosed = errors.New("store is closed")

// fail wraps err with the operation's context: semantic errors stay
// themselves (errors.Is), anything else becomes a fault.
func (s *Store) fail(op, key string, err error) error {
	if key != "" {
		op += " " + key
	}
	for _, sem := range []error{store.ErrConflict, store.ErrNotEligible, store.ErrClaimLost, store.ErrNotFound} {
		if errors.Is(err, sem) {
			return fmt.Errorf("arangodb: %s: %w", op, err)
		}
	}
	return s.fault(op, err)
}

// fault describes err: what failed, where, and why, without credentials.
func (s *Store) fault(op string, err error) error {
	var msg string
	unreachable := func(detail string) string {
		return fmt.Sprintf("arangodb: %s: server unreachable at %s: %s", op, s.t.host, detail)
	}
	ae, isArango := arangoErr(err)
	var ue *url.Error
	switch {
	case errors.Is(err, errClosed):
		msg = fmt.Sprintf("arangodb: %s: %v", op, errClosed)
	case errors.Is(err, context.DeadlineExceeded):
		msg = unreachable("no answer in time (context deadline exceeded)")
	case errors.Is(err, context.Canceled):
		msg = fmt.Sprintf("arangodb: %s: canceled (%v)", op, context.Canceled)
	case isArango && ae.Code >= 500:
		msg = unreachable(fmt.Sprintf("HTTP %d %s (error %d): %s", ae.Code, http.StatusText(ae.Code), ae.ErrorNum, ae.ErrorMessage))
	case isArango && ae.Code == http.StatusUnauthorized:
		msg = fmt.Sprintf("arangodb: %s: authentication failed at %s for user %q (HTTP 401): check the user and password in the URL", op, s.t.host, s.t.user)
	case isArango && ae.Code == http.StatusForbidden:
		msg = fmt.Sprintf("arangodb: %s: permission denied at %s for user %q on database %q (HTTP 403, error %d): %s", op, s.t.host, s.t.user, s.t.db, ae.ErrorNum, ae.ErrorMessage)
	case isArango && ae.ErrorNum == errDBNotFound:
		msg = fmt.Sprintf("arangodb: %s: database %q not found at %s", op, s.t.db, s.t.host)
	case isArango && ae.ErrorNum == errCollNotFound:
		msg = fmt.Sprintf("arangodb: %s: collection missing in database %q (dropped while running?): %s", op, s.t.db, ae.ErrorMessage)
	case isArango && isWriteConflict(err):
		msg = fmt.Sprintf("arangodb: %s: write-write conflict persisted for %s (error %d): %s", op, s.cfg.conflictBudget, ae.ErrorNum, ae.ErrorMessage)
	case isArango:
		msg = fmt.Sprintf("arangodb: %s: HTTP %d (error %d): %s", op, ae.Code, ae.ErrorNum, ae.ErrorMessage)
	case errors.As(err, &ue):
		msg = unreachable(ue.Err.Error())
	default:
		var ne net.Error
		if errors.As(err, &ne) {
			msg = unreachable(ne.Error())
		} else {
			msg = fmt.Sprintf("arangodb: %s: %v", op, err)
		}
	}
	return &faultError{msg: scrub(msg, s.t.password), cause: err}
}

// --- running operations ---

// opCtx bounds one operation by the store's timeout.
func (s *Store) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.cfg.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.cfg.timeout)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// read runs a read-only operation, trying it again after a 503 or a
// transport error.
func (s *Store) read(ctx context.Context, fn func(ctx context.Context) error) error {
	if s.closed.Load() {
		return errClosed
	}
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	wait := s.cfg.retryBase
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || attempt >= s.cfg.readAttempts || !isTransient(err) {
			return err
		}
		s.readRetries.Add(1)
		if serr := sleepCtx(ctx, wait/2+rand.N(wait)); serr != nil {
			return err
		}
		wait *= 2
	}
}

// retryAlso names the errors, besides write-write conflicts, after which a
// write is run again. Every one of them means the operation was rolled back
// (it had no effect) because of a concurrent writer, and that running it
// again on a fresh snapshot can succeed.
type retryAlso uint8

const (
	// conflictsOnly: write-write conflicts and their kin (isWriteConflict).
	conflictsOnly retryAlso = 0
	// alsoUnique: a unique-constraint violation (1210), an upsert that raced
	// with another one inserting the same key.
	alsoUnique retryAlso = 1 << iota
	// alsoGone: "document not found" (1202), a statement over many documents
	// that meant to update or remove one a concurrent transaction deleted
	// after the statement's snapshot was taken. Only for statements whose
	// condition is re-evaluated on the next snapshot, where the deleted
	// document is simply no longer selected; never for an operation whose
	// answer is "that document is gone" (Complete, Release, Quarantine map
	// 1202 to a semantic error instead).
	alsoGone
)

// retryable reports whether err lets a write be run again.
func (r retryAlso) retryable(err error) bool {
	return isWriteConflict(err) ||
		r&alsoUnique != 0 && hasErrorNum(err, errUniqueViolate) ||
		r&alsoGone != 0 && hasErrorNum(err, errDocNotFound)
}

// write runs a write operation that is atomic on the server (one AQL query
// or one stream transaction), running it again while it fails with a
// write-write conflict (it was rolled back, so it had no effect), or with
// one of the errors named by also, for at most the conflict budget.
func (s *Store) write(ctx context.Context, also retryAlso, fn func(ctx context.Context) error) error {
	if s.closed.Load() {
		return errClosed
	}
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	var deadline time.Time
	wait := time.Millisecond
	for {
		err := fn(ctx)
		if err == nil || !also.retryable(err) {
			return err
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(s.cfg.conflictBudget)
		}
		if !now.Before(deadline) {
			return err
		}
		s.conflictRetries.Add(1)
		if serr := sleepCtx(ctx, min(wait/2+rand.N(wait), deadline.Sub(now))); serr != nil {
			return err
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// querier is a database or a stream transaction.
type querier interface {
	QueryBatch(ctx context.Context, query string, opts *arangodb.QueryOptions, result interface{}) (arangodb.CursorBatch, error)
}

// queryAll runs one AQL query and decodes every result row into out.
func queryAll[T any](ctx context.Context, q querier, aql string, bind map[string]any) ([]T, error) {
	var out []T
	cur, err := q.QueryBatch(ctx, aql, &arangodb.QueryOptions{BindVars: bind, BatchSize: 1000}, &out)
	if err != nil {
		return nil, err
	}
	for cur.HasMoreBatches() {
		var next []T
		if err := cur.ReadNextBatch(ctx, &next); err != nil {
			_ = cur.CloseWithContext(context.WithoutCancel(ctx))
			return nil, err
		}
		out = append(out, next...)
	}
	return out, nil
}

// queryCount runs a statement that answers one number (a count).
func queryCount(ctx context.Context, q querier, aql string, bind map[string]any) (int, error) {
	return queryOne[int](ctx, q, aql, "count", bind)
}

// queryOne runs a statement that answers exactly one row (what names the
// row in an error): a write statement whose whole answer is one row (a
// count, or its results collected in one array) has it in the first
// batch, which the server sends with the commit, so a write that
// committed never reports a fault for a later batch it failed to fetch.
func queryOne[T any](ctx context.Context, q querier, aql, what string, bind map[string]any) (T, error) {
	var zero T
	rows, err := queryAll[T](ctx, q, aql, bind)
	if err != nil {
		return zero, err
	}
	if len(rows) != 1 {
		return zero, fmt.Errorf("arangodb: a %s query answered %d rows, want 1", what, len(rows))
	}
	return rows[0], nil
}

// withTx runs fn in a stream transaction writing the given collections and
// commits it; it aborts it when fn or the commit fails. A sentinel error
// from fn aborts too, unless fn returns it wrapped in commitAnyway.
func (s *Store) withTx(ctx context.Context, write []string, fn func(ctx context.Context, tx arangodb.Transaction) error) error {
	return s.withTxOn(ctx, arangodb.TransactionCollections{Write: write}, fn)
}

// withTxOn is withTx on the collections cols declares (some only read).
func (s *Store) withTxOn(ctx context.Context, cols arangodb.TransactionCollections, fn func(ctx context.Context, tx arangodb.Transaction) error) error {
	tx, err := s.db.BeginTransaction(ctx, cols, &arangodb.BeginTransactionOptions{})
	if err != nil {
		return err
	}
	err = fn(ctx, tx)
	var keep *commitAnyway
	if err != nil && !errors.As(err, &keep) {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		abort(actx, tx) // the server aborts it anyway when it idles out
		return err
	}
	if cerr := tx.Commit(ctx, nil); cerr != nil {
		// A commit that failed (a 503, a transport error, the deadline)
		// may leave the transaction open on the server, holding the locks
		// of every document it wrote until it idles out (60 s): every
		// write to one of them would meet a conflict until then. Abort it;
		// after a commit that did land, the abort is refused, harmlessly.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		abort(actx, tx)
		return cerr
	}
	if keep != nil {
		return keep.err
	}
	return nil
}

// abort aborts tx, best effort, until ctx ends. A transaction whose query
// is still running on the server (the client gave up on it: a deadline, a
// cancel) cannot be aborted yet: the server answers "transaction is in
// use" (error 28, HTTP 500) and the transaction would hold its
// documents' locks until it idles out (60 s), longer than a lease. Such an
// answer is retried until the query has ended.
func abort(ctx context.Context, tx arangodb.Transaction) {
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		err := tx.Abort(ctx, nil)
		if err == nil || !hasErrorNum(err, errTxInUse) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// commitAnyway makes withTx commit and then return err.
type commitAnyway struct{ err error }

func (c *commitAnyway) Error() string { return c.err.Error() }
func (c *commitAnyway) Unwrap() error { return c.err }

// --- conversions ---

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

// maxKeyLen is ArangoDB's limit on _key (bytes).
const maxKeyLen = 254

// claimPrefix makes a claim's document key.
const claimPrefix = "claim_"

func keyByteOK(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("_-:.@()+,=;$!*'%", c) >= 0
}

// validFileKey reports whether k can be a file's _key (and claim_<k> a
// claim's): ArangoDB's key alphabet, at most 254 bytes with the prefix.
func validFileKey(k string) bool {
	if k == "" || len(k)+len(claimPrefix) > maxKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !keyByteOK(k[i]) {
			return false
		}
	}
	return true
}

// docKey maps an arbitrary key (restart-policy and meta keys contain '/')
// to a valid _key: bytes outside the key alphabet, and '%', become %XX.
func docKey(k string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c != '%' && keyByteOK(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() == 0 || b.Len() > maxKeyLen {
		return "", fmt.Errorf("key %q is empty or too long for a document key", k)
	}
	return b.String(), nil
}
