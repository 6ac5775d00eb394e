package arangodb

import (
	"context"
	"fmt"

	"github.com/nomarr/nomarr/core/store"
)

// fillBatch bounds the file_tags documents one step of fillIndexed reads
// and writes.
const fillBatch = 1000

// qIndexedToFill reads the file_tags documents after the cursor that lack
// their labels or their scores, in key order (primary index), with their
// writes count.
const qIndexedToFill = `FOR d IN file_tags
  FILTER d._key > @after AND (d.labels == null OR d.scores == null)
  SORT d._key
  LIMIT @limit
  RETURN { key: d._key, writes: d.writes, tags: d.tags }`

// qFillIndexed stores each of @docs' labels and scores on its file_tags
// document if the document still has the writes count it was read with
// (a completion since wrote its own with its tags), and returns how many
// it wrote, as one row. The scores replace any the document had
// (mergeObjects false).
const qFillIndexed = `LET n = (FOR x IN @docs
  FOR d IN file_tags
    FILTER d._key == x.key AND d.writes == x.writes
    UPDATE d WITH { labels: x.labels, scores: x.scores } IN file_tags OPTIONS { mergeObjects: false }
    RETURN 1)
RETURN LENGTH(n)`

// fillDoc is a row of qIndexedToFill.
type fillDoc struct {
	Key    string            `json:"key"`
	Writes any               `json:"writes"`
	Tags   map[string]string `json:"tags"`
}

// fillIndexed gives every file_tags document without its labels or its
// scores both (store.Labels and store.Scores of its tags, as qPutTags
// stores them), fillBatch documents a step, in key order, and returns how
// many it wrote. Each step is one read and one conditional write: a
// document rewritten meanwhile keeps the labels and scores written with
// it. Stopped half way, it resumes where it was at its next run (the
// documents still without them); a concurrent run writes the same.
func (s *Store) fillIndexed(ctx context.Context) (int, error) {
	after, filled := "", 0
	for {
		var docs []fillDoc
		err := s.read(ctx, func(ctx context.Context) error {
			var err error
			docs, err = queryAll[fillDoc](ctx, s.db, qIndexedToFill, map[string]any{"after": after, "limit": fillBatch})
			return err
		})
		if err != nil {
			return filled, fmt.Errorf("read the tags without labels or scores after %q: %w", after, err)
		}
		if len(docs) == 0 {
			return filled, nil
		}
		fill := make([]map[string]any, len(docs))
		for i, d := range docs {
			fill[i] = map[string]any{"key": d.Key, "writes": d.Writes, "labels": store.Labels(d.Tags), "scores": store.Scores(d.Tags)}
		}
		var n int
		err = s.write(ctx, alsoGone, func(ctx context.Context) error {
			var err error
			n, err = queryCount(ctx, s.db, qFillIndexed, map[string]any{"docs": fill})
			return err
		})
		if err != nil {
			return filled, fmt.Errorf("store the labels and scores of %d files from %q: %w", len(docs), docs[0].Key, err)
		}
		filled += n
		if len(docs) < fillBatch {
			return filled, nil
		}
		after = docs[len(docs)-1].Key
	}
}
