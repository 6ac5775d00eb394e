package arangodb

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/nomarr/nomarr/core/store"
)

// browseStatus is a file's status (store.StatusOf) in AQL, from the four
// flags that the browse indexes store (nomarr_browse_path,
// nomarr_browse_tagged).
const browseStatus = `(!f.is_valid ? "missing" : f.tagged ? "tagged" : f.failed ? "failed" : f.needs_tagging ? "pending" : "missing")`

// qBrowse is store.Browser.Browse in AQL for a query that no index
// serves (browseIndexed, browseLabelAQL, browseRangeAQL, browseByScore):
// every file with its tags is tested (store.BrowseMatch spelled in AQL,
// browseTest), then the matches are counted, sorted and paged
// (browsePage). ArangoDB's LOWER
// folds more than ASCII, and its string order is ICU's: paths and texts
// outside ASCII may match and sort otherwise than in the other stores. It
// reads every file and its tags, so a large library answers in the time
// of a scan.
const qBrowse = `LET hits = (
  FOR f IN library_files
    LET t = DOCUMENT("file_tags", f._key).tags || {}` + browseTest + `
)
` + browsePage

// browseTest tests file f, with tags t, against the status, text and
// score filters of a query, and returns it with its info and sort value v
// (store.BrowseMatch less the labels, in AQL).
const browseTest = `
    LET i = DOCUMENT("file_info", f._key) || {}
    LET status = ` + browseStatus + `
    FILTER @status == "" OR status == @status
    FILTER @text == "" OR CONTAINS(LOWER(f.path), @text) OR CONTAINS(LOWER(i.artist || ""), @text)
      OR CONTAINS(LOWER(i.title || ""), @text) OR CONTAINS(LOWER(i.album || ""), @text)
    FILTER LENGTH(FOR r IN @scores FILTER t[r.key] == null OR TO_NUMBER(t[r.key]) < r.min OR TO_NUMBER(t[r.key]) > r.max RETURN 1) == 0
    LET v = @sort == "path" ? f.path : @sort == "tagged_at" ? (f.last_tagged_at || 0) : @sort == "status" ? status :
      (t[@sort] == null ? null : TO_NUMBER(t[@sort]))
    RETURN {f, t, i, v}`

// browsePage counts the hits, sorts them (store.BrowseLess: files without
// the sort's score last) and pages them.
const browsePage = `RETURN {total: LENGTH(hits), rows: (
  FOR h IN hits
    SORT h.v == null, h.v ASC, h.f._key ASC
    LIMIT @offset, @limit
    RETURN {file: h.f, tags: h.t, info: h.i})}`

// qBrowseDesc is qBrowse in descending order (files without the score
// still last).
var qBrowseDesc = descending(qBrowse)

// descending turns a query ending in browsePage to descending order.
func descending(aql string) string {
	return strings.Replace(aql, "h.v ASC, h.f._key ASC", "h.v DESC, h.f._key DESC", 1)
}

// labelIndex is the array index of file_tags on the stored labels
// (store.Labels), written with the tags (qPutTags).
const labelIndex = "nomarr_tags_labels"

// browseLabelAQL is the query of a page with n label filters (1 or 2,
// store.QueryLabels, bound as @label0, @label1): the file_tags documents
// holding one label are read from labelIndex (FILTER … IN labels[*]; the
// optimizer picks which), the other tested on them, then each match's file and info
// are read by key and the other filters tested (browseTest) before the
// matches are counted, sorted and paged. It reads the files the labels
// select, not the library; a file without stored tags has no labels, so
// never matches, as in the rule.
func browseLabelAQL(n int, desc bool) string {
	cond := make([]string, n)
	for i := range cond {
		cond[i] = "@label" + strconv.Itoa(i) + " IN d.labels[*]"
	}
	return tagsDrivenAQL(`FOR d IN file_tags OPTIONS { indexHint: "`+labelIndex+`", forceIndexHint: false }`,
		strings.Join(cond, " AND "), desc)
}

// tagsDrivenAQL is the query of a page whose matches are read from
// file_tags by scan (an enumeration naming its index) where filter
// holds: each match's file and info are read by key, the page's filters
// tested (browseTest), and the matches counted, sorted and paged.
func tagsDrivenAQL(scan, filter string, desc bool) string {
	aql := `LET hits = (
  ` + scan + `
    FILTER ` + filter + `
    LET f = DOCUMENT("library_files", d._key)
    FILTER f != null
    LET t = d.tags || {}` + browseTest + `
)
` + browsePage
	if desc {
		aql = descending(aql)
	}
	return aql
}

// browseIndexes names the index that orders a page by each sort field that
// one serves; the files' key breaks ties, in the same direction.
var browseIndexes = map[string]struct{ index, attr string }{
	store.SortPath:     {"nomarr_browse_path", "path"},
	store.SortTaggedAt: {"nomarr_browse_tagged", "last_tagged_at"},
}

// browseIndexed is the query of a page that an index serves: no text,
// label or score filter, sorted by path or tagging time (browseIndexes).
// The index is read in order, from either end (SORT on its fields, then
// LIMIT: the optimizer removes the SORT and stops the scan at the end of
// the page); a status filter is tested on the flags the index stores, so
// only the page's documents, their tags and info are read. The total is
// the collection's count (kept by the server) without a status, and else
// a count over the same index, whole, that reads no document. indexHint names the
// index because the optimizer does not weigh stored values when it picks
// one; forceIndexHint false leaves it free to plan without it (a
// database whose index is missing still answers, by a scan).
// ok is false for a query no index serves (qBrowse).
func browseIndexed(q store.BrowseQuery) (aql string, ok bool) {
	ix, ok := browseIndexes[q.Sort]
	if !ok || q.Text != "" || q.Mood != "" || q.Genre != "" || len(q.Scores) > 0 {
		return "", false
	}
	return browseIndexedAQL(ix.index, ix.attr, q.Desc, q.Status != ""), true
}

