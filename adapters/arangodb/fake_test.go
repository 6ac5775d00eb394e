package arangodb

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// fakeServer emulates the few ArangoDB HTTP endpoints this package uses,
// on the wire: database creation and properties, collection creation (with
// a OneShard database's refusal of distributeShardsLike), index creation
// (an identical index is returned, another one of the same name is a
// duplicate name) and listing, AQL cursors (with batches) and stream
// transactions. It knows each of the package's AQL
// queries by its text and runs an emulation of it written against the
// attribute names the AQL uses, on documents kept as generic JSON maps — so
// the adapter's bind parameters, document shapes and result decoding are
// checked for real; the AQL itself is checked only against a real server
// (TestContract with NOMARR_TEST_ARANGO_URL or Docker).
//
// Isolation is serial: a stream transaction holds the whole fake from begin
// to commit/abort (abort restores the snapshot taken at begin); a query
// outside a transaction holds it for its duration.
type fakeServer struct {
	t   testing.TB
	srv *httptest.Server

	user, pass  string // expected credentials; empty user: no auth
	canCreateDB bool

	sem chan struct{} // serializes transactions and standalone queries

	mu       sync.Mutex
	db       string
	dbExists bool
	// dbOptions are the options the database was created with (nil: not
	// created through the fake). sharding is the database's sharding
	// property; a "single" (OneShard) database refuses a collection's
	// distributeShardsLike, as a cluster does. singleServer hides the
	// property from GET /_api/database/current, as a single server does
	// (which keeps enforcing it all the same).
	dbOptions    map[string]any
	sharding     string
	singleServer bool
	colls        map[string]map[string]doc // collection → _key → document
	collProps    map[string]map[string]any // collection → creation body
	indexes      map[string]fakeIndex      // collection/name → definition
	seq          int                       // padded key generator of health_history
	txs          map[string]map[string]map[string]doc
	txSeq        int
	cursors      map[string][]any
	curSeq       int
	batch        int // result batch size override (0: the client's)
	reqs         []string
	// hook, when set, may answer a request instead of the emulation
	// (fault injection): it gets "METHOD /path" and the AQL (cursor
	// requests) and returns nil to let the request through.
	hook func(route, aql string) *fakeErr
	// serverTime, when set, is the "time" GET /_db/<db>/_admin/time
	// answers (Unix seconds); nil: this machine's clock.
	serverTime func() float64
}

type doc = map[string]any

// fakeIndex is an index definition as the server reports it.
type fakeIndex struct {
	Type         string   `json:"type"`
	Fields       []string `json:"fields"`
	StoredValues []string `json:"storedValues,omitempty"`
	Unique       bool     `json:"unique"`
	Sparse       bool     `json:"sparse"`
}

type fakeErr struct {
	status, num int
	msg         string
}

func newFake(t testing.TB, db string) *fakeServer {
	f := &fakeServer{
		t: t, canCreateDB: true, sem: make(chan struct{}, 1), db: db,
		colls: map[string]map[string]doc{}, collProps: map[string]map[string]any{}, indexes: map[string]fakeIndex{},
		txs: map[string]map[string]map[string]doc{}, cursors: map[string][]any{},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// newFakeTLS is newFake serving HTTPS; roots trusts its certificate.
func newFakeTLS(t testing.TB, db string) (f *fakeServer, roots *x509.CertPool) {
	f = newFake(t, db)
	f.srv.Close()
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted-certificate test's handshake errors
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	roots = x509.NewCertPool()
	roots.AddCert(f.srv.Certificate())
	return f, roots
}

// url returns the store URL of the fake.
func (f *fakeServer) url() string {
	u, _ := url.Parse(f.srv.URL)
	u.Scheme, u.Path = map[string]string{"http": "arangodb", "https": "arangodbs"}[u.Scheme], "/"+f.db
	if f.user != "" {
		u.User = url.UserPassword(f.user, f.pass)
	}
	return u.String()
}

func (f *fakeServer) setHook(h func(route, aql string) *fakeErr) {
	f.mu.Lock()
	f.hook = h
	f.mu.Unlock()
}

func (f *fakeServer) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

func (f *fakeServer) locked(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// wantNoTx checks that no stream transaction is left open.
func (f *fakeServer) wantNoTx(t testing.TB) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.txs) != 0 || len(f.sem) != 0 {
		t.Fatalf("transactions left open: %v (sem %d)", slices.Collect(maps.Keys(f.txs)), len(f.sem))
	}
}

func (f *fakeServer) coll(name string) map[string]doc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.colls[name])
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, e *fakeErr) {
	writeJSON(w, e.status, map[string]any{"error": true, "code": e.status, "errorNum": e.num, "errorMessage": e.msg})
}

