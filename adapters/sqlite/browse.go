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
// with stored tags, the mood and top-tag lists (what TagStats counts; its
// text column, once searched, is left empty: a search looks in file_info);
// browse_scores holds the score tags
// (store.ScoreKey) as numbers, indexed by (key, value) for ranges and
// sorting; browse_labels holds one row per label of the mood lists
// ("strict:happy", "regular:…", "loose:…") and of the top tags
// ("top:rock"), lower-cased, with the file's status (store.StatusOf),
// indexed by (label, status): a label filter, with or without a status,
// is counted from that index alone. Triggers keep the three equal to what
// file_tags and library_files hold, in the transaction that writes them,
// whichever program writes them: a program without this code still keeps
// them. No schema version: a program of this version is right with or
// without them, and they are built (with a backfill from file_tags) at the
// first open for writing that finds the last trigger missing
// (ensureBrowse). library_files_path and library_files_tagged_at order
// pages by path and by tagging time.
//
// browse_bins and browse_counts are what TagStats reads: per score
// key and histogram bin (store.Bin), the browse_scores rows in it; per
// label, the browse_labels rows naming it, and under "files" the
// browse_tags rows whose file has a row. Triggers on those tables keep
// them, so they equal a recount after every commit
// (TestTagStatsCountsEqualARecount) and the Insights page reads a few
// hundred rows whatever the library's size. Rows of browse_scores and
// browse_labels are only ever inserted (OR IGNORE, never REPLACE, whose
// deletes fire no trigger) and deleted, as are those of browse_tags.
var browseDDL = slices.Concat(dropTriggers("browse_bins_insert", "browse_bins_delete",
	"browse_files_tags_insert", "browse_files_tags_delete", "browse_counts_insert", "browse_counts_delete"), []string{
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
	`CREATE TABLE IF NOT EXISTS browse_labels (
		file_key TEXT NOT NULL,
		label    TEXT NOT NULL,
		status   TEXT NOT NULL,
		PRIMARY KEY (file_key, label)
	) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS browse_labels_label ON browse_labels (label, status)`,
	`CREATE TABLE IF NOT EXISTS file_info (
		file_key    TEXT    NOT NULL PRIMARY KEY,
		artist      TEXT    NOT NULL,
		title       TEXT    NOT NULL,
		album       TEXT    NOT NULL,
		duration_ms INTEGER NOT NULL
	) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS library_files_path ON library_files (path)`,
	`CREATE INDEX IF NOT EXISTS library_files_tagged_at ON library_files (last_tagged_at)`,
}, dropTriggers("browse_tags_insert", "browse_tags_update", "browse_tags_delete",
	"browse_labels_file_insert", "browse_labels_file_delete", "browse_labels_status"), []string{
	`CREATE TRIGGER browse_tags_insert AFTER INSERT ON file_tags BEGIN
		` + browseFill("NEW") + `
	END`,
	`CREATE TRIGGER browse_tags_update AFTER UPDATE OF tags ON file_tags BEGIN
		DELETE FROM browse_tags WHERE file_key = OLD.file_key;
		DELETE FROM browse_scores WHERE file_key = OLD.file_key;
		DELETE FROM browse_labels WHERE file_key = OLD.file_key;
		` + browseFill("NEW") + `
	END`,
	`CREATE TRIGGER browse_tags_delete AFTER DELETE ON file_tags BEGIN
		DELETE FROM browse_tags WHERE file_key = OLD.file_key;
		DELETE FROM browse_scores WHERE file_key = OLD.file_key;
		DELETE FROM browse_labels WHERE file_key = OLD.file_key;
	END`,
	// A label row exists while both its file and its stored tags do.
	// They also count the file among those with stored tags
	// (browse_counts' files) when its tags are there: one trigger per
	// event, since a scan inserts every file through it.
	`CREATE TRIGGER browse_labels_file_insert AFTER INSERT ON library_files BEGIN
		INSERT OR IGNORE INTO browse_labels ` + labelsSelect("t", "NEW", "file_tags t", "t.file_key = NEW.key") + `;
		` + countFile("browse_tags WHERE file_key = NEW.key", 1) + `
	END`,
	`CREATE TRIGGER browse_labels_file_delete AFTER DELETE ON library_files BEGIN
		DELETE FROM browse_labels WHERE file_key = OLD.key;
		DELETE FROM file_info WHERE file_key = OLD.key;
		` + countFile("browse_tags WHERE file_key = OLD.key", -1) + `
	END`,
	`CREATE TRIGGER browse_labels_status AFTER UPDATE OF is_valid, tagged, failed, needs_tagging ON library_files
		WHEN ` + statusOf("OLD") + ` IS NOT ` + statusOf("NEW") + ` BEGIN
		UPDATE browse_labels SET status = ` + statusOf("NEW") + ` WHERE file_key = NEW.key;
	END`,
	`DELETE FROM browse_tags`,
	`DELETE FROM browse_scores`,
	`DELETE FROM browse_labels`,
	`INSERT INTO browse_tags SELECT ` + browseTagsCols("t") + ` FROM file_tags t WHERE true
		ON CONFLICT (file_key) DO NOTHING`,
	`INSERT INTO browse_scores SELECT ` + browseScoresCols("t") + ` FROM file_tags t, json_each(t.tags) j
		WHERE ` + scoreKeyCond + ` ON CONFLICT DO NOTHING`,
	`INSERT OR IGNORE INTO browse_labels ` + labelsSelect("t", "f", "file_tags t JOIN library_files f ON f.key = t.file_key", "true"),
	`CREATE TABLE IF NOT EXISTS browse_bins (
		key TEXT    NOT NULL,
		bin INTEGER NOT NULL,
		n   INTEGER NOT NULL,
		PRIMARY KEY (key, bin)
	) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS browse_counts (
		name TEXT    NOT NULL PRIMARY KEY,
		n    INTEGER NOT NULL
	) WITHOUT ROWID`,
	`DELETE FROM browse_bins`,
	`INSERT INTO browse_bins (key, bin, n) SELECT key, ` + scoreBin("value") + `, count(*) FROM browse_scores WHERE true GROUP BY 1, 2`,
	`DELETE FROM browse_counts`,
	`INSERT INTO browse_counts (name, n) SELECT label, count(*) FROM browse_labels WHERE true GROUP BY 1`,
	`INSERT INTO browse_counts (name, n) SELECT '` + countFiles + `', count(*) FROM browse_tags b JOIN library_files f ON f.key = b.file_key`,
	`CREATE TRIGGER browse_bins_insert AFTER INSERT ON browse_scores BEGIN
		INSERT INTO browse_bins (key, bin, n) VALUES (NEW.key, ` + scoreBin("NEW.value") + `, 1)
			ON CONFLICT (key, bin) DO UPDATE SET n = n + 1;
	END`,
	`CREATE TRIGGER browse_bins_delete AFTER DELETE ON browse_scores BEGIN
		UPDATE browse_bins SET n = n - 1 WHERE key = OLD.key AND bin = ` + scoreBin("OLD.value") + `;
	END`,
	`CREATE TRIGGER browse_files_tags_insert AFTER INSERT ON browse_tags BEGIN
		` + countFile("library_files WHERE key = NEW.file_key", 1) + `
	END`,
	`CREATE TRIGGER browse_files_tags_delete AFTER DELETE ON browse_tags BEGIN
		` + countFile("library_files WHERE key = OLD.file_key", -1) + `
	END`,
	`CREATE TRIGGER browse_counts_insert AFTER INSERT ON browse_labels BEGIN
		INSERT INTO browse_counts (name, n) VALUES (NEW.label, 1)
			ON CONFLICT (name) DO UPDATE SET n = n + 1;
	END`,
	`CREATE TRIGGER browse_counts_delete AFTER DELETE ON browse_labels BEGIN
		UPDATE browse_counts SET n = n - 1 WHERE name = OLD.label;
	END`,
})

