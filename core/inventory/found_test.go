package inventory

import (
	"testing"

	"github.com/nomarr/nomarr/core/store"
)

// Found sums the batches' answers, each kind into its own count.
func TestFoundAdd(t *testing.T) {
	var f Found
	f.Add(store.Upserted{Inserted: 1000})
	f.Add(store.Upserted{Inserted: 2, Changed: 3, Returned: 4, Unchanged: 991})
	f.Add(store.Upserted{Changed: 1, Unchanged: 203})
	if want := (Found{New: 1002, Changed: 4, Back: 4, Unchanged: 1194}); f != want || f.Files() != 2204 {
		t.Fatalf("Found = %+v (%d files), want %+v (2204)", f, f.Files(), want)
	}
}
