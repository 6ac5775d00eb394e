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
// path) or arangodb://USER:PASS@HOST:8529/DB. The error never contains a
// password.
func OpenStore(ctx context.Context, db string) (Store, error) {
	path, isSQLite := SQLitePath(db)
	switch {
	case strings.TrimSpace(path) == "" && isSQLite:
		return nil, fmt.Errorf("db: %q has an empty path: want sqlite:PATH", db)
	case strings.HasPrefix(db, "sqlite:"):
		return sqlite.Open(path)
	case strings.HasPrefix(db, "arangodb://"), strings.HasPrefix(db, "arangodbs://"):
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		return arangodb.Open(ctx, db)
	default:
		if err := unsupportedStore(db); err != nil {
			return nil, err
		}
		return sqlite.Open(db)
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

// LazyStore opens db on first use and retries every 2 s while it fails; until
// then every call fails as service_down.
func LazyStore(db string) *reconnect.Store {
	return reconnect.New(func(ctx context.Context) (store.Store, error) { return OpenStore(ctx, db) }, 2*time.Second)
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
