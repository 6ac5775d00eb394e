package arangodb

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/arangodb/go-driver/v2/arangodb"
)

// SchemaVersion is the layout this package creates and understands; it is
// kept in meta under MetaSchemaVersion. Version 2 added track_vectors,
// version 3 the retag marks, the claims' kinds and their indexes
// (nomarr_retag, nomarr_tagged), file_info and the browse indexes
// (nomarr_browse_path, nomarr_browse_tagged), version 4 the stored tags'
// labels (file_tags.labels, store.Labels) and their index
// (nomarr_tags_labels), version 5 the stored tags' scores
// (file_tags.scores, store.Scores) and their indexes (scoreIndexes,
// nomarr_score_*); an older database gets them at its next open (the
// bootstrap's steps are idempotent; the labels and scores are filled in
// by fillIndexed), and an older program then refuses it (it would take a
// retag or vector claim on a tagged file for a stale one, or store tags
// without their labels or scores).
const SchemaVersion = 5

// MetaSchemaVersion is the meta key holding the schema version.
const MetaSchemaVersion = "schema_version"

// Collection names (docs/design.md §10).
const (
	colFiles   = "library_files"
	colClaims  = "worker_claims"
	colRestart = "worker_restart_policy"
	colHistory = "health_history"
	colMeta    = "meta"
	colTags    = "file_tags"
	colVectors = "track_vectors"
	colInfo    = "file_info"
)

// collections in creation order; meta last: its schema_version document
// marks a complete bootstrap. library_files comes first: it is the sharding
// prototype of the others (see createCollection).
var collections = []string{colFiles, colClaims, colRestart, colHistory, colTags, colVectors, colInfo, colMeta}

// index is one persistent index of the bootstrap: not unique, not sparse.
type index struct {
	coll, name string
	fields     []string
	stored     []string
}

var indexes = append([]index{
	// Discovery (qDiscover): equality on the three flags, then a range and
	// the order on _key — one index range scan in key order, so that the
	// optimizer drops the SORT and LIMIT stops the scan early. The retry and
	// skip times are stored in the index, so files still waiting are
	// filtered out without fetching their documents.
	{colFiles, "nomarr_discovery", []string{"needs_tagging", "is_valid", "failed", "_key"}, []string{"next_retry_at", "skip_until"}},
	// Retag discovery (qDiscoverRetag) and the files that need a vector
	// (qNeedsVector): equality on the leading fields, then _key, as
	// nomarr_discovery.
	{colFiles, "nomarr_retag", []string{"needs_retag", "tagged", "is_valid", "failed", "_key"}, []string{"next_retry_at", "skip_until"}},
	{colFiles, "nomarr_tagged", []string{"tagged", "is_valid", "failed", "tagged_version", "_key"}, []string{"next_retry_at", "skip_until"}},
	// Library pages (browseIndexed): ordered by path or tagging time, the
	// key breaking ties; the status flags are stored, so a status filter
	// and its count read no document.
	{colFiles, "nomarr_browse_path", []string{"path", "_key"}, browseFlags},
	{colFiles, "nomarr_browse_tagged", []string{"last_tagged_at", "_key"}, browseFlags},
	// Library pages with a mood or genre filter (browseLabelAQL): the
	// stored tags by each of their labels.
	{colTags, labelIndex, []string{"labels[*]"}, nil},
	// Claims by lease (expiry) and by holder (ReleaseWorker, RenewLeases).
	{colClaims, "nomarr_claims_lease", []string{"lease_until"}, nil},
	{colClaims, "nomarr_claims_worker", []string{"worker_id"}, nil},
	// History by time; _key (the row's identity, historyKey) breaks ties.
	{colHistory, "nomarr_history_at", []string{"at_ms", "_key"}, nil},
},
	// Library pages with a score range or sorted by a score
	// (browseRangeAQL, browseByScore): the stored tags by each score of
	// the models, then key.
	scoreSchemaIndexes()...)

