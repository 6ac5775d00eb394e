package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nomarr/nomarr/core/store"
)

// The Browser's side tables (store.Browser). browse_tags holds, per file
// with stored tags, what the filters look in: the text tags lower-cased
// and the mood and top-tag lists as ";label;label;" (lower-cased), so that
// a label is one instr() probe; browse_scores holds the score tags
// (store.ScoreKey) as numbers, indexed by (key, value) for ranges and
// sorting. Triggers on file_tags keep both equal to what file_tags holds,
// in the transaction that writes it, whichever program writes it: a
// program without this code still keeps them. No schema version: a
// program of this version is right with or without them, and they are
// built (with a backfill from file_tags) at the first open for writing
// that finds them missing (ensureBrowse). library_files_path sorts pages
// by path.
var browseDDL = []string{
	`CREATE TABLE IF NOT EXISTS browse_tags (
		file_key      TEXT NOT NULL PRIMARY KEY,
		text          TEXT NOT NULL,
		moods_strict  TEXT NOT NULL,
		moods_regular TEXT NOT NULL,
		moods_loose   TEXT NOT NULL,
		top_tags      TEXT NOT NULL
	) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS browse_scores (
		file_key TEXT NOT NULL,
		key      TEXT NOT NULL,
		value    REAL NOT NULL,
		PRIMARY KEY (file_key, key)
	) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS browse_scores_value ON browse_scores (key, value)`,
	`CREATE INDEX IF NOT EXISTS library_files_path ON library_files (path)`,
	`DROP TRIGGER IF EXISTS browse_tags_insert`,
	`DROP TRIGGER IF EXISTS browse_tags_update`,
	`DROP TRIGGER IF EXISTS browse_tags_delete`,
	`CREATE TRIGGER browse_tags_insert AFTER INSERT ON file_tags BEGIN
		` + browseFill("NEW") + `
	END`,
	`CREATE TRIGGER browse_tags_update AFTER UPDATE OF tags ON file_tags BEGIN
		DELETE FROM browse_tags WHERE file_key = OLD.file_key;
		DELETE FROM browse_scores WHERE file_key = OLD.file_key;
		` + browseFill("NEW") + `
	END`,
	`CREATE TRIGGER browse_tags_delete AFTER DELETE ON file_tags BEGIN
		DELETE FROM browse_tags WHERE file_key = OLD.file_key;
		DELETE FROM browse_scores WHERE file_key = OLD.file_key;
	END`,
	`DELETE FROM browse_tags`,
	`DELETE FROM browse_scores`,
	`INSERT INTO browse_tags SELECT ` + browseTagsCols("t") + ` FROM file_tags t WHERE true
		ON CONFLICT (file_key) DO NOTHING`,
	`INSERT INTO browse_scores SELECT ` + browseScoresCols("t") + ` FROM file_tags t, json_each(t.tags) j
		WHERE ` + scoreKeyCond + ` ON CONFLICT DO NOTHING`,
}

// browseTrigger is the name ensureBrowse looks for: the last built.
const browseTrigger = "browse_tags_delete"

// scoreKeyCond is store.ScoreKey in SQL (GLOB: case-sensitive, '_' literal).
const scoreKeyCond = `j.key GLOB '*_musicnn_*' AND j.key NOT GLOB 'not_*' AND j.key NOT GLOB 'non_*'
	AND j.key NOT GLOB 'spread_*' AND j.type IN ('text', 'real', 'integer')`

// browseFill inserts the side rows of row r (NEW) of file_tags.
func browseFill(r string) string {
	return `INSERT OR REPLACE INTO browse_tags SELECT ` + browseTagsCols(r) + `;
		INSERT OR REPLACE INTO browse_scores SELECT ` + browseScoresCols(r) + ` FROM json_each(` + r + `.tags) j WHERE ` + scoreKeyCond + `;`
}

// browseTagsCols are browse_tags' columns computed from row r of file_tags.
func browseTagsCols(r string) string {
	tag := func(k string) string { return `coalesce(json_extract(` + r + `.tags, '$."` + k + `"'), '')` }
	list := func(k string) string {
		return `';' || lower(replace(` + tag(k) + `, '` + store.ListSep + `', ';')) || ';'`
	}
	var text []string
	for _, k := range store.TextTags {
		text = append(text, tag(k))
	}
	return r + `.file_key, lower(` + strings.Join(text, ` || char(10) || `) + `), ` +
		list(store.MoodKey(store.TierStrict)) + `, ` + list(store.MoodKey(store.TierRegular)) + `, ` +
		list(store.MoodKey(store.TierLoose)) + `, ` + list("top_tags")
}

func browseScoresCols(r string) string {
	return r + `.file_key, j.key, CAST(j.value AS REAL)`
}

