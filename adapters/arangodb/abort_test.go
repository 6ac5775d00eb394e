package arangodb

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/arangodb/go-driver/v2/arangodb"
)

// An abort the server refuses because the transaction is still running a
// query (the client gave up on it) is tried again until it lands: a
// transaction left open holds its documents' locks until it idles out
// (60 s), longer than a lease, and every renewal would meet a conflict.
func TestAbortRetriedWhileTheTransactionIsInUse(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f)
	var aborts atomic.Int32
	f.setHook(func(route, aql string) *fakeErr {
		if strings.HasPrefix(route, "DELETE ") && strings.Contains(route, "/_api/transaction/") {
			if aborts.Add(1) <= 2 {
				return &fakeErr{500, errTxInUse, "transaction '1' is already in use"}
			}
		}
		return nil
	})
	boom := errors.New("boom")
	err := s.withTx(context.Background(), []string{colFiles}, func(context.Context, arangodb.Transaction) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("withTx = %v, want the function's error", err)
	}
	if n := aborts.Load(); n != 3 {
		t.Fatalf("%d abort requests, want 3 (two refused as in use, then done)", n)
	}
	f.wantNoTx(t)
}
