package arangodb

import (
	"encoding/json"
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
// without labels or scores, no label or score index) gets the indexes
// and every stored tags' labels and scores (store.Labels, store.Scores)
// at its next open, in steps of fillBatch; a document rewritten during
// the fill keeps the labels and scores written with it; a fill stopped
// half way fails the open, leaves the version at 3, and the next open
// finishes it.
func TestSchemaVersion3IsUpgraded(t *testing.T) { testSchemaUpgrade(t, 3) }

// TestSchemaVersion4GetsScores: the same from schema version 4, whose
// tags have their labels but no scores, and which has no score index.
func TestSchemaVersion4GetsScores(t *testing.T) { testSchemaUpgrade(t, 4) }

func testSchemaUpgrade(t *testing.T, from int) {
	f := newFake(t, "nomarr")
	openFake(t, f)
	const n = 2*fillBatch + 500
	moods := []string{"happy", "Happy; sad", "party; party", "", " calm ;relaxed"}
	tags := func(i int) map[string]string {
		return map[string]string{"mood-strict": moods[i%len(moods)], "mood-loose": moods[(i+1)%len(moods)],
			"top_tags": fmt.Sprintf("rock; Genre%d", i%7), "happy_musicnn_mood_happy": fmt.Sprintf("0.%04d", i),
			"not_happy_musicnn_mood_happy": "0.5000", "sad_musicnn_mood_sad": []string{"0.2500", "high", " 1 "}[i%3]}
	}
	asJSON := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	key := func(i int) string { return fmt.Sprintf("%04x", i) }
	f.locked(func() {
		for i := range n {
			d := doc{"_key": key(i), "tags": asJSON(tags(i)), "version": "v1", "written_at": 1.0, "writes": 1.0}
			if from >= 4 {
				d["labels"] = asJSON(store.Labels(tags(i)))
			}
			f.colls[colTags][key(i)] = d
		}
		if from < 4 {
			delete(f.indexes, colTags+"/"+labelIndex)
		}
		for _, ix := range scoreIndexes {
			delete(f.indexes, colTags+"/"+ix.name)
		}
		f.colls[colMeta][MetaSchemaVersion] = with(f.colls[colMeta][MetaSchemaVersion], "value", strconv.Itoa(from))
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
	ownLabels, ownScores := []any{"top:new"}, map[string]any{"happy_musicnn_mood_happy": 0.25}
	f.setHook(func(route, aql string) *fakeErr {
		if aql != qFillIndexed {
			return nil
		}
		switch fills.Add(1) {
		case 1:
			f.locked(func() {
				f.colls[colTags][rewritten] = with(f.colls[colTags][rewritten], "writes", 2.0, "labels", ownLabels, "scores", ownScores)
			})
		case 2:
			return &fakeErr{500, 4, "fake: the server went away"}
		}
		return nil
	})
	if _, err := Open(bg, f.url(), withRetryBase(time.Millisecond)); err == nil || !strings.Contains(err.Error(), "labels and scores") {
		t.Fatalf("Open stopped during the fill = %v, want an error naming the labels and scores", err)
	}
	if v := version(); v != strconv.Itoa(from) {
		t.Fatalf("schema version after a stopped fill = %s, want %d", v, from)
	}
	filled := 0
	f.locked(func() {
		for _, d := range f.colls[colTags] {
			if d["scores"] != nil {
				filled++
			}
		}
	})
	if filled != fillBatch {
		t.Fatalf("a stopped fill left %d documents with scores, want the first step's %d", filled, fillBatch)
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
		for _, ix := range scoreIndexes {
			want := fakeIndex{Type: "persistent", Fields: []string{"scores." + ix.key, "_key"}}
			if got := f.indexes[colTags+"/"+ix.name]; !reflect.DeepEqual(got, want) {
				t.Errorf("index %s = %+v, want %+v", ix.name, got, want)
			}
		}
		for i := range n {
			d := f.colls[colTags][key(i)]
			labels, scores := asJSON(store.Labels(tags(i))), asJSON(store.Scores(tags(i)))
			if key(i) == rewritten {
				labels, scores = ownLabels, ownScores
			}
			if !reflect.DeepEqual(d["labels"], labels) || !reflect.DeepEqual(d["scores"], scores) {
				t.Fatalf("document %s: labels %v, scores %v; want %v, %v", key(i), d["labels"], d["scores"], labels, scores)
			}
		}
	})
}