// ensureBrowse builds the Browser's side tables and triggers (browseDDL)
// when the file lacks them; best effort, as ensureExtras: a Browse on a
// file without them fails until an open for writing builds them.
func (s *Store) ensureBrowse(ctx context.Context) {
	have := func(q querier) bool {
		var n int
		err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name = ?`, browseTrigger).Scan(&n)
		return err == nil && n > 0
	}
	if have(s.r) {
		return
	}
	_ = s.withTx(ctx, func(tx *sql.Tx) error {
		if have(tx) {
			return nil
		}
		return execSchema(ctx, tx, browseDDL)
	})
}

// classOrder is a file's status as store.StatusOf names it.
var classOrder = `(CASE ` + fileClass("f") + ` WHEN '` + store.ClassInvalid + `' THEN '` + store.StatusMissing + `' ELSE ` + fileClass("f") + ` END)`

// browseFrom is the FROM clause, the WHERE clause and their arguments
// for q (normalized). The table that narrows most drives: a text search
// the keys whose path (through library_files_path, narrower than the
// table) or text tags hold the text; a mood, genre or score filter, which
// only files with stored tags pass, browse_tags; otherwise every file.
func browseFrom(q store.BrowseQuery) (from, where string, args []any) {
	conds := []string{"true"}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("?%d", len(args))
	}
	tagged := q.Mood != "" || q.Genre != "" || len(q.Scores) > 0
	switch {
	case q.Text != "":
		t := arg(q.Text)
		from = ` FROM (SELECT key FROM library_files INDEXED BY library_files_path WHERE instr(lower(path), ` + t + `) > 0
			UNION SELECT file_key FROM browse_tags WHERE instr(text, ` + t + `) > 0) AS c
			CROSS JOIN library_files f ON f.key = c.key`
		if tagged {
			from += ` JOIN browse_tags b ON b.file_key = f.key`
		}
	case tagged:
		from = ` FROM browse_tags b CROSS JOIN library_files f ON f.key = b.file_key`
	default:
		from = ` FROM library_files f`
	}
	if q.Status != "" {
		conds = append(conds, classOrder+" = "+arg(q.Status))
	}
	if q.Mood != "" {
		col := map[string]string{store.TierStrict: "moods_strict", store.TierRegular: "moods_regular"}[q.MoodTier]
		if col == "" {
			col = "moods_loose"
		}
		conds = append(conds, `instr(b.`+col+`, ';' || `+arg(q.Mood)+` || ';') > 0`)
	}
	if q.Genre != "" {
		conds = append(conds, `instr(b.top_tags, ';' || `+arg(q.Genre)+` || ';') > 0`)
	}
	for _, r := range q.Scores {
		conds = append(conds, `EXISTS (SELECT 1 FROM browse_scores r WHERE r.file_key = f.key AND r.key = `+arg(r.Key)+
			` AND r.value >= `+arg(r.Min)+` AND r.value <= `+arg(r.Max)+`)`)
	}
	return from, strings.Join(conds, " AND "), args
}

// browseTotal counts the files matching q: from library_counts when q
// filters on the status alone (or not at all), else by the query.
func browseTotal(ctx context.Context, tx *sql.Tx, q store.BrowseQuery, from, where string, args []any) (int, error) {
	var n int
	if browseFiltered(q) {
		err := tx.QueryRowContext(ctx, `SELECT count(*)`+from+` WHERE `+where, args...).Scan(&n)
		return n, err
	}
	class := q.Status
	if class == store.StatusMissing {
		class = store.ClassInvalid
	}
	err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM library_counts WHERE ?1 = '' OR class = ?1`, class).Scan(&n)
	return n, err
}

// browseFiltered reports whether q filters on more than the status.
func browseFiltered(q store.BrowseQuery) bool {
	return q.Text != "" || q.Mood != "" || q.Genre != "" || len(q.Scores) > 0
}

