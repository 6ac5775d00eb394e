package arangodb

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
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

// TestSchemaVersion3IsUpgraded: a database of schema version 3 (tags
// without labels, no label index) gets the index and every stored tags'
// labels (store.Labels) at its next open, in steps of labelBatch; a
// document rewritten during the fill keeps the labels written with it;
// a fill stopped half way fails the open, leaves the version at 3, and
// the next open finishes it.
func TestSchemaVersion3IsUpgraded(t *testing.T) {
	f := newFake(t, "nomarr")
	openFake(t, f)
	const n = 2*labelBatch + 500
	moods := []string{"happy", "Happy; sad", "party; party", "", " calm ;relaxed"}
	tags := func(i int) map[string]any {
		return map[string]any{"mood-strict": moods[i%len(moods)], "mood-loose": moods[(i+1)%len(moods)],
			"top_tags": fmt.Sprintf("rock; Genre%d", i%7), "happy_musicnn_mood_happy": "0.5000"}
	}
	key := func(i int) string { return fmt.Sprintf("%04x", i) }
	f.locked(func() {
		for i := range n {
			f.colls[colTags][key(i)] = doc{"_key": key(i), "tags": tags(i), "version": "v1", "written_at": 1.0, "writes": 1.0}
		}
		delete(f.indexes, colTags+"/"+labelIndex)
		f.colls[colMeta][MetaSchemaVersion] = with(f.colls[colMeta][MetaSchemaVersion], "value", "3")
	})
	version := func() string {
		var v string
		f.locked(func() { v = str(f.colls[colMeta][MetaSchemaVersion]["value"]) })
		return v
	}

	// The first open stops at its second step; a completion rewrites a
	// document of the first step's reach before it is filled.
	var fills atomic.Int32
	rewritten := key(7)
	f.setHook(func(route, aql string) *fakeErr {
		if aql != qFillLabels {
			return nil
		}
		switch fills.Add(1) {
		case 1:
			f.locked(func() {
				f.colls[colTags][rewritten] = with(f.colls[colTags][rewritten], "writes", 2.0, "labels", []any{"top:new"})
			})
		case 2:
			return &fakeErr{500, 4, "fake: the server went away"}
		}
		return nil
	})
	if _, err := Open(bg, f.url(), withRetryBase(time.Millisecond)); err == nil || !strings.Contains(err.Error(), "labels") {
		t.Fatalf("Open stopped during the fill = %v, want an error naming the labels", err)
	}
	if v := version(); v != "3" {
		t.Fatalf("schema version after a stopped fill = %s, want 3", v)
	}
	filled := 0
	f.locked(func() {
		for _, d := range f.colls[colTags] {
			if d["labels"] != nil {
				filled++
			}
		}
	})
	if filled != labelBatch {
		t.Fatalf("a stopped fill left %d documents with labels, want the first step's %d", filled, labelBatch)
	}

	f.setHook(nil)
	openFake(t, f)
	if v := version(); v != strconv.Itoa(SchemaVersion) {
		t.Fatalf("schema version after the upgrade = %s, want %d", v, SchemaVersion)
	}
	f.locked(func() {
		if got, want := f.indexes[colTags+"/"+labelIndex], (fakeIndex{Type: "persistent", Fields: []string{"labels[*]"}}); !reflect.DeepEqual(got, want) {
			t.Errorf("index %s = %+v, want %+v", labelIndex, got, want)
		}
		for i := range n {
			d := f.colls[colTags][key(i)]
			var want []any
			if key(i) == rewritten {
				want = []any{"top:new"}
			} else {
				m := map[string]string{}
				for k, v := range tags(i) {
					m[k] = v.(string)
				}
				for _, l := range store.Labels(m) {
					want = append(want, l)
				}
			}
			if !reflect.DeepEqual(d["labels"], want) {
				t.Fatalf("document %s: labels %v, want %v", key(i), d["labels"], want)
			}
		}
	})
}