var (
	routeRE     = regexp.MustCompile(`^/_db/([^/]+)/_api/(.*)$`)
	adminTimeRE = regexp.MustCompile(`^/_db/([^/]+)/_admin/time$`)
)

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Query     string         `json:"query"`
		BindVars  map[string]any `json:"bindVars"`
		BatchSize int            `json:"batchSize"`
		Name      string         `json:"name"`
		Options   map[string]any `json:"options"`
		Coll      struct {
			Write []string `json:"write"`
		} `json:"collections"`
		DistributeShardsLike string `json:"distributeShardsLike"`
	}
	var raw map[string]any
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			writeErr(w, &fakeErr{400, 600, "invalid JSON: " + err.Error()})
			return
		}
		_ = json.Unmarshal(body, &raw)
	}
	route := r.Method + " " + r.URL.Path
	f.mu.Lock()
	f.reqs = append(f.reqs, route)
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		if e := hook(route, req.Query); e != nil {
			writeErr(w, e)
			return
		}
	}
	if f.user != "" {
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte(f.user+":"+f.pass))
		if r.Header.Get("Authorization") != want {
			writeErr(w, &fakeErr{401, 11, "not authorized to execute this request"})
			return
		}
	}
	if m := adminTimeRE.FindStringSubmatch(r.URL.Path); m != nil && r.Method == http.MethodGet {
		f.mu.Lock()
		defer f.mu.Unlock()
		if m[1] != f.db || !f.dbExists {
			writeErr(w, &fakeErr{404, 1228, "database not found"})
			return
		}
		now := float64(time.Now().UnixMicro()) / 1e6
		if f.serverTime != nil {
			now = f.serverTime()
		}
		writeJSON(w, 200, map[string]any{"error": false, "code": 200, "time": now})
		return
	}
	m := routeRE.FindStringSubmatch(r.URL.Path)
	if m == nil {
		writeErr(w, &fakeErr{404, 404, "unknown path " + r.URL.Path})
		return
	}
	db, api := m[1], m[2]
	if db == "_system" && api == "database" && r.Method == http.MethodPost {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case !f.canCreateDB:
			writeErr(w, &fakeErr{403, 11, "forbidden"})
		case req.Name != f.db:
			writeErr(w, &fakeErr{400, 1229, "unexpected database name " + req.Name})
		case f.dbExists:
			writeErr(w, &fakeErr{409, 1207, "duplicate database name"})
		default:
			f.dbExists = true
			f.dbOptions = req.Options
			f.sharding, _ = req.Options["sharding"].(string)
			writeJSON(w, 201, map[string]any{"error": false, "code": 201, "result": true})
		}
		return
	}
	f.mu.Lock()
	ok := db == f.db && f.dbExists
	f.mu.Unlock()
	if !ok {
		writeErr(w, &fakeErr{404, 1228, "database not found"})
		return
	}
	switch {
	case api == "database/current" && r.Method == http.MethodGet:
		f.mu.Lock()
		defer f.mu.Unlock()
		info := map[string]any{"name": f.db, "id": "1", "isSystem": false, "path": ""}
		if !f.singleServer {
			info["sharding"], info["replicationFactor"], info["writeConcern"] = f.sharding, 1, 1
		}
		writeJSON(w, 200, map[string]any{"error": false, "code": 200, "result": info})
	case api == "collection" && r.Method == http.MethodPost:
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, dup := f.colls[req.Name]; dup {
			writeErr(w, &fakeErr{409, 1207, "duplicate name"})
			return
		}
		if like := req.DistributeShardsLike; like != "" {
			if f.sharding == "single" {
				writeErr(w, &fakeErr{400, 10, "Collection in a 'oneShardDatabase' cannot define 'distributeShardsLike'"})
				return
			}
			if _, ok := f.colls[like]; !ok {
				writeErr(w, &fakeErr{400, 1481, "Collection not found: " + like + " in database " + f.db})
				return
			}
		}
		f.colls[req.Name] = map[string]doc{}
		f.collProps[req.Name] = raw
		writeJSON(w, 200, map[string]any{"error": false, "code": 200, "name": req.Name})
	case api == "index" && r.Method == http.MethodGet:
		f.mu.Lock()
		defer f.mu.Unlock()
		c, ok := f.indexCollection(w, r)
		if !ok {
			return
		}
		list := []any{map[string]any{"id": c + "/0", "name": "primary", "type": "primary", "fields": []string{"_key"}, "unique": true, "sparse": false}}
		for _, id := range slices.Sorted(maps.Keys(f.indexes)) {
			if name, ok := strings.CutPrefix(id, c+"/"); ok {
				ix := f.indexes[id]
				list = append(list, map[string]any{"id": id, "name": name, "type": ix.Type, "fields": ix.Fields,
					"storedValues": ix.StoredValues, "unique": ix.Unique, "sparse": ix.Sparse})
			}
		}
		writeJSON(w, 200, map[string]any{"error": false, "code": 200, "indexes": list})
	case api == "index" && r.Method == http.MethodPost:
		f.mu.Lock()
		defer f.mu.Unlock()
		c, ok := f.indexCollection(w, r)
		if !ok {
			return
		}
		var def fakeIndex
		if err := json.Unmarshal(body, &def); err != nil {
			writeErr(w, &fakeErr{400, 10, "bad index definition: " + err.Error()})
			return
		}
		id := c + "/" + req.Name
		status := 201
		if old, ok := f.indexes[id]; ok {
			// The server answers an identical index with the existing one,
			// and another index of the same name with "duplicate name".
			if !reflect.DeepEqual(old, def) {
				writeErr(w, &fakeErr{409, 1207, "duplicate value: index with name '" + req.Name + "' already exists"})
				return
			}
			status = 200
		}
		f.indexes[id] = def
		writeJSON(w, status, map[string]any{"error": false, "code": status, "id": id, "name": req.Name, "type": def.Type, "fields": def.Fields,
			"storedValues": def.StoredValues, "unique": def.Unique, "sparse": def.Sparse, "isNewlyCreated": status == 201})
	case api == "transaction/begin" && r.Method == http.MethodPost:
		select {
		case f.sem <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		f.mu.Lock()
		f.txSeq++
		id := strconv.Itoa(f.txSeq)
		snap := map[string]map[string]doc{}
		for k, v := range f.colls {
			snap[k] = maps.Clone(v)
		}
		f.txs[id] = snap
		f.mu.Unlock()
		writeJSON(w, 201, map[string]any{"error": false, "code": 201, "result": map[string]any{"id": id, "status": "running"}})
	case strings.HasPrefix(api, "transaction/") && (r.Method == http.MethodPut || r.Method == http.MethodDelete):
		id := strings.TrimPrefix(api, "transaction/")
		f.mu.Lock()
		snap, ok := f.txs[id]
		if ok {
			delete(f.txs, id)
			if r.Method == http.MethodDelete {
				f.colls = snap
			}
		}
		f.mu.Unlock()
		if !ok {
			writeErr(w, &fakeErr{404, 1655, "transaction not found"})
			return
		}
		<-f.sem
		status := map[string]string{http.MethodPut: "committed", http.MethodDelete: "aborted"}[r.Method]
		writeJSON(w, 200, map[string]any{"error": false, "code": 200, "result": map[string]any{"id": id, "status": status}})
	case api == "cursor" && r.Method == http.MethodPost:
		if tx := r.Header.Get("x-arango-trx-id"); tx != "" {
			f.mu.Lock()
			_, ok := f.txs[tx]
			f.mu.Unlock()
			if !ok {
				writeErr(w, &fakeErr{404, 1655, "transaction not found"})
				return
			}
		} else {
			select {
			case f.sem <- struct{}{}:
			case <-r.Context().Done():
				return
			}
			defer func() { <-f.sem }()
		}
		rows, e := f.run(req.Query, req.BindVars)
		if e != nil {
			writeErr(w, e)
			return
		}
		f.answerCursor(w, 201, rows, req.BatchSize)
	case strings.HasPrefix(api, "cursor/") && r.Method == http.MethodPost:
		id := strings.Split(strings.TrimPrefix(api, "cursor/"), "/")[0]
		f.mu.Lock()
		rows, ok := f.cursors[id]
		delete(f.cursors, id)
		f.mu.Unlock()
		if !ok {
			writeErr(w, &fakeErr{404, 1600, "cursor not found"})
			return
		}
		f.answerCursor(w, 200, rows, 0)
	case strings.HasPrefix(api, "cursor/") && r.Method == http.MethodDelete:
		f.mu.Lock()
		delete(f.cursors, strings.TrimPrefix(api, "cursor/"))
		f.mu.Unlock()
		writeJSON(w, 202, map[string]any{"error": false, "code": 202})
	default:
		writeErr(w, &fakeErr{405, 405, "not emulated: " + route})
	}
}