// Browse implements store.Browser: the count and the page's keys, in one
// read transaction, then the page's files and tags by key.
func (s *Store) Browse(ctx context.Context, q store.BrowseQuery) (store.BrowsePage, error) {
	q = q.Normalized()
	from, where, args := browseFrom(q)
	countFrom, countArgs := from, args
	dir := ""
	if q.Desc {
		dir = " DESC"
	}
	var order string
	switch q.Sort {
	case store.SortPath:
		order = "f.path" + dir + ", f.key" + dir
	case store.SortTaggedAt:
		order = "f.last_tagged_at" + dir + ", f.key" + dir
	case store.SortStatus:
		order = classOrder + dir + ", f.key" + dir
	default:
		args = append(args, q.Sort)
		from += fmt.Sprintf(` LEFT JOIN browse_scores o ON o.file_key = f.key AND o.key = ?%d`, len(args))
		order = "o.value IS NULL, o.value" + dir + ", f.key" + dir
	}
	page := store.BrowsePage{Rows: []store.BrowseRow{}}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return page, s.fail("browse", "", err)
	}
	defer func() { _ = tx.Rollback() }()
	// A filtered page counts its matches in the query that pages them
	// (count(*) OVER ()): one pass over them, not two; only a page past
	// the last match counts them alone.
	filtered := browseFiltered(q)
	if !filtered {
		if page.Total, err = browseTotal(ctx, tx, q, countFrom, where, countArgs); err != nil {
			return page, s.fail("browse", "", err)
		}
		if q.Offset >= page.Total {
			return page, nil
		}
	}
	n := len(args)
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT `+prefixed("f", fileCols)+`, coalesce(t.tags, '{}'), p.total
		FROM (SELECT f.key, count(*) OVER () AS total`+from+` WHERE `+where+` ORDER BY `+order+` LIMIT ?%d OFFSET ?%d) AS p
		JOIN library_files f ON f.key = p.key LEFT JOIN file_tags t ON t.file_key = f.key`, n+1, n+2),
		append(args, q.Limit, q.Offset)...)
	if err != nil {
		return page, s.fail("browse", "", err)
	}
	defer rows.Close()
	for rows.Next() {
		var doc string
		var total int
		var r store.BrowseRow
		var err error
		if r.File, err = scanFile(multi{rows, []any{&doc, &total}}); err != nil {
			return page, s.fail("browse", "", err)
		}
		if r.Tags, err = decodeTags(doc); err != nil {
			return page, s.fail("browse", r.File.Key, err)
		}
		if filtered {
			page.Total = total
		}
		page.Rows = append(page.Rows, r)
	}
	if err := rows.Err(); err != nil {
		return page, s.fail("browse", "", err)
	}
	if filtered && len(page.Rows) == 0 {
		if page.Total, err = browseTotal(ctx, tx, q, countFrom, where, countArgs); err != nil {
			return page, s.fail("browse", "", err)
		}
	}
	// The join gives the page's rows in no set order: the rule orders them.
	slices.SortFunc(page.Rows, func(a, b store.BrowseRow) int {
		switch {
		case store.BrowseLess(q, a, b):
			return -1
		case store.BrowseLess(q, b, a):
			return 1
		}
		return 0
	})
	return page, nil
}

// multi scans a file's columns then extra ones.
type multi struct {
	r     *sql.Rows
	extra []any
}

func (m multi) Scan(dest ...any) error { return m.r.Scan(append(dest, m.extra...)...) }

// prefixed qualifies a column list with a table alias.
func prefixed(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = alias + "." + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

func decodeTags(doc string) (map[string]string, error) {
	tags := map[string]string{}
	if doc == "" || doc == "null" {
		return tags, nil
	}
	if err := json.Unmarshal([]byte(doc), &tags); err != nil {
		return nil, fmt.Errorf("bad tags document: %w", err)
	}
	return tags, nil
}

// FileTags implements store.Browser.
func (s *Store) FileTags(ctx context.Context, key string) (map[string]string, error) {
	var doc sql.NullString
	err := s.r.QueryRowContext(ctx, `SELECT t.tags FROM library_files f LEFT JOIN file_tags t ON t.file_key = f.key
		WHERE f.key = ?`, key).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: file tags %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return nil, s.fail("file tags", key, err)
	}
	tags, err := decodeTags(doc.String)
	if err != nil {
		return nil, s.fail("file tags", key, err)
	}
	return tags, nil
}

// TagStats implements store.Browser from the side tables: the histograms
// counted by SQLite per bin, the lists split here.
func (s *Store) TagStats(ctx context.Context) (store.TagStats, error) {
	st := store.NewTagStats()
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, s.fail("tag stats", "", err)
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT key, min(max(CAST(value * %d AS INTEGER), 0), %d), count(*)
		FROM browse_scores GROUP BY 1, 2`, store.HistogramBins, store.HistogramBins-1))
	if err != nil {
		return st, s.fail("tag stats", "", err)
	}
	for rows.Next() {
		var key string
		var bin, n int
		if err := rows.Scan(&key, &bin, &n); err != nil {
			rows.Close()
			return st, s.fail("tag stats", "", err)
		}
		st.AddScore(key, float64(bin)/store.HistogramBins, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, s.fail("tag stats", "", err)
	}
	lists, err := tx.QueryContext(ctx, `SELECT b.moods_strict, b.moods_regular, b.moods_loose, b.top_tags
		FROM browse_tags b JOIN library_files f ON f.key = b.file_key`)
	if err != nil {
		return st, s.fail("tag stats", "", err)
	}
	defer lists.Close()
	for lists.Next() {
		var strict, regular, loose, top string
		if err := lists.Scan(&strict, &regular, &loose, &top); err != nil {
			return st, s.fail("tag stats", "", err)
		}
		st.Files++
		st.AddLabels(store.TierStrict, unsemi(strict))
		st.AddLabels(store.TierRegular, unsemi(regular))
		st.AddLabels(store.TierLoose, unsemi(loose))
		st.AddLabels("", unsemi(top))
	}
	if err := lists.Err(); err != nil {
		return st, s.fail("tag stats", "", err)
	}
	return st, nil
}

// unsemi turns a ";a;b;" column back into a stored list.
func unsemi(v string) string {
	return strings.ReplaceAll(strings.Trim(v, ";"), ";", store.ListSep)
}