// dropTriggers drops the named triggers where they exist.
func dropTriggers(names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = `DROP TRIGGER IF EXISTS ` + n
	}
	return out
}

// browseTrigger is the name ensureBrowse looks for: the last built.
const browseTrigger = "browse_counts_delete"

// countFile adds delta to browse_counts' files when the other half of a
// file with stored tags exists (from: a table and the condition finding
// it). The row is upserted, so a row deleted by hand starts again.
func countFile(from string, delta int) string {
	return fmt.Sprintf(`INSERT INTO browse_counts (name, n) SELECT '%s', %d WHERE EXISTS (SELECT 1 FROM %s)
			ON CONFLICT (name) DO UPDATE SET n = n + %d;`, countFiles, delta, from, delta)
}

// countFiles is browse_counts' row of the files with stored tags (no
// label: a label holds a colon).
const countFiles = "files"

// scoreBin is store.Bin of the score v in SQL.
func scoreBin(v string) string {
	return fmt.Sprintf(`min(max(CAST(%s * %d AS INTEGER), 0), %d)`, v, store.HistogramBins, store.HistogramBins-1)
}

// scoreKeyCond is store.ScoreKey in SQL (GLOB: case-sensitive, '_' literal).
const scoreKeyCond = `j.key GLOB '*_musicnn_*' AND j.key NOT GLOB 'not_*' AND j.key NOT GLOB 'non_*'
	AND j.key NOT GLOB 'spread_*' AND j.type IN ('text', 'real', 'integer')`

