package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nomarr/nomarr/adapters/arangodb"
)

// ensureDataDir creates the directory of a SQLite store.
func ensureDataDir(s *Settings) error {
	if strings.HasPrefix(s.Get("db"), "sqlite:") {
		if err := os.MkdirAll(filepath.Dir(strings.TrimPrefix(s.Get("db"), "sqlite:")), 0o755); err != nil {
			if !s.Explicit("data_dir") && !s.Explicit("db") {
				return fmt.Errorf("data_dir (its default, %s): %w; set --data-dir (or NOMARR_DATA_DIR) to a folder this user may write", s.Get("data_dir"), err)
			}
			return fmt.Errorf("data_dir: %w", err)
		}
	}
	return nil
}

// OpenExisting opens the store for a command that reads or changes it but
// must not create it (failed, retry, missing, forget, workers without a
// daemon): a store that is not there is an error (StoreMissing).
func OpenExisting(s *Settings) (Store, error) {
	if err := StoreMissing(s); err != nil {
		return nil, err
	}
	return OpenForSettings(s)
}

// StoreMissing says when the configured store is a SQLite file that is not
// there: most often a mistyped --db or another --data-dir than the one
// scanned, so looking creates nothing and says where it looked.
func StoreMissing(s *Settings) error {
	if path, ok := SQLitePath(s.Get("db")); ok {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no store at %s (nothing scanned with this --db or --data-dir yet)", path)
		}
	}
	return nil
}

// OpenForSettings creates the data directory and opens the store.
func OpenForSettings(s *Settings) (Store, error) {
	if err := ensureDataDir(s); err != nil {
		return nil, err
	}
	return OpenStore(context.Background(), s.Get("db"))
}

// openForStart is OpenForSettings for the start of tag: the store is
// checked whole (atStart), and a damaged one is refused (refuseDamaged).
func openForStart(s *Settings) (Store, error) {
	if err := ensureDataDir(s); err != nil {
		return nil, err
	}
	st, err := OpenStore(context.Background(), s.Get("db"), atStart()...)
	return st, refuseDamaged(err)
}

// Redact hides the password of a store URL.
func Redact(db string) string {
	if strings.HasPrefix(db, "arangodb") {
		return arangodb.Redacted(db)
	}
	scheme, rest, ok := strings.Cut(db, "://")
	if !ok {
		return db
	}
	cred, host, ok := strings.Cut(rest, "@")
	if !ok {
		return db
	}
	user, _, _ := strings.Cut(cred, ":")
	return scheme + "://" + user + ":***@" + host
}
