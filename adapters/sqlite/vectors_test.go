package sqlite

import (
	"slices"
	"testing"

	"github.com/nomarr/nomarr/core/store"
)

// A database of schema version 3 (no track_vectors) is upgraded when it is
// opened for writing: its files and tags stay, it gets the table and its
// index as a new database has them, and takes vectors. Opened read-only
// first, it is refused with what to do.
func TestSchemaVersion3IsUpgraded(t *testing.T) {
	path := tempDB(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "a", "b")
	tagT(t, s, "b", store.Completion{Tags: map[string]string{"mood": "happy"}, Version: "v1", At: t0})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	execAll(t, path, append(slices.Concat(undoVersion5, undoVersion4), `UPDATE meta SET value = '3' WHERE key = '`+MetaSchemaVersion+`'`)...)

	s = openUpgraded(t, path, 3)
	tags, err := s.ListTags(bg, "", 0)
	if err != nil || len(tags) != 1 || tags[0].FileKey != "b" || tags[0].Tags["mood"] != "happy" || tags[0].Version != "v1" {
		t.Fatalf("ListTags after the upgrade = %+v, %v", tags, err)
	}
	vec := []float32{0.6, 0.8}
	if err := s.PutTrackVector(bg, "b", "v1", vec); err != nil {
		t.Fatal(err)
	}
	got, err := s.TrackVectors(bg, "v1", "", 0)
	if err != nil || len(got) != 1 || !slices.Equal(got[0].Vector, vec) {
		t.Fatalf("TrackVectors after the upgrade = %+v, %v", got, err)
	}
}

// The stored layout is little-endian float32s, whatever the values.
func TestVectorEncodingRoundTrips(t *testing.T) {
	vec := []float32{0, -0.5, 1e-38, 3.4e38, -1}
	b := encodeVector(vec)
	if len(b) != 20 || b[4+3] != 0xbf {
		t.Fatalf("encoded %x", b)
	}
	back, err := decodeVector(b)
	if err != nil || !slices.Equal(back, vec) {
		t.Fatalf("decoded %v, %v", back, err)
	}
	if _, err := decodeVector(b[:7]); err == nil {
		t.Fatal("7 bytes decoded")
	}
}