// browseFill inserts the side rows of row r (NEW) of file_tags.
func browseFill(r string) string {
	return `DELETE FROM browse_tags WHERE file_key = ` + r + `.file_key;
		INSERT INTO browse_tags SELECT ` + browseTagsCols(r) + `;
		DELETE FROM browse_scores WHERE file_key = ` + r + `.file_key;
		INSERT OR IGNORE INTO browse_scores SELECT ` + browseScoresCols(r) + ` FROM json_each(` + r + `.tags) j WHERE ` + scoreKeyCond + `;
		INSERT OR IGNORE INTO browse_labels ` + labelsSelect(r, "f", "library_files f", "f.key = "+r+".file_key") + `;`
}

// storedTag is the stored tag k of row r of file_tags, "" when absent.
func storedTag(r, k string) string {
	return `coalesce(json_extract(` + r + `.tags, '$."` + k + `"'), '')`
}

// browseTagsCols are browse_tags' columns computed from row r of file_tags
// (text, no longer searched, is left empty).
func browseTagsCols(r string) string {
	list := func(k string) string {
		return `';' || lower(replace(` + storedTag(r, k) + `, '` + store.ListSep + `', ';')) || ';'`
	}
	return r + `.file_key, '', ` +
		list(store.MoodKey(store.TierStrict)) + `, ` + list(store.MoodKey(store.TierRegular)) + `, ` +
		list(store.MoodKey(store.TierLoose)) + `, ` + list("top_tags")
}

func browseScoresCols(r string) string {
	return r + `.file_key, j.key, CAST(j.value AS REAL)`
}

// labelsSelect selects browse_labels' rows of row t of file_tags and row
// f of library_files, from tables (naming both) where cond holds: each
// label of each list (store.LabelLists; split as store.List does,
// lower-cased) once. A list
// that does not make a JSON array once its labels are quoted (a control
// character in a label) gives no labels.
func labelsSelect(t, f, tables, cond string) string {
	var parts []string
	for _, l := range store.LabelLists {
		arr := `'["' || replace(replace(replace(lower(` + storedTag(t, l.Key) + `), '\', '\\'), '"', '\"'), '` +
			store.ListSep + `', '","') || '"]'`
		parts = append(parts, `SELECT `+t+`.file_key, '`+l.Prefix+`:' || trim(j.value), `+statusOf(f)+
			` FROM `+tables+`, json_each(CASE WHEN json_valid(`+arr+`) THEN `+arr+` ELSE '[]' END) AS j
			WHERE `+cond+` AND trim(j.value) <> ''`)
	}
	return strings.Join(parts, " UNION ALL ")
}

// statusOf is store.StatusOf of row r of library_files.
func statusOf(r string) string {
	return `(CASE ` + fileClass(r) + ` WHEN '` + store.ClassInvalid + `' THEN '` + store.StatusMissing + `' ELSE ` + fileClass(r) + ` END)`
}

