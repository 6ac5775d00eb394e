package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nomarr/nomarr/adapters/arangodb"
	"github.com/nomarr/nomarr/adapters/reconnect"

	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/store"
)

// Store is a store that must be closed.
type Store interface {
	store.Store
	Close() error
}

// OpenStore opens the store named by a --db value: sqlite:PATH (or a bare
// path) or arangodb://USER:PASS@HOST:8529/DB, a SQLite one with opts. The
// error never contains a password.
func OpenStore(ctx context.Context, db string, opts ...sqlite.Option) (Store, error) {
	path, isSQLite := SQLitePath(db)
	switch {
	case strings.TrimSpace(path) == "" && isSQLite:
		return nil, fmt.Errorf("db: %q has an empty path: want sqlite:PATH", db)
	case strings.HasPrefix(db, "sqlite:"):
		return sqlite.Open(path, opts...)
	case strings.HasPrefix(db, "arangodb://"), strings.HasPrefix(db, "arangodbs://"):
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		return arangodb.Open(ctx, db)
	default:
		if err := unsupportedStore(db); err != nil {
			return nil, err
		}
		return sqlite.Open(db, opts...)
	}
}

// unsupportedStore is the error for a --db value with a scheme other than
// sqlite: (its path may start with //) and arangodb(s)://; nil otherwise.
func unsupportedStore(db string) error {
	scheme, _, ok := strings.Cut(db, "://")
	if !ok || strings.HasPrefix(db, "sqlite:") || scheme == "arangodb" || scheme == "arangodbs" {
		return nil
	}
	return fmt.Errorf("db: unsupported store %q (supported: sqlite:PATH, arangodb://USER:PASS@HOST:8529/DB)", scheme+"://…")
}

// SQLitePath is the file of a SQLite --db value (sqlite:PATH, or a bare
// path); ok is false for any other store.
func SQLitePath(db string) (path string, ok bool) {
	if p, found := strings.CutPrefix(db, "sqlite:"); found {
		return p, true
	}
	if strings.Contains(db, "://") {
		return "", false
	}
	return db, true
}

// LazyStore opens db (a SQLite one with opts) on first use and retries
// every 2 s while it fails; until then every call fails as service_down.
func LazyStore(db string, opts ...sqlite.Option) *reconnect.Store {
	return reconnect.New(func(ctx context.Context) (store.Store, error) { return OpenStore(ctx, db, opts...) }, 2*time.Second)
}

// atStart are the SQLite options of a main process's store (tag, serve):
// the whole file is checked at open (sqlite.WithIntegrityCheck), so a
// damaged one is refused at start rather than found by the call that
// reads its damaged page, mid-run. It costs 49 ms per 100,000 files on a
// 2-core host (BenchmarkQuickCheck; the open itself: 4 ms), once per
// start; the workers' opens skip it.
func atStart() []sqlite.Option { return []sqlite.Option{sqlite.WithIntegrityCheck()} }

// refuseDamaged is err as a start refusal (*ConfigError: the command
// exits 2) when it says the store is damaged (store.IsCorrupt): no retry
// mends that, and its message says how to repair the file. Any other err
// is returned as it is.
func refuseDamaged(err error) error {
	if store.IsCorrupt(err) {
		return &ConfigError{fmt.Errorf("the store is damaged: %w", err)}
	}
	return err
}

// WrongStore reports whether err, from opening the store, says that the
// store is not one nomarr can use, whether or not it is reachable: another
// program's SQLite database, a file that is no SQLite database, a schema
// newer than this program's. That is a configuration error, which serve
// refuses at start as tag does; every other error (the store down, locked,
// its directory not mounted) is an outage that serve outlives, retrying
// (sqlite.ErrWrongDatabase; TestWrongStoreRecognised).
func WrongStore(err error) bool {
	return errors.Is(err, sqlite.ErrWrongDatabase)
}
