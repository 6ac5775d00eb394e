package arangodb

import (
	"context"
	"fmt"
	"strconv"

	"github.com/arangodb/go-driver/v2/arangodb"
)

// SchemaVersion is the layout this package creates and understands; it is
// kept in meta under MetaSchemaVersion.
const SchemaVersion = 1

// MetaSchemaVersion is the meta key holding the schema version.
const MetaSchemaVersion = "schema_version"

// Collection names (DESIGN §10).
const (
	colFiles   = "library_files"
	colClaims  = "worker_claims"
	colRestart = "worker_restart_policy"
	colHistory = "health_history"
	colMeta    = "meta"
	colTags    = "file_tags"
)

// collections in creation order; meta last: its schema_version document
// marks a complete bootstrap.
var collections = []string{colFiles, colClaims, colRestart, colHistory, colTags, colMeta}

// index is one persistent index of the bootstrap.
type index struct {
	coll, name string
	fields     []string
	stored     []string
}

var indexes = []index{
	// Discovery (qDiscover): equality on the three flags, then a range and
	// the order on _key — one index range scan in key order, so that the
	// optimizer drops the SORT and LIMIT stops the scan early. The retry and
	// skip times are stored in the index, so files still waiting are
	// filtered out without fetching their documents.
	{colFiles, "nomarr_discovery", []string{"needs_tagging", "is_valid", "failed", "_key"}, []string{"next_retry_at", "skip_until"}},
	// Claims by lease (expiry) and by holder (ReleaseWorker, RenewLeases).
	{colClaims, "nomarr_claims_lease", []string{"lease_until"}, nil},
	{colClaims, "nomarr_claims_worker", []string{"worker_id"}, nil},
	// History by time; _key (padded generator: insertion order) breaks ties.
	{colHistory, "nomarr_history_at", []string{"at_ms", "_key"}, nil},
}

// bootstrap makes sure the database, its collections and indexes exist.
// When meta already records this schema version it costs one query.
// Otherwise every step is idempotent and tolerates another process doing
// the same at the same time: "duplicate name" (error 1207) on a create
// counts as success.
func (s *Store) bootstrap(ctx context.Context) error {
	op := "open " + s.redacted
	v, err := s.schemaVersion(ctx)
	switch {
	case err == nil && v == SchemaVersion:
		return nil
	case err == nil && v > SchemaVersion:
		return fmt.Errorf("arangodb: %s: schema version %d is newer than this program's %d", op, v, SchemaVersion)
	case err != nil && hasErrorNum(err, errDBNotFound):
		if !s.cfg.createDB {
			return s.fault(op, err)
		}
		if err := s.createDatabase(ctx); err != nil {
			return s.fault(op+": create database "+strconv.Quote(s.t.db), err)
		}
	case err != nil && !hasErrorNum(err, errCollNotFound):
		return s.fault(op, err)
	}
	for _, name := range collections {
		if err := s.createCollection(ctx, name); err != nil {
			return s.fault(op+": create collection "+name, err)
		}
	}
	for _, ix := range indexes {
		if err := s.ensureIndex(ctx, ix); err != nil {
			return s.fault(op+": create index "+ix.name, err)
		}
	}
	err = s.write(ctx, false, func(ctx context.Context) error {
		_, err := queryAll[any](ctx, s.db, qInitMeta, map[string]any{
			"key": MetaSchemaVersion, "value": strconv.Itoa(SchemaVersion),
		})
		return err
	})
	if err != nil {
		return s.fault(op+": record schema version", err)
	}
	v, err = s.schemaVersion(ctx)
	if err != nil {
		return s.fault(op, err)
	}
	if v != SchemaVersion {
		return fmt.Errorf("arangodb: %s: schema version %d, this program understands %d", op, v, SchemaVersion)
	}
	return nil
}

// schemaVersion reads the version in meta (0: none recorded).
func (s *Store) schemaVersion(ctx context.Context) (int, error) {
	var rows []string
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		rows, err = queryAll[string](ctx, s.db, qGetMeta, map[string]any{"key": MetaSchemaVersion})
		return err
	})
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, nil
	}
	v, err := strconv.Atoi(rows[0])
	if err != nil {
		return 0, fmt.Errorf("bad %s %q in meta", MetaSchemaVersion, rows[0])
	}
	return v, nil
}

func (s *Store) createDatabase(ctx context.Context) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	_, err := s.client.CreateDatabase(ctx, s.t.db, nil)
	if hasErrorNum(err, errDuplicateName) {
		return nil // created meanwhile by another process
	}
	return err
}

func (s *Store) createCollection(ctx context.Context, name string) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	props := &arangodb.CreateCollectionPropertiesV2{}
	if name == colHistory {
		// Padded keys grow in insertion order and sort as strings.
		props.KeyOptions = &arangodb.CollectionKeyOptions{Type: arangodb.KeyGeneratorPadded}
	}
	_, err := s.db.CreateCollectionV2(ctx, name, props)
	if hasErrorNum(err, errDuplicateName) {
		return nil // exists (the usual case on a partial bootstrap, or a concurrent one)
	}
	return err
}

func (s *Store) ensureIndex(ctx context.Context, ix index) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	col, err := s.db.GetCollection(ctx, ix.coll, &arangodb.GetCollectionOptions{SkipExistCheck: true})
	if err != nil {
		return err
	}
	f := false
	_, _, err = col.EnsurePersistentIndex(ctx, ix.fields, &arangodb.CreatePersistentIndexOptions{
		Name: ix.name, Unique: &f, Sparse: &f, StoredValues: ix.stored,
	})
	if hasErrorNum(err, errDuplicateName) {
		return nil // created by a concurrent bootstrap
	}
	if err != nil {
		return err
	}
	return nil
}
