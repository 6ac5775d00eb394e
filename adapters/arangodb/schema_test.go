package arangodb

import (
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
)

// TestBootstrapColocatesShards: the bootstrap lays the collections out so
// that, in a cluster, all their shards live on one DB-Server (the
// transactions and cross-collection queries are atomic only there). A
// database it creates is a OneShard database, whose collections it creates
// plainly (the server refuses distributeShardsLike there); in an existing
// database that is not OneShard, library_files gets one shard and every
// other collection follows it; a server that enforces OneShard without
// saying so gets plain collections after refusing the option.
func TestBootstrapColocatesShards(t *testing.T) {
	plain := func(t *testing.T, f *fakeServer) {
		t.Helper()
		f.locked(func() {
			for _, name := range collections {
				if like, ok := f.collProps[name]["distributeShardsLike"]; ok {
					t.Errorf("collection %s created with distributeShardsLike %v in a OneShard database", name, like)
				}
			}
		})
	}
	wantFilesOneShard := func(t *testing.T, f *fakeServer) {
		t.Helper()
		f.locked(func() {
			if n := f.collProps[colFiles]["numberOfShards"]; n != 1.0 {
				t.Errorf("library_files numberOfShards = %v, want 1", n)
			}
			if k := f.collProps[colHistory]["keyOptions"]; !reflect.DeepEqual(k, map[string]any{"type": "padded"}) {
				t.Errorf("health_history keyOptions = %v", k)
			}
		})
	}

	t.Run("created database", func(t *testing.T) {
		f := newFake(t, "nomarr")
		openFake(t, f)
		f.locked(func() {
			if got := f.dbOptions["sharding"]; got != "single" {
				t.Fatalf("database created with options %v, want sharding single", f.dbOptions)
			}
		})
		wantFilesOneShard(t, f)
		plain(t, f)
	})

	t.Run("existing flexible database", func(t *testing.T) {
		f := newFake(t, "nomarr")
		f.dbExists = true
		openFake(t, f)
		for _, r := range f.requests() {
			if strings.HasSuffix(r, "/_api/database") {
				t.Fatalf("an existing database was created again: %v", f.requests())
			}
		}
		wantFilesOneShard(t, f)
		f.locked(func() {
			if like, ok := f.collProps[colFiles]["distributeShardsLike"]; ok {
				t.Errorf("library_files distributeShardsLike = %v, want none (it is the prototype)", like)
			}
			for _, name := range collections[1:] {
				if like := f.collProps[name]["distributeShardsLike"]; like != colFiles {
					t.Errorf("collection %s distributeShardsLike = %v, want %s", name, like, colFiles)
				}
				if n, ok := f.collProps[name]["numberOfShards"]; ok {
					t.Errorf("collection %s numberOfShards = %v, want it copied from the prototype", name, n)
				}
			}
		})
	})

	t.Run("OneShard enforced but not reported", func(t *testing.T) {
		f := newFake(t, "nomarr")
		f.dbExists, f.sharding, f.singleServer = true, "single", true
		openFake(t, f)
		wantFilesOneShard(t, f)
		plain(t, f)
	})
}

// TestBootstrapIndexDefinition: an index of the bootstrap's name with
// another definition (fields, stored values, unique, sparse) fails Open
// with a message naming the index and how to fix it, instead of leaving
// discovery with an index it cannot use; once it is dropped, Open creates
// the right one. An identical index reported as a duplicate name (a
// concurrent bootstrap) is fine.
func TestBootstrapIndexDefinition(t *testing.T) {
	discovery := indexes[0]
	right := fakeIndex{Type: "persistent", Fields: discovery.fields, StoredValues: discovery.stored}
	for _, tc := range []struct {
		name  string
		index fakeIndex
		diff  string
	}{
		{"fields", fakeIndex{Type: "persistent", Fields: []string{"needs_tagging", "is_valid", "failed"}, StoredValues: discovery.stored}, "fields"},
		{"stored values", fakeIndex{Type: "persistent", Fields: discovery.fields}, "stored values"},
		{"unique", fakeIndex{Type: "persistent", Fields: discovery.fields, StoredValues: discovery.stored, Unique: true}, "unique"},
		{"sparse", fakeIndex{Type: "persistent", Fields: discovery.fields, StoredValues: discovery.stored, Sparse: true}, "sparse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, "nomarr")
			f.dbExists = true
			f.colls[colFiles] = map[string]doc{}
			f.indexes[colFiles+"/"+discovery.name] = tc.index
			_, err := Open(bg, f.url())
			wantFault(t, "Open with a different "+discovery.name, err,
				"create index "+discovery.name, "another definition", tc.diff, `dropIndex("`+discovery.name+`")`)
			f.locked(func() { delete(f.indexes, colFiles+"/"+discovery.name) })
			openFake(t, f)
			f.locked(func() {
				if got := f.indexes[colFiles+"/"+discovery.name]; !reflect.DeepEqual(got, right) {
					t.Fatalf("after the drop: index %+v, want %+v", got, right)
				}
			})
		})
	}

	// A server answers an index name taken by an identical definition with
	// the existing index, or, racing a concurrent bootstrap, with a
	// duplicate: 1207 (duplicate name) or 1005 (duplicate identifier).
	for _, dup := range []*fakeErr{{409, errDuplicateName, "duplicate value"}, {409, errDuplicateID, "duplicate value for `id` or `name`"}} {
		t.Run(fmt.Sprintf("identical, reported as error %d", dup.num), func(t *testing.T) {
			f := newFake(t, "nomarr")
			f.dbExists = true
			f.colls[colFiles] = map[string]doc{}
			f.indexes[colFiles+"/"+discovery.name] = right
			var first atomic.Bool
			f.setHook(func(route, aql string) *fakeErr {
				if route == "POST /_db/nomarr/_api/index" && first.CompareAndSwap(false, true) {
					return dup
				}
				return nil
			})
			openFake(t, f)
			if !first.Load() {
				t.Fatal("no index creation was answered with a duplicate")
			}
		})
	}

	t.Run("duplicate name, no such index", func(t *testing.T) {
		f := newFake(t, "nomarr")
		f.setHook(func(route, aql string) *fakeErr {
			if route == "POST /_db/nomarr/_api/index" {
				return &fakeErr{409, errDuplicateName, "duplicate value"}
			}
			return nil
		})
		_, err := Open(bg, f.url())
		wantFault(t, "Open with a phantom duplicate index", err, discovery.name, "lists no index of that name")
	})
}