// ensureBrowse builds the Browser's side tables and triggers (browseDDL)
// when the file lacks them; best effort, as ensureExtras: a Browse on a
// file without them fails until an open for writing builds them.
func (s *Store) ensureBrowse(ctx context.Context) {
	if haveTrigger(ctx, s.r, browseTrigger) {
		return
	}
	_ = s.withTx(ctx, func(tx *sql.Tx) error {
		if haveTrigger(ctx, tx, browseTrigger) {
			return nil
		}
		return execSchema(ctx, tx, browseDDL)
	})
}

// sqlArgs numbers a statement's arguments.
type sqlArgs []any

func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("?%d", len(*a))
}

// likePattern is a LIKE pattern matching text anywhere (ESCAPE '\'):
// LIKE folds ASCII case only, as store.BrowseMatch does.
func likePattern(text string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(text) + "%"
}

// Drivers: the rows a query's plan reads first, the others probed by key.
const (
	driveFiles = iota // library_files f, in an order index's order when the sort has one
	driveText         // the keys whose path or text tags hold the text
	driveLabel        // browse_labels d: the first label filter
	driveScore        // browse_scores d: the first score range
)

// labelsOf are q's label filters as browse_labels names them.
func labelsOf(q store.BrowseQuery) []string {
	var out []string
	if q.Mood != "" {
		out = append(out, q.MoodTier+":"+q.Mood)
	}
	if q.Genre != "" {
		out = append(out, "top:"+q.Genre)
	}
	return out
}

// matchSQL is the FROM clause and the conditions selecting q's matches
// (q normalized), read from drive, with the match's key as keyCol. The
// file's row is joined as f when withFile (always for driveFiles and
// driveText), else only when the status needs it. index, with
// driveFiles, is the order index to read library_files by.
func matchSQL(q store.BrowseQuery, a *sqlArgs, drive int, withFile bool, index string) (from, keyCol string, conds []string) {
	labels, scores := labelsOf(q), q.Scores
	status := q.Status
	switch drive {
	case driveText:
		t := a.add(likePattern(q.Text))
		from = ` FROM (SELECT key FROM library_files INDEXED BY library_files_path WHERE path LIKE ` + t + ` ESCAPE '\'
			UNION SELECT file_key FROM file_info WHERE artist LIKE ` + t + ` ESCAPE '\' OR title LIKE ` + t + ` ESCAPE '\'
				OR album LIKE ` + t + ` ESCAPE '\') AS d
			CROSS JOIN library_files f ON f.key = d.key`
		keyCol = "f.key"
	case driveLabel:
		from = ` FROM browse_labels d INDEXED BY browse_labels_label`
		conds = append(conds, "d.label = "+a.add(labels[0]))
		labels = labels[1:]
		if status != "" {
			conds = append(conds, "d.status = "+a.add(status))
			status = ""
		}
		keyCol = "d.file_key"
	case driveScore:
		from = ` FROM browse_scores d INDEXED BY browse_scores_value`
		r := scores[0]
		conds = append(conds, "d.key = "+a.add(r.Key), "d.value >= "+a.add(r.Min), "d.value <= "+a.add(r.Max))
		scores = scores[1:]
		keyCol = "d.file_key"
	default:
		from = ` FROM library_files f`
		if index != "" {
			from += ` INDEXED BY ` + index
		}
		keyCol = "f.key"
	}
	if (drive == driveLabel || drive == driveScore) && (withFile || status != "") {
		from += ` CROSS JOIN library_files f ON f.key = d.file_key`
	}
	if status != "" {
		conds = append(conds, statusOf("f")+" = "+a.add(status))
	}
	// The other filters are probes by primary key, joined: at most one
	// row each per file.
	for i, l := range labels {
		from += fmt.Sprintf(` CROSS JOIN browse_labels l%[1]d ON l%[1]d.file_key = %[2]s AND l%[1]d.label = %[3]s`, i, keyCol, a.add(l))
	}
	for i, r := range scores {
		from += fmt.Sprintf(` CROSS JOIN browse_scores r%[1]d ON r%[1]d.file_key = %[2]s AND r%[1]d.key = %[3]s AND r%[1]d.value >= %[4]s AND r%[1]d.value <= %[5]s`,
			i, keyCol, a.add(r.Key), a.add(r.Min), a.add(r.Max))
	}
	if len(conds) == 0 {
		conds = []string{"true"}
	}
	return from, keyCol, conds
}