func (f *fakeServer) answerCursor(w http.ResponseWriter, status int, rows []any, batch int) {
	f.mu.Lock()
	if f.batch > 0 {
		batch = f.batch
	}
	if rows == nil {
		rows = []any{}
	}
	resp := map[string]any{"error": false, "code": status, "result": rows, "hasMore": false, "cached": false, "extra": map[string]any{}}
	if batch > 0 && len(rows) > batch {
		f.curSeq++
		id := "c" + strconv.Itoa(f.curSeq)
		f.cursors[id] = rows[batch:]
		resp["result"], resp["hasMore"], resp["id"] = rows[:batch], true, id
	}
	f.mu.Unlock()
	writeJSON(w, status, resp)
}

var bindRE = regexp.MustCompile(`@([A-Za-z_][A-Za-z0-9_]*)`)

// run executes one query's emulation, after checking its bind parameters as
// the server does (every one used, none missing).
func (f *fakeServer) run(aql string, bind map[string]any) ([]any, *fakeErr) {
	emu, ok := emulations[aql]
	if !ok {
		return nil, &fakeErr{400, 1501, "fake: unknown query: " + aql}
	}
	used := map[string]bool{}
	for _, m := range bindRE.FindAllStringSubmatch(aql, -1) {
		used[m[1]] = true
	}
	for name := range used {
		if _, ok := bind[name]; !ok {
			return nil, &fakeErr{400, 1551, "no value specified for declared bind parameter '" + name + "'"}
		}
	}
	for name := range bind {
		if !used[name] {
			return nil, &fakeErr{400, 1552, "bind parameter '" + name + "' was not declared in the query"}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range collections {
		if _, ok := f.colls[c]; !ok {
			return nil, &fakeErr{404, 1203, "collection or view not found: " + c}
		}
	}
	return emu(f, bind)
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return 0
}

func str(v any) string { s, _ := v.(string); return s }

func isTrue(v any) bool { b, _ := v.(bool); return b }

func with(d doc, kv ...any) doc {
	n := maps.Clone(d)
	for i := 0; i < len(kv); i += 2 {
		n[kv[i].(string)] = kv[i+1]
	}
	return n
}

func pending(d doc) bool {
	return isTrue(d["needs_tagging"]) && isTrue(d["is_valid"]) && d["failed"] == false
}

// statSeq is the stat sequence's value (statSeqNow): meta's
// store.MetaStatSeq as a number, 0 while absent.
func (f *fakeServer) statSeq() float64 {
	n := 0.0
	if m, ok := f.colls[colMeta][store.MetaStatSeq]; ok {
		n, _ = strconv.ParseFloat(str(m["value"]), 64)
	}
	return n
}

// emulations of the package's queries, written against the attribute names
// the AQL uses.
var emulations = map[string]func(f *fakeServer, b map[string]any) ([]any, *fakeErr){
	qUpsertFiles: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		files := f.colls[colFiles]
		counter := f.statSeq()
		var out []any
		for _, v := range b["docs"].([]any) {
			d := with(v.(map[string]any)) // a copy: the bind parameters stay as sent
			d["stat_seq"] = min(num(d["stat_seq"]), counter)
			k := str(d["_key"])
			prev, ok := files[k]
			seq := max(num(prev["stat_seq"]), num(d["stat_seq"]))
			if ok && num(d["stat_seq"]) != 0 && num(prev["stat_seq"]) >= num(d["stat_seq"]) {
				continue // the stored stat is as new or newer
			}
			if ok && num(prev["size"]) == num(d["size"]) && num(prev["mtime_ms"]) == num(d["mtime_ms"]) {
				if prev["is_valid"] != d["is_valid"] {
					files[k] = with(prev, "is_valid", d["is_valid"], "stat_seq", seq)
					out = append(out, "returned")
				}
				continue
			}
			if !ok {
				files[k] = maps.Clone(d)
				out = append(out, "inserted")
			} else {
				files[k] = with(prev, "path", d["path"], "path_raw", d["path_raw"], "size", d["size"], "mtime_ms", d["mtime_ms"], "is_valid", d["is_valid"],
					"needs_tagging", true, "tagged", false, "failed", false, "attempts", 0.0, "next_retry_at", 0.0,
					"skip_until", 0.0, "crash_count", 0.0, "last_error", "", "checkpoint", "", "stat_seq", seq)
				out = append(out, "changed")
			}
		}
		return out, nil
	},
	qListFiles: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return f.list(b, int(num(b["limit"]))), nil
	},
	qListFilesAll: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return f.list(b, -1), nil
	},
	qMarkMissing: snapshotKeyedUpdate(
		func(d doc) bool { return isTrue(d["is_valid"]) },
		func(d doc) doc { return with(d, "is_valid", false) }),
	qRetryFailed: snapshotKeyedUpdate(
		func(d doc) bool { return isTrue(d["failed"]) },
		func(d doc) doc {
			return with(d, "failed", false, "attempts", 0, "crash_count", 0, "next_retry_at", 0, "skip_until", 0, "last_error", "")
		}),
	qRetag: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return snapshotKeyedUpdate(
			func(d doc) bool {
				_, claimed := f.colls[colClaims]["claim_"+str(d["_key"])]
				return isTrue(d["tagged"]) && isTrue(d["is_valid"]) && d["failed"] == false &&
					str(d["tagged_version"]) != str(b["version"]) && !claimed
			},
			func(d doc) doc {
				return with(d, "tagged", false, "needs_tagging", true, "attempts", 0, "crash_count", 0, "next_retry_at", 0, "skip_until", 0)
			})(f, b)
	},
	qForgetFiles: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		var out []any
		for _, k := range b["keys"].([]any) {
			if fd, ok := f.colls[colFiles][str(k)]; ok && fd["is_valid"] == false {
				delete(f.colls[colFiles], str(k))
				out = append(out, k)
			}
		}
		return out, nil
	},
	qForgetTags:    keyedRemove(colTags),
	qForgetVectors: keyedRemove(colVectors),
	qPutVector: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		k := str(b["key"])
		if _, ok := f.colls[colFiles][k]; !ok {
			return nil, nil
		}
		f.colls[colVectors][k] = doc{"_key": k, "model_set": b["model_set"], "vector": b["vector"]}
		return []any{1}, nil
	},
	qTrackVectors: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return f.vectors(b, int(num(b["limit"]))), nil
	},
	qTrackVectorsAll: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return f.vectors(b, -1), nil
	},
	qListTags: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return f.listTags(b, int(num(b["limit"]))), nil
	},
	qListTagsAll: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return f.listTags(b, -1), nil
	},
	qForgetClaims: keyedRemove(colClaims),
	qDiscover: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return f.discover(b, int(num(b["limit"]))), nil
	},
	qDiscoverAll: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return f.discover(b, -1), nil
	},
	qClaim: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		fd, ok := f.colls[colFiles][str(b["file"])]
		_, held := f.colls[colClaims][str(b["claim"])]
		at := num(b["at"])
		eligible := !held && ok && claimWork(f, str(b["kind"]), str(b["model_set"]), fd) &&
			num(fd["next_retry_at"]) <= at && num(fd["skip_until"]) <= at
		switch {
		case held:
			return []any{doc{"status": "conflict"}}, nil
		case !eligible:
			return []any{doc{"status": "not_eligible"}}, nil
		}
		f.colls[colClaims][str(b["claim"])] = doc{"_key": b["claim"], "file_key": b["file"], "worker_id": b["worker"],
			"claimed_at": b["at"], "lease_until": b["until"], "kind": b["kind"]}
		return []any{doc{"status": "claimed", "file": fd}}, nil
	},
	qRemoveHeld: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		c, ok := f.colls[colClaims][str(b["claim"])]
		if !ok || c["worker_id"] != b["worker"] {
			return nil, nil
		}
		delete(f.colls[colClaims], str(b["claim"]))
		return []any{1}, nil
	},
	qKeepHeld: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		c, ok := f.colls[colClaims][str(b["claim"])]
		if !ok || c["worker_id"] != b["worker"] {
			return nil, nil
		}
		if num(b["until"]) > num(c["lease_until"]) {
			f.colls[colClaims][str(b["claim"])] = with(c, "lease_until", b["until"])
		}
		return []any{1}, nil
	},
	qCompleteFile: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		fd, ok := f.colls[colFiles][str(b["file"])]
		if !ok {
			return []any{"gone"}, nil
		}
		size, mtime := num(fd["size"]), num(fd["mtime_ms"])
		same := b["claimed"] != true || (size == num(b["csize"]) && mtime == num(b["cmtime"])) ||
			(b["rewritten"] == true && size == num(b["size"]) && mtime == num(b["mtime"]))
		if !same {
			return []any{"changed"}, nil
		}
		fd = with(fd, "tagged", true, "needs_tagging", false, "needs_retag", false, "tagged_version", b["version"],
			"last_tagged_at", b["at"], "checkpoint", "", "last_error", "")
		if b["rewritten"] == true {
			fd = with(fd, "size", b["size"], "mtime_ms", b["mtime"], "stat_seq", max(num(fd["stat_seq"]), f.statSeq()))
		}
		f.colls[colFiles][str(b["file"])] = fd
		return []any{"done"}, nil
	},
	qPutTags: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		k := str(b["file"])
		writes := 1.0
		if old, ok := f.colls[colTags][k]; ok {
			writes = num(old["writes"]) + 1
		}
		f.colls[colTags][k] = doc{"_key": k, "tags": b["tags"], "labels": b["labels"], "scores": b["scores"], "version": b["version"], "written_at": b["at"], "writes": writes}
		return []any{1}, nil
	},
	qReleaseFile: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		fd, ok := f.colls[colFiles][str(b["file"])]
		if !ok {
			return []any{"gone"}, nil
		}
		if b["claimed"] == true && (num(fd["size"]) != num(b["csize"]) || num(fd["mtime_ms"]) != num(b["cmtime"])) {
			return []any{"changed"}, nil
		}
		fd = with(fd, "attempts", b["attempts"], "next_retry_at", b["retry"], "skip_until", b["skip"],
			"failed", b["failed"], "last_error", b["error"], "checkpoint", b["checkpoint"])
		if b["missing"] == true {
			fd = with(fd, "is_valid", false)
		}
		if b["reanalyze"] == true {
			fd = with(fd, "tagged", false, "needs_tagging", true, "needs_retag", false)
		} else {
			fd = with(fd, "needs_retag", isTrue(fd["needs_retag"])) // NOT_NULL(x.needs_retag, false)
		}
		f.colls[colFiles][str(b["file"])] = fd
		return []any{"done"}, nil
	},
	qRemoveWorkerClaims: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		var out []any
		for k, c := range f.colls[colClaims] {
			if c["worker_id"] == b["worker"] {
				delete(f.colls[colClaims], k)
				out = append(out, c["file_key"])
			}
		}
		return out, nil
	},
	qCountCrashes: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		var out []any
		for _, k := range b["keys"].([]any) {
			if fd, ok := f.colls[colFiles][str(k)]; ok {
				n := num(fd["crash_count"]) + 1
				q := n >= num(b["quarantineAt"])
				fd = with(fd, "crash_count", n)
				if q {
					fd = with(fd, "failed", true, "last_error", b["reason"])
				}
				f.colls[colFiles][str(k)] = fd
				out = append(out, doc{"key": k, "crash_count": n, "quarantined": q})
			}
		}
		return out, nil
	},
	qCrashCounts: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		var out []any
		for _, k := range b["keys"].([]any) {
			if fd, ok := f.colls[colFiles][str(k)]; ok {
				out = append(out, doc{"key": k, "crash_count": fd["crash_count"]})
			}
		}
		return out, nil
	},
	qQuarantine: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		fd, ok := f.colls[colFiles][str(b["file"])]
		if !ok {
			return nil, nil
		}
		f.colls[colFiles][str(b["file"])] = with(fd, "failed", true, "last_error", b["reason"])
		return []any{1}, nil
	},
	// One row: how many leases were extended.
	qRenewLeases: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		n := 0
		for k, c := range f.colls[colClaims] {
			if slices.Contains(b["ids"].([]any), c["worker_id"]) && num(c["lease_until"]) < num(b["until"]) {
				f.colls[colClaims][k] = with(c, "lease_until", b["until"])
				n++
			}
		}
		return []any{n}, nil
	},
	// One row: the array of the removed claims (empty: none).
	qCleanupClaims: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		gone := []any{}
		for k, c := range f.colls[colClaims] {
			fd, ok := f.colls[colFiles][str(c["file_key"])]
			if num(c["lease_until"]) < num(b["now"]) || !ok || !keepsClaim(str(c["kind"]), fd) {
				delete(f.colls[colClaims], k)
				gone = append(gone, c)
			}
		}
		return []any{gone}, nil
	},
	qFile: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		if fd, ok := f.colls[colFiles][str(b["key"])]; ok {
			return []any{with(fd, "_id", colFiles+"/"+str(b["key"]), "_rev", "_rev1")}, nil
		}
		return nil, nil
	},
	qCounts: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		n := map[string]int{}
		for _, fd := range f.colls[colFiles] {
			switch {
			case !isTrue(fd["is_valid"]):
				n["invalid"]++
			case isTrue(fd["tagged"]):
				n["tagged"]++
			case isTrue(fd["failed"]):
				n["failed"]++
			case isTrue(fd["needs_tagging"]):
				n["pending"]++
			default:
				n["invalid"]++
			}
		}
		classes := []any{}
		for _, k := range slices.Sorted(maps.Keys(n)) {
			classes = append(classes, doc{"cls": k, "n": n[k]})
		}
		return []any{doc{"classes": classes, "claimed": len(f.colls[colClaims])}}, nil
	},
	qNextStatSeq: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		k := store.MetaStatSeq
		m, ok := f.colls[colMeta][k]
		if !ok {
			f.colls[colMeta][k] = doc{"_key": k, "name": k, "value": "1"}
			return []any{1.0}, nil
		}
		n, err := strconv.ParseFloat(str(m["value"]), 64)
		if err != nil {
			return nil, &fakeErr{400, 1500, "fake: stat sequence " + str(m["value"])}
		}
		f.colls[colMeta][k] = with(m, "value", strconv.FormatFloat(n+1, 'f', -1, 64))
		return []any{n + 1}, nil
	},
	qGetMeta: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		if m, ok := f.colls[colMeta][str(b["key"])]; ok {
			return []any{m["value"]}, nil
		}
		return nil, nil
	},
	qSetMeta: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		k := str(b["key"])
		if m, ok := f.colls[colMeta][k]; ok {
			f.colls[colMeta][k] = with(m, "value", b["value"])
		} else {
			f.colls[colMeta][k] = doc{"_key": k, "name": b["name"], "value": b["value"]}
		}
		return []any{1}, nil
	},
	qPutReceipt: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		k := str(b["key"])
		if m, ok := f.colls[colMeta][k]; ok {
			f.colls[colMeta][k] = with(m, "value", b["value"], "at_ms", b["at"])
		} else {
			f.colls[colMeta][k] = doc{"_key": k, "name": b["name"], "value": b["value"], "at_ms": b["at"]}
		}
		return []any{1}, nil
	},
	qPruneReceipts: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		for k, m := range f.colls[colMeta] {
			name, isStr := m["name"].(string)
			at, isNum := m["at_ms"].(float64)
			if isStr && strings.HasPrefix(name, str(b["prefix"])) && isNum && at < num(b["cutoff"]) {
				delete(f.colls[colMeta], k)
			}
		}
		return nil, nil
	},
	qInsertMeta: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		k := str(b["key"])
		if _, ok := f.colls[colMeta][k]; ok {
			return nil, &fakeErr{409, errUniqueViolate, "unique constraint violated - in index primary of type primary over '_key'; conflicting key: " + k}
		}
		f.colls[colMeta][k] = doc{"_key": k, "name": b["name"], "value": b["value"]}
		return []any{1}, nil
	},
	qSwapMeta: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		k := str(b["key"])
		m, ok := f.colls[colMeta][k]
		if !ok || m["value"] != b["old"] {
			return nil, nil
		}
		f.colls[colMeta][k] = with(m, "value", b["value"])
		return []any{1}, nil
	},
	qRaiseSchema: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		k := str(b["key"])
		old, ok := f.colls[colMeta][k]
		if n, err := strconv.Atoi(str(old["value"])); !ok || err != nil || float64(n) < num(b["n"]) {
			f.colls[colMeta][k] = doc{"_key": k, "name": k, "value": b["value"]}
		}
		return nil, nil
	},
	qLoadRestart: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		if r, ok := f.colls[colRestart][str(b["key"])]; ok {
			return []any{r}, nil
		}
		return nil, nil
	},
	qSaveRestart: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		d := b["doc"].(map[string]any)
		if d["_key"] != b["key"] {
			return nil, &fakeErr{400, 1221, "_key of @doc differs from @key"}
		}
		f.colls[colRestart][str(b["key"])] = d
		return []any{1}, nil
	},
	// INSERT ... OPTIONS { overwriteMode: "ignore" }: a document whose
	// _key exists (stored, or inserted earlier by the same statement) is
	// left as it is; one without a _key gets the padded generator's next;
	// an illegal key fails the whole statement (1221), nothing written.
	qAppendHistory: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		rows := b["rows"].([]any)
		for _, r := range rows {
			if k, ok := r.(map[string]any)["_key"]; ok && !legalKey(k) {
				return nil, &fakeErr{400, 1221, fmt.Sprintf("illegal document key: %v", k)}
			}
		}
		for _, r := range rows {
			d := r.(map[string]any)
			k, ok := d["_key"].(string)
			if !ok {
				f.seq++
				k = fmt.Sprintf("%016x", f.seq)
			}
			if _, dup := f.colls[colHistory][k]; !dup {
				f.colls[colHistory][k] = with(d, "_key", k)
			}
		}
		return nil, nil
	},
	qPruneHistory: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		n := 0
		for _, h := range f.historyOldestFirst() {
			if n == int(num(b["limit"])) || num(h["at_ms"]) >= num(b["before"]) {
				break
			}
			delete(f.colls[colHistory], str(h["_key"]))
			n++
		}
		return []any{n}, nil
	},
	qRecentHistory: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		hs := f.historyOldestFirst()
		slices.Reverse(hs)
		var out []any
		for _, h := range hs[:min(len(hs), int(num(b["limit"])))] {
			out = append(out, h)
		}
		return out, nil
	},
	qTags: func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		if t, ok := f.colls[colTags][str(b["key"])]; ok {
			return []any{t["tags"]}, nil
		}
		return nil, nil
	},
}