func scoreSchemaIndexes() []index {
	out := make([]index, len(scoreIndexes))
	for i, ix := range scoreIndexes {
		out[i] = ix.schemaIndex()
	}
	return out
}

// browseFlags are the attributes browseStatus reads.
var browseFlags = []string{"is_valid", "tagged", "failed", "needs_tagging"}

// bootstrap makes sure the database, its collections and indexes exist.
// When meta already records this schema version it costs one query.
// Otherwise every step is idempotent and tolerates another process doing
// the same at the same time: "duplicate name" (error 1207) on creating the
// database or a collection counts as success; on creating an index it does
// only when the existing index of that name has the definition asked for.
//
// Layout: every collection has one shard, and in a cluster all of them live
// on one DB-Server, because Complete, Release and ReleaseWorker (stream
// transactions) and Claim and CleanupClaims (queries reading one collection
// and writing another) are atomic and isolated only within one DB-Server.
// A database created here is a OneShard database (sharding "single"), where
// the server enforces this; in an existing database the collections created
// here follow library_files (distributeShardsLike). Collections that
// already exist are taken as they are. On a single server these options
// are accepted and change nothing.
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
	oneShard, err := s.oneShardDatabase(ctx)
	if err != nil {
		return s.fault(op+": read database properties", err)
	}
	for _, name := range collections {
		if err := s.createCollection(ctx, name, oneShard); err != nil {
			return s.fault(op+": create collection "+name, err)
		}
	}
	for _, ix := range indexes {
		if err := s.ensureIndex(ctx, ix); err != nil {
			return s.fault(op+": create index "+ix.name, err)
		}
	}
	if _, err := s.fillIndexed(ctx); err != nil {
		return s.fault(op+": fill in the tags' labels and scores", err)
	}
	err = s.write(ctx, conflictsOnly, func(ctx context.Context) error {
		_, err := queryAll[any](ctx, s.db, qRaiseSchema, map[string]any{
			"key": MetaSchemaVersion, "value": strconv.Itoa(SchemaVersion), "n": SchemaVersion,
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

// createDatabase creates the database as a OneShard database: in a
// cluster every collection created in it has one shard, and all leader
// shards live on one DB-Server (the sharding option is ignored by a single
// server).
func (s *Store) createDatabase(ctx context.Context) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	_, err := s.client.CreateDatabase(ctx, s.t.db, &arangodb.CreateDatabaseOptions{
		Options: arangodb.CreateDatabaseDefaultOptions{Sharding: arangodb.DatabaseShardingSingle},
	})
	if hasErrorNum(err, errDuplicateName) {
		return nil // created meanwhile by another process
	}
	return err
}

// oneShardDatabase reports whether the database says it is a OneShard
// database (only a cluster says so; a single server reports no sharding).
func (s *Store) oneShardDatabase(ctx context.Context) (bool, error) {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	info, err := s.db.Info(ctx)
	if err != nil {
		return false, err
	}
	return info.Sharding == arangodb.DatabaseShardingSingle, nil
}

// errBadParameter is the server's "bad parameter" (TRI_ERROR_BAD_PARAMETER).
const errBadParameter = 10

// createCollection creates a collection unless it exists. library_files
// gets one shard; the other collections are placed like it
// (distributeShardsLike: one shard each, on the DB-Server of library_files's
// shard) — except in a OneShard database, which places every collection on
// its prototype's DB-Server itself and refuses a distributeShardsLike of
// our own. A server that enforces OneShard without the database saying so
// (a cluster started with --cluster.force-one-shard; a single server, which
// reports no sharding but may hold on to the one a database was created
// with) answers "bad parameter" naming the OneShard database: the
// collection is then created without the option, and the server places it
// with the others.
func (s *Store) createCollection(ctx context.Context, name string, oneShard bool) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	props := &arangodb.CreateCollectionPropertiesV2{}
	if name == colHistory {
		// Rows carry their own keys now (historyKey); those written
		// before got padded keys. The generator stays, so that new and
		// older databases are laid out alike.
		props.KeyOptions = &arangodb.CollectionKeyOptions{Type: arangodb.KeyGeneratorPadded}
	}
	if name == colFiles {
		one := 1
		props.NumberOfShards = &one
	} else if !oneShard {
		proto := colFiles
		props.DistributeShardsLike = &proto
	}
	_, err := s.db.CreateCollectionV2(ctx, name, props)
	if props.DistributeShardsLike != nil && refusedInOneShard(err) {
		props.DistributeShardsLike = nil
		_, err = s.db.CreateCollectionV2(ctx, name, props)
	}
	if hasErrorNum(err, errDuplicateName) {
		return nil // exists (the usual case on a partial bootstrap, or a concurrent one)
	}
	return err
}

// refusedInOneShard: the server refused a collection's distributeShardsLike
// because the database is OneShard ("Collection in a 'oneShardDatabase'
// cannot define distributeShardsLike").
func refusedInOneShard(err error) bool {
	ae, ok := arangoErr(err)
	return ok && ae.ErrorNum == errBadParameter && strings.Contains(strings.ToLower(ae.ErrorMessage), "oneshard")
}

// ensureIndex creates ix unless an identical index exists (the server
// answers that case with the existing index). "Duplicate name" (1207) means
// an index of that name exists that the server did not take as identical —
// another definition, or one being created concurrently: the existing index
// is read back, and anything but ix's definition fails the bootstrap, since
// the queries rely on it (discovery's index range scan in key order, with
// the retry times stored in the index).
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
	if !hasErrorNum(err, errDuplicateName, errDuplicateID) { // a server says 1005 for a taken index name, older ones 1207
		return err
	}
	dup := err
	hidden := true // also indexes still being built by a concurrent bootstrap
	list, err := col.IndexesWithOptions(ctx, &arangodb.IndexListOptions{WithHidden: &hidden})
	if err != nil {
		return fmt.Errorf("read back the existing index %s of %s: %w", ix.name, ix.coll, err)
	}
	for _, got := range list {
		if got.Name != ix.name {
			continue
		}
		if diff := ix.differs(got); diff != "" {
			return fmt.Errorf("index %s of collection %s exists with another definition (%s): "+
				"drop it (arangosh: db._useDatabase(%q); db.%s.dropIndex(%q)) and open the store again, "+
				"which then creates it as needed", ix.name, ix.coll, diff, s.t.db, ix.coll, ix.name)
		}
		return nil // created by a concurrent bootstrap
	}
	// Not wrapped: a fault would describe the server's error alone.
	return fmt.Errorf("index %s of %s: the server reports a duplicate name (%v) but lists no index of that name", ix.name, ix.coll, dup)
}

// differs describes how an existing index differs from ix ("" when it does
// not). "hash" and "skiplist" are old names of the persistent index type.
func (ix index) differs(got arangodb.IndexResponse) string {
	var d []string
	switch got.Type {
	case arangodb.PersistentIndexType, arangodb.IndexType("hash"), arangodb.IndexType("skiplist"):
	default:
		d = append(d, fmt.Sprintf("type %s, want persistent", got.Type))
	}
	var fields, stored []string
	if got.RegularIndex != nil {
		fields, stored = got.RegularIndex.Fields, got.RegularIndex.StoredValues
	}
	if !slices.Equal(fields, ix.fields) {
		d = append(d, fmt.Sprintf("fields %v, want %v", fields, ix.fields))
	}
	if !slices.Equal(stored, ix.stored) {
		d = append(d, fmt.Sprintf("stored values %v, want %v", stored, ix.stored))
	}
	if got.Unique != nil && *got.Unique {
		d = append(d, "unique, want not unique")
	}
	if got.Sparse != nil && *got.Sparse {
		d = append(d, "sparse, want not sparse")
	}
	return strings.Join(d, "; ")
}
