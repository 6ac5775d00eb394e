package memstore

import (
	"context"
	"maps"
	"slices"

	"github.com/nomarr/nomarr/core/store"
)

// Browse implements store.Browser: every file is tested and the matches
// sorted (the rule itself is store.BrowseMatch and store.BrowseLess).
func (s *Store) Browse(_ context.Context, q store.BrowseQuery) (store.BrowsePage, error) {
	if err := s.op(); err != nil {
		return store.BrowsePage{}, err
	}
	q = q.Normalized()
	var hits []store.BrowseRow
	for _, f := range s.files {
		r := store.BrowseRow{File: *f, Tags: s.tags[f.Key], Info: s.infos[f.Key]}
		if store.BrowseMatch(q, r) {
			hits = append(hits, r)
		}
	}
	slices.SortFunc(hits, func(a, b store.BrowseRow) int {
		switch {
		case store.BrowseLess(q, a, b):
			return -1
		case store.BrowseLess(q, b, a):
			return 1
		}
		return 0
	})
	page := store.BrowsePage{Total: len(hits), Rows: []store.BrowseRow{}}
	if q.Offset < len(hits) {
		hits = hits[q.Offset:]
		page.Rows = hits[:min(len(hits), q.Limit)]
	}
	for i, r := range page.Rows {
		page.Rows[i].Tags = maps.Clone(r.Tags)
		if page.Rows[i].Tags == nil {
			page.Rows[i].Tags = map[string]string{}
		}
	}
	return page, nil
}

// FileTags implements store.Browser.
func (s *Store) FileTags(_ context.Context, key string) (map[string]string, error) {
	if err := s.op(); err != nil {
		return nil, err
	}
	if _, ok := s.index[key]; !ok {
		return nil, store.ErrNotFound
	}
	t := maps.Clone(s.tags[key])
	if t == nil {
		t = map[string]string{}
	}
	return t, nil
}

// TagStats implements store.Browser.
func (s *Store) TagStats(_ context.Context) (store.TagStats, error) {
	if err := s.op(); err != nil {
		return store.TagStats{}, err
	}
	st := store.NewTagStats()
	for _, f := range s.files {
		if t, ok := s.tags[f.Key]; ok {
			st.Add(t)
		}
	}
	return st, nil
}