// browseIndexedAQL spells browseIndexed's query (one text per index,
// direction and status filter or none).
func browseIndexedAQL(index, attr string, desc, status bool) string {
	dir := "ASC"
	if desc {
		dir = "DESC"
	}
	scan := `FOR f IN library_files OPTIONS { indexHint: "` + index + `", forceIndexHint: false }`
	filter := ""
	if status {
		filter = "\n    FILTER " + browseStatus + " == @status"
	}
	return `RETURN {total: ` + browseCount(index, attr, status) + `, rows: (
  ` + scan + filter + `
    SORT f.` + attr + ` ` + dir + `, f._key ` + dir + `
    LIMIT @offset, @limit
    RETURN {file: f, tags: DOCUMENT("file_tags", f._key).tags || {}, info: DOCUMENT("file_info", f._key) || {}})}`
}

// browseCount counts the files of a page with no filter but a status:
// the collection's count (kept by the server) without one; with one, a
// count over the whole of index (one of browseIndexes, storing the status
// flags) that reads its entries only. f.attr >= null holds for every
// document (null is the least value): a range on the index's first
// field, so that the count is planned on the index (which covers the
// filter) rather than on the collection.
func browseCount(index, attr string, status bool) string {
	if !status {
		return `LENGTH(library_files)`
	}
	return `FIRST(FOR f IN library_files OPTIONS { indexHint: "` + index + `", forceIndexHint: false }` +
		"\n    FILTER f." + attr + " >= null\n    FILTER " + browseStatus + " == @status" +
		"\n    COLLECT WITH COUNT INTO n RETURN n)"
}

// qFileTags reads a known file's tags (null when it has none).
const qFileTags = `FOR f IN library_files FILTER f._key == @key RETURN {tags: DOCUMENT("file_tags", f._key).tags}`

type browseRowDoc struct {
	File fileDoc           `json:"file"`
	Tags map[string]string `json:"tags"`
	Info infoDoc           `json:"info"`
}

type browseDoc struct {
	Total num64          `json:"total"`
	Rows  []browseRowDoc `json:"rows"`
}

// Browse implements store.Browser (browseQuery).
func (s *Store) Browse(ctx context.Context, q store.BrowseQuery) (store.BrowsePage, error) {
	q = q.Normalized()
	var docs []browseDoc
	err := s.read(ctx, func(ctx context.Context) error {
		if ix, ok := scoreSorted(q); ok {
			d, err := s.browseByScore(ctx, q, ix)
			docs = []browseDoc{d}
			return err
		}
		aql, bind := browseQuery(q)
		var err error
		docs, err = queryAll[browseDoc](ctx, s.db, aql, bind)
		return err
	})
	if err != nil {
		return store.BrowsePage{}, s.fail("browse", "", err)
	}
	page := store.BrowsePage{Rows: []store.BrowseRow{}}
	if len(docs) != 1 {
		return page, s.fail("browse", "", fmt.Errorf("%d answers, want 1", len(docs)))
	}
	page.Total = int(docs[0].Total)
	for _, r := range docs[0].Rows {
		tags := r.Tags
		if tags == nil {
			tags = map[string]string{}
		}
		page.Rows = append(page.Rows, store.BrowseRow{File: r.File.file(), Tags: tags, Info: r.Info.info()})
	}
	return page, nil
}

// browseQuery is the query answering q (normalized) and its bind
// parameters: browseIndexed's, else browseLabelAQL's for a mood or genre
// filter, else browseRangeAQL's for a score range a score index serves,
// else qBrowse. (A page sorted by such a score with no filter but a
// status is browseByScore's.)
func browseQuery(q store.BrowseQuery) (string, map[string]any) {
	bind := map[string]any{"offset": q.Offset, "limit": q.Limit}
	if aql, ok := browseIndexed(q); ok {
		if q.Status != "" {
			bind["status"] = q.Status
		}
		return aql, bind
	}
	scores := make([]map[string]any, len(q.Scores))
	for i, r := range q.Scores {
		scores[i] = map[string]any{"key": r.Key, "min": r.Min, "max": r.Max}
	}
	bind["status"], bind["text"], bind["scores"], bind["sort"] = q.Status, q.Text, scores, q.Sort
	labels := store.QueryLabels(q)
	if r, ix, ok := indexedRange(q); ok {
		bind["min"], bind["max"] = r.Min, r.Max
		return browseRangeAQL(ix, q.Desc), bind
	}
	if len(labels) == 0 {
		if q.Desc {
			return qBrowseDesc, bind
		}
		return qBrowse, bind
	}
	for i, l := range labels {
		bind["label"+strconv.Itoa(i)] = l
	}
	return browseLabelAQL(len(labels), q.Desc), bind
}

// FileTags implements store.Browser.
func (s *Store) FileTags(ctx context.Context, key string) (map[string]string, error) {
	if !validFileKey(key) {
		return nil, s.fail("file tags", key, store.ErrNotFound)
	}
	var docs []struct {
		Tags map[string]string `json:"tags"`
	}
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		docs, err = queryAll[struct {
			Tags map[string]string `json:"tags"`
		}](ctx, s.db, qFileTags, map[string]any{"key": key})
		return err
	})
	if err != nil {
		return nil, s.fail("file tags", key, err)
	}
	if len(docs) == 0 {
		return nil, s.fail("file tags", key, store.ErrNotFound)
	}
	if docs[0].Tags == nil {
		return map[string]string{}, nil
	}
	return docs[0].Tags, nil
}
