package arangodb

import (
	"context"

	"github.com/arangodb/go-driver/v2/arangodb"

	"github.com/nomarr/nomarr/core/store"
)

// Release receipts (store.Receipt) are meta documents under
// store.ReceiptKey, {_key, name, value, at_ms}: no collection of their
// own, so the schema version stays. at_ms (the death's time) is a field of
// its own for qPruneReceipts. They are written only when a worker dies
// holding claims, so they are few, and qPruneReceipts's scan of meta is
// small.

// qPutReceipt writes a worker's receipt, replacing the one of its earlier
// death.
const qPutReceipt = `UPSERT { _key: @key }
  INSERT { _key: @key, name: @name, value: @value, at_ms: @at }
  UPDATE { value: @value, at_ms: @at }
  IN meta
  RETURN 1`

// qPruneReceipts deletes the receipts of deaths before @cutoff. A
// document without a numeric at_ms (not a receipt) is left alone.
const qPruneReceipts = `FOR m IN meta
  FILTER STARTS_WITH(m.name, @prefix) AND IS_NUMBER(m.at_ms) AND m.at_ms < @cutoff
  REMOVE m IN meta`

// replyReleased answers a ReleaseWorker for death that released now (in
// key order), in its transaction tx (meta among its write collections): it
// reads workerID's receipt and writes the one store.Reply leaves, deleting
// the receipts past store.ReceiptKeep. A worker id too long for a document
// key (never one the supervisor makes) keeps no receipt.
func replyReleased(ctx context.Context, tx arangodb.Transaction, workerID string, death store.Death, now []store.Released) ([]store.Released, error) {
	if death.ID == "" {
		return now, nil
	}
	name := store.ReceiptKey(workerID)
	key, err := docKey(name)
	if err != nil {
		return now, nil
	}
	vals, err := queryAll[string](ctx, tx, qGetMeta, map[string]any{"key": key})
	if err != nil {
		return nil, err
	}
	var stored *store.Receipt
	if len(vals) > 0 {
		stored = store.StoredReceipt(vals[0], true)
	}
	out, keep := store.Reply(stored, death, now)
	if keep == nil {
		return out, nil
	}
	prune := map[string]any{"prefix": store.ReceiptPrefix, "cutoff": store.ReceiptCutoff(death.At)}
	if _, err := queryAll[any](ctx, tx, qPruneReceipts, prune); err != nil {
		return nil, err
	}
	put := map[string]any{"key": key, "name": name, "value": keep.Encode(), "at": keep.AtMs}
	if _, err := queryAll[int](ctx, tx, qPutReceipt, put); err != nil {
		return nil, err
	}
	return out, nil
}