// claimWork emulates qClaim's test of the file's work of a kind.
func claimWork(f *fakeServer, kind, modelSet string, fd doc) bool {
	if !isTrue(fd["is_valid"]) || isTrue(fd["failed"]) {
		return false
	}
	switch kind {
	case "":
		return isTrue(fd["needs_tagging"])
	case "retag":
		return isTrue(fd["needs_retag"]) && isTrue(fd["tagged"])
	case "vector":
		v, has := f.colls[colVectors][str(fd["_key"])]
		return isTrue(fd["tagged"]) && modelSet != "" && fd["tagged_version"] == modelSet && !(has && v["model_set"] == modelSet)
	}
	return false
}

// keepsClaim emulates qCleanupClaims's test of a claim's work.
func keepsClaim(kind string, fd doc) bool {
	if !isTrue(fd["is_valid"]) || isTrue(fd["failed"]) {
		return false
	}
	switch kind {
	case "":
		return isTrue(fd["needs_tagging"])
	case "retag":
		return isTrue(fd["needs_retag"]) && isTrue(fd["tagged"])
	case "vector":
		return isTrue(fd["tagged"])
	}
	return false
}

func (f *fakeServer) discover(b map[string]any, limit int) []any {
	now, after := num(b["now"]), str(b["after"])
	var out []any
	for _, k := range slices.Sorted(maps.Keys(f.colls[colFiles])) {
		fd := f.colls[colFiles][k]
		if !pending(fd) || k <= after || num(fd["next_retry_at"]) > now || num(fd["skip_until"]) > now {
			continue
		}
		if _, held := f.colls[colClaims][claimPrefix+k]; held {
			continue
		}
		if limit >= 0 && len(out) == limit {
			break
		}
		out = append(out, with(fd, "_id", colFiles+"/"+k, "_rev", "_r"))
	}
	return out
}