// filterDrive is the driver of a filtered query without text: its first
// label filter, else its first score range.
func filterDrive(q store.BrowseQuery) int {
	if len(labelsOf(q)) > 0 {
		return driveLabel
	}
	return driveScore
}

// browseFiltered reports whether q filters on more than the status.
func browseFiltered(q store.BrowseQuery) bool {
	return q.Text != "" || q.Mood != "" || q.Genre != "" || len(q.Scores) > 0
}

// browseCount counts the files matching q: from library_counts when q
// filters on the status alone (or not at all), else by the query, read
// from its narrowest driver (a label filter's count, with the status, is
// read from browse_labels_label alone).
func browseCount(ctx context.Context, tx *sql.Tx, q store.BrowseQuery) (int, error) {
	var n int
	if !browseFiltered(q) {
		class := q.Status
		if class == store.StatusMissing {
			class = store.ClassInvalid
		}
		err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM library_counts WHERE ?1 = '' OR class = ?1`, class).Scan(&n)
		return n, err
	}
	drive := driveText
	if q.Text == "" {
		drive = filterDrive(q)
	}
	var a sqlArgs
	from, _, conds := matchSQL(q, &a, drive, false, "")
	err := tx.QueryRowContext(ctx, `SELECT count(*)`+from+` WHERE `+strings.Join(conds, " AND "), a...).Scan(&n)
	return n, err
}

// orderIndex is the index of library_files that reads files in the order
// of sort, "" when none does.
func orderIndex(sort string) string {
	switch sort {
	case store.SortPath:
		return "library_files_path"
	case store.SortTaggedAt:
		return "library_files_tagged_at"
	}
	return ""
}

// orderBy is the ORDER BY of a page read with file row f (and, for a
// score sort, the score row o, LEFT JOINed: files without it last).
func orderBy(q store.BrowseQuery) string {
	dir := ""
	if q.Desc {
		dir = " DESC"
	}
	switch q.Sort {
	case store.SortPath:
		return "f.path" + dir + ", f.key" + dir
	case store.SortTaggedAt:
		return "f.last_tagged_at" + dir + ", f.key" + dir
	case store.SortStatus:
		return statusOf("f") + dir + ", f.key" + dir
	}
	return "o.value IS NULL, o.value" + dir + ", f.key" + dir
}

// pageKeys reads the keys of one page of matches.
func pageKeys(ctx context.Context, tx *sql.Tx, query string, args sqlArgs, limit, offset int) ([]string, error) {
	l, o := args.add(limit), args.add(offset)
	rows, err := tx.QueryContext(ctx, query+` LIMIT `+l+` OFFSET `+o, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// browseKeys reads the keys of q's page (q normalized, without text;
// total its matches,
// files the library's size). A sort with an index (path, tagging time, a
// score) reads the matches in its order and stops at the page's end when
// that reads fewer rows than the filter selects ((offset+limit) ×
// files/total < total: the filter keeps many of the files); otherwise
// the filter's driver reads every match, and they are sorted.
func browseKeys(ctx context.Context, tx *sql.Tx, q store.BrowseQuery, total, files int) ([]string, error) {
	dir := ""
	if q.Desc {
		dir = " DESC"
	}
	end := int64(q.Offset + q.Limit)
	inOrder := q.Sort != store.SortStatus &&
		(!browseFiltered(q) && q.Status == "" || end*int64(files) < int64(total)*int64(total))
	score := q.Sort != store.SortPath && q.Sort != store.SortTaggedAt && q.Sort != store.SortStatus
	if !inOrder {
		drive := driveFiles
		if browseFiltered(q) {
			drive = filterDrive(q)
		}
		var a sqlArgs
		from, _, conds := matchSQL(q, &a, drive, true, "")
		if score {
			from += ` LEFT JOIN browse_scores o ON o.file_key = f.key AND o.key = ` + a.add(q.Sort)
		}
		return pageKeys(ctx, tx, `SELECT f.key`+from+` WHERE `+strings.Join(conds, " AND ")+` ORDER BY `+orderBy(q), a, q.Limit, q.Offset)
	}
	if !score {
		var a sqlArgs
		from, _, conds := matchSQL(q, &a, driveFiles, true, orderIndex(q.Sort))
		return pageKeys(ctx, tx, `SELECT f.key`+from+` WHERE `+strings.Join(conds, " AND ")+` ORDER BY `+orderBy(q), a, q.Limit, q.Offset)
	}
	// By a score, in browse_scores_value's order: the matches with the
	// score, then those without it (by key).
	var a sqlArgs
	from, _, conds := matchSQL(q, &a, driveFiles, true, "")
	withScore := `SELECT f.key FROM browse_scores o INDEXED BY browse_scores_value CROSS JOIN library_files f ON f.key = o.file_key` +
		strings.TrimPrefix(from, ` FROM library_files f`) + ` WHERE o.key = ` + a.add(q.Sort) + ` AND ` + strings.Join(conds, " AND ") +
		` ORDER BY o.value` + dir + `, o.file_key` + dir
	keys, err := pageKeys(ctx, tx, withScore, a, q.Limit, q.Offset)
	if err != nil || len(keys) == q.Limit {
		return keys, err
	}
	// withScore holds offset + len(keys) matches, or, when it had none
	// from the offset on, a number counted here.
	n := q.Offset + len(keys)
	if len(keys) == 0 {
		var c sqlArgs
		cfrom, _, cconds := matchSQL(q, &c, driveFiles, true, "")
		cq := `SELECT count(*) FROM browse_scores o INDEXED BY browse_scores_value CROSS JOIN library_files f ON f.key = o.file_key` +
			strings.TrimPrefix(cfrom, ` FROM library_files f`) + ` WHERE o.key = ` + c.add(q.Sort) + ` AND ` + strings.Join(cconds, " AND ")
		if err := tx.QueryRowContext(ctx, cq, c...).Scan(&n); err != nil {
			return nil, err
		}
	}
	var b sqlArgs
	drive := driveFiles
	if browseFiltered(q) {
		drive = filterDrive(q)
	}
	bfrom, keyCol, bconds := matchSQL(q, &b, drive, true, "")
	without := `SELECT f.key` + bfrom + ` WHERE ` + strings.Join(bconds, " AND ") +
		` AND NOT EXISTS (SELECT 1 FROM browse_scores o WHERE o.file_key = ` + keyCol + ` AND o.key = ` + b.add(q.Sort) + `)` +
		` ORDER BY f.key` + dir
	rest, err := pageKeys(ctx, tx, without, b, q.Limit-len(keys), max(q.Offset-n, 0))
	return append(keys, rest...), err
}

// browseText reads the keys of a text search's page (q normalized) and
// counts its matches in the same pass over them (count(*) OVER ()); only
// a page past the last match counts them alone.
func browseText(ctx context.Context, tx *sql.Tx, q store.BrowseQuery) ([]string, int, error) {
	var a sqlArgs
	from, _, conds := matchSQL(q, &a, driveText, true, "")
	if q.Sort != store.SortPath && q.Sort != store.SortTaggedAt && q.Sort != store.SortStatus {
		from += ` LEFT JOIN browse_scores o ON o.file_key = f.key AND o.key = ` + a.add(q.Sort)
	}
	l, o := a.add(q.Limit), a.add(q.Offset)
	rows, err := tx.QueryContext(ctx, `SELECT f.key, count(*) OVER ()`+from+` WHERE `+strings.Join(conds, " AND ")+
		` ORDER BY `+orderBy(q)+` LIMIT `+l+` OFFSET `+o, a...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var keys []string
	total := 0
	for rows.Next() {
		var k string
		if err := rows.Scan(&k, &total); err != nil {
			return nil, 0, err
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if len(keys) == 0 {
		total, err = browseCount(ctx, tx, q)
	}
	return keys, total, err
}

// Browse implements store.Browser: the count, the page's keys (see
// browseKeys), then the page's files and tags by key, in one read
// transaction.
func (s *Store) Browse(ctx context.Context, q store.BrowseQuery) (store.BrowsePage, error) {
	q = q.Normalized()
	page := store.BrowsePage{Rows: []store.BrowseRow{}}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return page, s.fail("browse", "", err)
	}
	defer func() { _ = tx.Rollback() }()
	var keys []string
	if q.Text != "" {
		keys, page.Total, err = browseText(ctx, tx, q)
		if err != nil {
			return page, s.fail("browse", "", err)
		}
	} else if setPlan(q) {
		set, err := matchSet(ctx, tx, q)
		if err != nil {
			return page, s.fail("browse", "", err)
		}
		if page.Total = len(set); q.Offset >= page.Total {
			return page, nil
		}
		files, err := browseCount(ctx, tx, store.BrowseQuery{})
		if err != nil {
			return page, s.fail("browse", "", err)
		}
		if keys, err = setKeys(ctx, tx, q, set, files); err != nil {
			return page, s.fail("browse", "", err)
		}
	} else {
		if page.Total, err = browseCount(ctx, tx, q); err != nil {
			return page, s.fail("browse", "", err)
		}
		if q.Offset >= page.Total {
			return page, nil
		}
		files := page.Total
		if browseFiltered(q) || q.Status != "" {
			if files, err = browseCount(ctx, tx, store.BrowseQuery{}); err != nil {
				return page, s.fail("browse", "", err)
			}
		}
		if keys, err = browseKeys(ctx, tx, q, page.Total, files); err != nil {
			return page, s.fail("browse", "", err)
		}
	}
	if len(keys) == 0 {
		return page, nil
	}
	keyDoc, _ := json.Marshal(keys)
	rows, err := tx.QueryContext(ctx, `SELECT `+prefixed("f", fileCols)+`, coalesce(t.tags, '{}'),
		coalesce(i.artist, ''), coalesce(i.title, ''), coalesce(i.album, ''), coalesce(i.duration_ms, 0)
		FROM json_each(?1) AS p CROSS JOIN library_files f ON f.key = p.value LEFT JOIN file_tags t ON t.file_key = f.key
		LEFT JOIN file_info i ON i.file_key = f.key`, string(keyDoc))
	if err != nil {
		return page, s.fail("browse", "", err)
	}
	defer rows.Close()
	for rows.Next() {
		var doc string
		var r store.BrowseRow
		var err error
		if r.File, err = scanFile(multi{rows, []any{&doc, &r.Info.Artist, &r.Info.Title, &r.Info.Album, &r.Info.DurationMs}}); err != nil {
			return page, s.fail("browse", "", err)
		}
		if r.Tags, err = decodeTags(doc); err != nil {
			return page, s.fail("browse", r.File.Key, err)
		}
		page.Rows = append(page.Rows, r)
	}
	if err := rows.Err(); err != nil {
		return page, s.fail("browse", "", err)
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

// TagStats implements store.Browser from the counts the triggers keep
// (browse_bins, browse_counts; rows counted down to 0 are left and
// skipped).
func (s *Store) TagStats(ctx context.Context) (store.TagStats, error) {
	st := store.NewTagStats()
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, s.fail("tag stats", "", err)
	}
	defer func() { _ = tx.Rollback() }()
	err = eachRow(ctx, tx, func(rows *sql.Rows) error {
		var key string
		var bin, n int
		if err := rows.Scan(&key, &bin, &n); err != nil {
			return err
		}
		if bin >= 0 && bin < store.HistogramBins {
			st.AddScore(key, (float64(bin)+0.5)/store.HistogramBins, n)
		}
		return nil
	}, `SELECT key, bin, n FROM browse_bins WHERE n > 0`)
	if err != nil {
		return st, s.fail("tag stats", "", err)
	}
	err = eachRow(ctx, tx, func(rows *sql.Rows) error {
		var label string
		var n int
		if err := rows.Scan(&label, &n); err != nil {
			return err
		}
		if label == countFiles {
			st.Files = n
			return nil
		}
		st.AddLabel(label, n)
		return nil
	}, `SELECT name, n FROM browse_counts WHERE n > 0`)
	if err != nil {
		return st, s.fail("tag stats", "", err)
	}
	return st, nil
}

// eachRow calls scan for each row of a query until it returns
// errStopRows (which ends the rows without an error) or another error.
func eachRow(ctx context.Context, tx *sql.Tx, scan func(*sql.Rows) error, query string, args ...any) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); errors.Is(err, errStopRows) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return rows.Err()
}

// errStopRows ends eachRow's rows early.
var errStopRows = errors.New("stop reading rows")
