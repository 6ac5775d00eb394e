package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"

	"github.com/nomarr/nomarr/core/store"
)

// A query with a label filter and another filter (a second label, a
// score range) is answered from key sets: each filter's keys read from
// its covering index (browse_labels_label, browse_scores_value) in one
// range scan, intersected here; no row is probed per match. The first
// label's set carries the status filter (its rows hold the status).

// setPlan reports whether q is answered from key sets (q normalized).
func setPlan(q store.BrowseQuery) bool {
	n := len(labelsOf(q))
	return q.Text == "" && n > 0 && n+len(q.Scores) >= 2
}

// scanKeys reads the first column of a query's rows, calling keep for
// each; keep returns false to stop.
func scanKeys(ctx context.Context, tx *sql.Tx, keep func(string) bool, query string, args ...any) error {
	return eachRow(ctx, tx, func(rows *sql.Rows) error {
		var k string
		if err := rows.Scan(&k); err != nil {
			return err
		}
		if !keep(k) {
			return errStopRows
		}
		return nil
	}, query, args...)
}

// matchSet is the set of keys matching q (setPlan).
func matchSet(ctx context.Context, tx *sql.Tx, q store.BrowseQuery) (map[string]bool, error) {
	labels := labelsOf(q)
	set := map[string]bool{}
	first := `SELECT file_key FROM browse_labels INDEXED BY browse_labels_label WHERE label = ?1`
	args := []any{labels[0]}
	if q.Status != "" {
		first += ` AND status = ?2`
		args = append(args, q.Status)
	}
	if err := scanKeys(ctx, tx, func(k string) bool { set[k] = true; return true }, first, args...); err != nil {
		return nil, err
	}
	narrow := func(query string, args ...any) error {
		next := make(map[string]bool, len(set))
		err := scanKeys(ctx, tx, func(k string) bool {
			if set[k] {
				next[k] = true
			}
			return true
		}, query, args...)
		set = next
		return err
	}
	for _, l := range labels[1:] {
		if err := narrow(`SELECT file_key FROM browse_labels INDEXED BY browse_labels_label WHERE label = ?1`, l); err != nil {
			return nil, err
		}
	}
	for _, r := range q.Scores {
		if err := narrow(`SELECT file_key FROM browse_scores INDEXED BY browse_scores_value WHERE key = ?1 AND value >= ?2 AND value <= ?3`,
			r.Key, r.Min, r.Max); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// setKeys reads the keys of q's page from its match set (total its
// size, files the library's): a sort with an index reads it in order,
// keeping the members, when that reads fewer rows than the set holds
// (as browseKeys); otherwise the members are sorted by the database.
func setKeys(ctx context.Context, tx *sql.Tx, q store.BrowseQuery, set map[string]bool, files int) ([]string, error) {
	dir := ""
	if q.Desc {
		dir = " DESC"
	}
	total := len(set)
	end := q.Offset + q.Limit
	score := q.Sort != store.SortPath && q.Sort != store.SortTaggedAt && q.Sort != store.SortStatus
	var keys []string
	skipped := 0
	collect := func(k string) bool {
		if !set[k] {
			return true
		}
		if skipped < q.Offset {
			skipped++
			return true
		}
		keys = append(keys, k)
		return len(keys) < q.Limit
	}
	inOrder := q.Sort != store.SortStatus && int64(end)*int64(files) < int64(total)*int64(total)
	switch {
	case inOrder && !score:
		col := map[string]string{store.SortPath: "path", store.SortTaggedAt: "last_tagged_at"}[q.Sort]
		err := scanKeys(ctx, tx, collect, `SELECT key FROM library_files INDEXED BY `+orderIndex(q.Sort)+
			` ORDER BY `+col+dir+`, key`+dir)
		return keys, err
	case inOrder:
		seen := map[string]bool{}
		err := scanKeys(ctx, tx, func(k string) bool {
			seen[k] = true
			return collect(k)
		}, `SELECT file_key FROM browse_scores INDEXED BY browse_scores_value WHERE key = ?1 ORDER BY value`+dir+`, file_key`+dir, q.Sort)
		if err != nil || len(keys) == q.Limit {
			return keys, err
		}
		// The whole index was read: the members it did not hold have no
		// score, and come last, by key.
		var rest []string
		for k := range set {
			if !seen[k] {
				rest = append(rest, k)
			}
		}
		slices.Sort(rest)
		if q.Desc {
			slices.Reverse(rest)
		}
		for _, k := range rest {
			if !collect(k) {
				break
			}
		}
		return keys, nil
	}
	members := make([]string, 0, total)
	for k := range set {
		members = append(members, k)
	}
	doc, _ := json.Marshal(members)
	var a sqlArgs
	from := ` FROM json_each(` + a.add(string(doc)) + `) AS p CROSS JOIN library_files f ON f.key = p.value`
	if score {
		from += ` LEFT JOIN browse_scores o ON o.file_key = f.key AND o.key = ` + a.add(q.Sort)
	}
	return pageKeys(ctx, tx, `SELECT f.key`+from+` ORDER BY `+orderBy(q), a, q.Limit, q.Offset)
}
