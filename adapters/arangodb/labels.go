package arangodb

import (
	"context"
	"fmt"

	"github.com/nomarr/nomarr/core/store"
)

// labelBatch bounds the file_tags documents one step of fillLabels reads
// and writes.
const labelBatch = 1000

// qLabelsToFill reads the file_tags documents after the cursor that have
// no labels, in key order (primary index), with their writes count.
const qLabelsToFill = `FOR d IN file_tags
  FILTER d._key > @after AND d.labels == null
  SORT d._key
  LIMIT @limit
  RETURN { key: d._key, writes: d.writes, tags: d.tags }`

// qFillLabels stores each of @docs' labels on its file_tags document if
// the document still has the writes count it was read with (a completion
// since wrote its own labels with its tags), and returns how many it
// wrote, as one row.
const qFillLabels = `LET n = (FOR x IN @docs
  FOR d IN file_tags
    FILTER d._key == x.key AND d.writes == x.writes
    UPDATE d WITH { labels: x.labels } IN file_tags
    RETURN 1)
RETURN LENGTH(n)`

// labelDoc is a row of qLabelsToFill.
type labelDoc struct {
	Key    string            `json:"key"`
	Writes any               `json:"writes"`
	Tags   map[string]string `json:"tags"`
}

// fillLabels gives every file_tags document without labels its labels
// (store.Labels of its tags, as qPutTags stores them), labelBatch
// documents a step, in key order, and returns how many it wrote. Each
// step is one read and one conditional write: a document rewritten
// meanwhile keeps the labels written with it. Stopped half way, it
// resumes where it was at its next run (the documents still without
// labels); a concurrent run writes the same labels.
func (s *Store) fillLabels(ctx context.Context) (int, error) {
	after, filled := "", 0
	for {
		var docs []labelDoc
		err := s.read(ctx, func(ctx context.Context) error {
			var err error
			docs, err = queryAll[labelDoc](ctx, s.db, qLabelsToFill, map[string]any{"after": after, "limit": labelBatch})
			return err
		})
		if err != nil {
			return filled, fmt.Errorf("read the tags without labels after %q: %w", after, err)
		}
		if len(docs) == 0 {
			return filled, nil
		}
		fill := make([]map[string]any, len(docs))
		for i, d := range docs {
			fill[i] = map[string]any{"key": d.Key, "writes": d.Writes, "labels": store.Labels(d.Tags)}
		}
		var n int
		err = s.write(ctx, alsoGone, func(ctx context.Context) error {
			var err error
			n, err = queryCount(ctx, s.db, qFillLabels, map[string]any{"docs": fill})
			return err
		})
		if err != nil {
			return filled, fmt.Errorf("store the labels of %d files from %q: %w", len(docs), docs[0].Key, err)
		}
		filled += n
		if len(docs) < labelBatch {
			return filled, nil
		}
		after = docs[len(docs)-1].Key
	}
}