// list is ListFiles: every file after the cursor, in key order.
// vectors emulates qTrackVectors: the model set's vectors after the
// cursor, in key order.
func (f *fakeServer) vectors(b map[string]any, limit int) []any {
	var out []any
	for _, k := range slices.Sorted(maps.Keys(f.colls[colVectors])) {
		v := f.colls[colVectors][k]
		if k <= str(b["after"]) || v["model_set"] != b["model_set"] {
			continue
		}
		if limit >= 0 && len(out) == limit {
			break
		}
		out = append(out, doc{"key": k, "vector": v["vector"]})
	}
	return out
}

// listTags emulates qListTags.
func (f *fakeServer) listTags(b map[string]any, limit int) []any {
	var out []any
	for _, k := range slices.Sorted(maps.Keys(f.colls[colTags])) {
		if k <= str(b["after"]) {
			continue
		}
		if limit >= 0 && len(out) == limit {
			break
		}
		t := f.colls[colTags][k]
		out = append(out, doc{"key": k, "version": t["version"], "tags": t["tags"]})
	}
	return out
}

func (f *fakeServer) list(b map[string]any, limit int) []any {
	var out []any
	for _, k := range slices.Sorted(maps.Keys(f.colls[colFiles])) {
		if k <= str(b["after"]) {
			continue
		}
		if limit >= 0 && len(out) == limit {
			break
		}
		out = append(out, with(f.colls[colFiles][k], "_id", colFiles+"/"+k, "_rev", "_r"))
	}
	return out
}

