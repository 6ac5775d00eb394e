package arangodb

import (
	"context"
	"regexp"

	"github.com/arangodb/go-driver/v2/arangodb"

	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
)

// scoreIndex is the persistent index of file_tags on one stored score
// (file_tags.scores, store.Scores, written with the tags): fields
// scores.<key> then _key, so that it orders the files having the score by
// it, ties by key, as store.BrowseLess does, in either direction.
type scoreIndex struct{ key, name string }

// scoreIndexes are the score indexes, one per score key of the fixed
// models (core/tags: each class of each head whose key store.ScoreKey
// accepts), named nomarr_score_<class label> ("nomarr_score_happy"). A
// head added to core/tags gets its own. The key is spelled into the
// queries' text (the optimizer plans an index only on an attribute named
// there, not one named by a bind parameter), so a key that is not a plain
// AQL name would get no index; every key of the models is one
// (TestScoreIndexes). Scores of other models are answered by a scan.
var scoreIndexes = modelScoreIndexes()

// scoreIndexByKey finds a score key's index.
var scoreIndexByKey = func() map[string]scoreIndex {
	m := map[string]scoreIndex{}
	for _, ix := range scoreIndexes {
		m[ix.key] = ix
	}
	return m
}()

// aqlName is an attribute name AQL takes unquoted (a score key of the
// models is lower case, digits and underscores).
var aqlName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func modelScoreIndexes() []scoreIndex {
	var out []scoreIndex
	for _, h := range tags.Heads {
		for _, c := range tags.Classes[h] {
			k := tags.ClassKey(h, c)
			if store.ScoreKey(k) && aqlName.MatchString(k) {
				out = append(out, scoreIndex{key: k, name: "nomarr_score_" + tags.Label(c)})
			}
		}
	}
	return out
}

// schemaIndex is ix as the bootstrap creates it.
func (ix scoreIndex) schemaIndex() index {
	return index{coll: colTags, name: ix.name, fields: []string{ix.attr(), "_key"}}
}

// attr is the stored score's attribute path.
func (ix scoreIndex) attr() string { return "scores." + ix.key }

// scan opens an enumeration of file_tags through ix (see browseIndexed
// for the hint).
func (ix scoreIndex) scan() string {
	return `FOR d IN file_tags OPTIONS { indexHint: "` + ix.name + `", forceIndexHint: false }`
}

// indexedRange is the score range of q that a score index serves (the
// first one on a key of scoreIndexes), for a query without a label: a
// label's index is read instead when q has one.
func indexedRange(q store.BrowseQuery) (store.ScoreRange, scoreIndex, bool) {
	if len(store.QueryLabels(q)) > 0 {
		return store.ScoreRange{}, scoreIndex{}, false
	}
	for _, r := range q.Scores {
		if ix, ok := scoreIndexByKey[r.Key]; ok {
			return r, ix, true
		}
	}
	return store.ScoreRange{}, scoreIndex{}, false
}

// browseRangeAQL is the query of a page with a score range that ix
// serves (indexedRange; bound as @min, @max): the file_tags documents
// whose score lies in the range are read from ix, then each match's file
// and info by key, the other filters tested (browseTest, which tests the
// range again on the tags, as the rule reads them), and the matches
// counted, sorted and paged. It reads the files the range selects, not
// the library.
func browseRangeAQL(ix scoreIndex, desc bool) string {
	attr := "d." + ix.attr()
	return tagsDrivenAQL(ix.scan(), attr+` >= @min AND `+attr+` <= @max`, desc)
}

// scoreSorted is the index of a page sorted by a score that one serves,
// with no filter but a status.
func scoreSorted(q store.BrowseQuery) (scoreIndex, bool) {
	ix, ok := scoreIndexByKey[q.Sort]
	if !ok || q.Text != "" || q.Mood != "" || q.Genre != "" || len(q.Scores) > 0 {
		return scoreIndex{}, false
	}
	return ix, true
}

// statusCount is the index a score-sorted page's total with a status is
// counted on (browseCount).
var statusCount = browseIndexes[store.SortPath]

func direction(desc bool) string {
	if desc {
		return "DESC"
	}
	return "ASC"
}

