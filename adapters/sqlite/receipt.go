package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/nomarr/nomarr/core/store"
)

// Release receipts (store.Receipt) are meta rows under store.ReceiptKey:
// no table of their own, so the schema stays as it is. They are written
// only when a worker dies holding claims, so they are few.
const (
	sqlReceiptGet = `SELECT value FROM meta WHERE key = ?`
	sqlReceiptPut = `INSERT INTO meta (key, value) VALUES (?1, ?2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`
	// The receipts (a primary-key range: ?2 <= key < ?3) of deaths before
	// ?1. CASE reads at_ms only from a value that is JSON, so a row that
	// is not cannot fail the statement (nor is it deleted).
	sqlReceiptPrune = `DELETE FROM meta WHERE key >= ?2 AND key < ?3
		AND CASE WHEN json_valid(value) THEN json_extract(value, '$.at_ms') END < ?1`
)

// receiptPrefixEnd is the first key after every key with the receipt
// prefix (its last byte, ':', plus one).
var receiptPrefixEnd = store.ReceiptPrefix[:len(store.ReceiptPrefix)-1] + string(store.ReceiptPrefix[len(store.ReceiptPrefix)-1]+1)

// replyReleased answers a ReleaseWorker for death that released now (in
// key order), in its transaction: it reads workerID's receipt and writes
// the one store.Reply leaves, deleting the receipts past store.ReceiptKeep.
func replyReleased(ctx context.Context, tx *sql.Tx, workerID string, death store.Death, now []store.Released) ([]store.Released, error) {
	if death.ID == "" {
		return now, nil
	}
	key := store.ReceiptKey(workerID)
	var v string
	err := tx.QueryRowContext(ctx, sqlReceiptGet, key).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	out, keep := store.Reply(store.StoredReceipt(v, err == nil), death, now)
	if keep == nil {
		return out, nil
	}
	if _, err := tx.ExecContext(ctx, sqlReceiptPrune, store.ReceiptCutoff(death.At), store.ReceiptPrefix, receiptPrefixEnd); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, sqlReceiptPut, key, keep.Encode()); err != nil {
		return nil, err
	}
	return out, nil
}
