package driver

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
)

// /api/v1/info counts the retags and the files of the host's model set
// without a track vector, again only once JobsEvery has passed; without
// a model set it leaves them out.
func TestInfoCountsJobs(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewMock()
	mem := memstore.New(1)
	var files []store.File
	for _, k := range []string{"a", "b", "c"} {
		files = append(files, store.File{Key: k, IsValid: true, Tagged: true, TaggedVersion: "v1"})
	}
	if _, err := mem.UpsertFiles(ctx, files); err != nil {
		t.Fatal(err)
	}
	if err := mem.PutTrackVector(ctx, "a", "v1", []float32{1}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.MarkRetag(ctx, []string{"c"}, "v1"); err != nil {
		t.Fatal(err)
	}
	m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), mem, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m.publish(clk.Now())
	if info, err := (&API{Main: m}).Info(ctx); err != nil || info.Jobs != nil {
		t.Fatalf("Info without a model set: jobs %+v, %v; want none", info.Jobs, err)
	}
	api := &API{Main: m, ModelSet: func() string { return "v1" }}
	want := func(vectors int) {
		t.Helper()
		info, err := api.Info(ctx)
		if err != nil || info.Jobs == nil || info.Jobs.ModelSet != "v1" || info.Jobs.Retag != 1 || info.Jobs.VectorsMissing != vectors {
			t.Fatalf("jobs = %+v, %v; want 1 retag, %d vectors missing of v1", info.Jobs, err, vectors)
		}
	}
	want(2)
	if err := mem.PutTrackVector(ctx, "b", "v1", []float32{1}); err != nil {
		t.Fatal(err)
	}
	want(2) // counted less than JobsEvery ago
	clk.Add(JobsEvery)
	m.publish(clk.Now())
	want(1)
}