// scoreHeadAQL is the first query of a page sorted by ix's score
// (browseByScore): the page's files that have the score, read from ix in
// order from either end (`> null` is a range on the index's first field
// that leaves out the files without the score; SORT on its fields then
// LIMIT: the optimizer drops the sort, and the scan stops at the page's
// end), each one's file read by key and the status filter tested on it;
// and the total, as browseIndexed counts it (statusCount). A status filter reads the
// file of each document the scan passes.
func scoreHeadAQL(ix scoreIndex, desc, status bool) string {
	dir, attr := direction(desc), "d."+ix.attr()
	filter := ""
	if status {
		filter = " AND " + browseStatus + " == @status"
	}
	return `RETURN {total: ` + browseCount(statusCount.index, statusCount.attr, status) + `, rows: (
  ` + ix.scan() + `
    FILTER ` + attr + ` > null
    SORT ` + attr + ` ` + dir + `, d._key ` + dir + `
    LET f = DOCUMENT("library_files", d._key)
    FILTER f != null` + filter + `
    LIMIT @offset, @limit
    RETURN {file: f, tags: d.tags || {}, info: DOCUMENT("file_info", d._key) || {}})}`
}

// scoreCountAQL counts the files that have ix's score (and the status,
// when filtered): without a status over ix's entries alone, which holds as
// long as every file_tags document has its file (Complete writes both,
// ForgetMissing removes both); with one, each file is read.
func scoreCountAQL(ix scoreIndex, status bool) string {
	filter := ""
	if status {
		filter = `
    LET f = DOCUMENT("library_files", d._key)
    FILTER f != null AND ` + browseStatus + ` == @status`
	}
	return `RETURN LENGTH(
  ` + ix.scan() + `
    FILTER d.` + ix.attr() + ` > null` + filter + `
    RETURN 1)`
}

// scoreRestAQL is the tail of a page sorted by ix's score that reaches
// past the files having it: the files without it, in key order in the
// page's direction (store.BrowseLess), read from the primary index and
// skipped while they have the score (one probe of file_tags each) or
// fail the status filter (tested first), from @skip, at most @limit.
func scoreRestAQL(ix scoreIndex, desc, status bool) string {
	filter := ""
	if status {
		filter = "\n  FILTER " + browseStatus + " == @status"
	}
	return `FOR f IN library_files OPTIONS { indexHint: "primary", forceIndexHint: false }
  SORT f._key ` + direction(desc) + filter + `
  LET d = DOCUMENT("file_tags", f._key)
  FILTER d.` + ix.attr() + ` == null
  LIMIT @skip, @limit
  RETURN {file: f, tags: d.tags || {}, info: DOCUMENT("file_info", f._key) || {}}`
}

// browseByScore answers a page sorted by ix's score (scoreSorted): the
// files that have the score come first, read from ix in order
// (scoreHeadAQL); a page that reaches past them takes the rest from the
// files without it in key order (scoreRestAQL), from where the page
// starts among them: its offset less the number of files with the score,
// which a page holding some of them knows and one past them all counts
// (scoreCountAQL). Such a page is read in one stream transaction, so
// that its queries see one snapshot; a page that ends among the files
// with the score, or at the end, is its first query alone.
func (s *Store) browseByScore(ctx context.Context, q store.BrowseQuery, ix scoreIndex) (browseDoc, error) {
	page, done, err := scorePage(ctx, s.db, q, ix, false)
	if err != nil || done {
		return page, err
	}
	cols := arangodb.TransactionCollections{Read: []string{colFiles, colTags, colInfo}}
	err = s.withTxOn(ctx, cols, func(ctx context.Context, tx arangodb.Transaction) error {
		var err error
		page, _, err = scorePage(ctx, tx, q, ix, true)
		return err
	})
	return page, err
}

// scorePage reads a page sorted by ix's score with db; done is false
// when the page needs the files without the score and rest is false
// (then the page is not read to its end).
func scorePage(ctx context.Context, db querier, q store.BrowseQuery, ix scoreIndex, rest bool) (page browseDoc, done bool, err error) {
	status := q.Status != ""
	bind := map[string]any{"offset": q.Offset, "limit": q.Limit}
	if status {
		bind["status"] = q.Status
	}
	page, err = queryOne[browseDoc](ctx, db, scoreHeadAQL(ix, q.Desc, status), "browse", bind)
	if err != nil {
		return page, false, err
	}
	n := len(page.Rows)
	if n == q.Limit || q.Offset+n >= int(page.Total) {
		return page, true, nil
	}
	if !rest {
		return page, false, nil
	}
	scored := q.Offset + n // the page holds the last files with the score
	if n == 0 && q.Offset > 0 {
		delete(bind, "offset")
		delete(bind, "limit")
		if scored, err = queryCount(ctx, db, scoreCountAQL(ix, status), bind); err != nil {
			return page, false, err
		}
	}
	delete(bind, "offset")
	bind["skip"], bind["limit"] = max(q.Offset-scored, 0), q.Limit-n
	more, err := queryAll[browseRowDoc](ctx, db, scoreRestAQL(ix, q.Desc, status), bind)
	if err != nil {
		return page, false, err
	}
	page.Rows = append(page.Rows, more...)
	return page, true, nil
}