// legalKey reports whether a server takes k as a document key: a string
// of 1 to 254 bytes of the key alphabet.
func legalKey(k any) bool {
	s, ok := k.(string)
	if !ok || s == "" || len(s) > maxKeyLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !keyByteOK(s[i]) {
			return false
		}
	}
	return true
}

// historyOldestFirst returns the health_history documents by (at_ms, _key).
func (f *fakeServer) historyOldestFirst() []doc {
	hs := slices.Collect(maps.Values(f.colls[colHistory]))
	slices.SortFunc(hs, func(x, y doc) int {
		if d := num(x["at_ms"]) - num(y["at_ms"]); d != 0 {
			return map[bool]int{true: 1, false: -1}[d > 0]
		}
		return strings.Compare(str(x["_key"]), str(y["_key"]))
	})
	return hs
}

// indexCollection is the collection an index request names; it answers 1203
// (and false) when there is no such collection. f.mu is held.
func (f *fakeServer) indexCollection(w http.ResponseWriter, r *http.Request) (string, bool) {
	c := r.URL.Query().Get("collection")
	if _, ok := f.colls[c]; !ok {
		writeErr(w, &fakeErr{404, 1203, "collection or view not found"})
		return "", false
	}
	return c, true
}

// snapshotKeyedUpdate emulates `LET n = (FOR k IN @keys FOR f IN
// library_files FILTER f._key == k AND <cond> UPDATE f WITH <set> IN
// library_files RETURN 1) RETURN LENGTH(n)` as a server runs it: the inner
// FOR is an index lookup that reads the query's snapshot, not its own
// writes (only UPSERT's lookup reads them), so a key given twice is updated
// and counted twice.
// keyedRemove emulates a query that removes the documents of coll keyed
// @keys, returning 1 for each.
func keyedRemove(coll string) func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
	return func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		var out []any
		for _, k := range b["keys"].([]any) {
			if _, ok := f.colls[coll][str(k)]; ok {
				delete(f.colls[coll], str(k))
				out = append(out, 1)
			}
		}
		return out, nil
	}
}

func snapshotKeyedUpdate(cond func(doc) bool, set func(doc) doc) func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
	return func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		snap := maps.Clone(f.colls[colFiles])
		n := 0
		for _, k := range b["keys"].([]any) {
			if fd, ok := snap[str(k)]; ok && cond(fd) {
				f.colls[colFiles][str(k)] = set(f.colls[colFiles][str(k)])
				n++
			}
		}
		return []any{n}, nil
	}
}
