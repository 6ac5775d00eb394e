package sqlite

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// undoVersion5 brings a closed database of schema version 5 back to
// version 4's layout (the version number aside).
var undoVersion5 = []string{
	`DROP INDEX library_files_retag`,
	`DROP INDEX library_files_tagged`,
	`ALTER TABLE library_files DROP COLUMN needs_retag`,
	`ALTER TABLE worker_claims DROP COLUMN kind`,
}

// undoVersion4 brings a closed database of schema version 4 (undone from
// 5) back to version 3's layout: no vectors, nor what keeps their jobs.
var undoVersion4 = append(slices.Clone(undoVectorMissing), `DROP TABLE track_vectors`)

// A database of schema version 4 is upgraded when it is opened for
// writing: its files, tags and claims stay (a claim made before kinds is
// a tagging's), it is laid out as a new database, and takes retags.
func TestSchemaVersion4IsUpgraded(t *testing.T) {
	path := tempDB(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "a", "b")
	tagT(t, s, "b", store.Completion{Tags: map[string]string{"mood": "happy"}, Version: "v1", At: t0})
	if _, err := s.Claim(bg, claim("a", "i/w0", t0, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	execAll(t, path, append(undoVersion5, `UPDATE meta SET value = '4' WHERE key = '`+MetaSchemaVersion+`'`)...)

	s = openUpgraded(t, path, 4)
	if gone, err := s.CleanupClaims(bg, t0); err != nil || len(gone) != 0 {
		t.Fatalf("CleanupClaims after the upgrade = %+v, %v; a's claim is a tagging's and live", gone, err)
	}
	if n, err := s.MarkRetag(bg, []string{"a", "b"}, "v1"); err != nil || n != 1 {
		t.Fatalf("MarkRetag after the upgrade = %d, %v; want 1 (b)", n, err)
	}
	if fs, err := s.DiscoverRetag(bg, t0, "", 0); err != nil || len(fs) != 1 || fs[0].Key != "b" {
		t.Fatalf("DiscoverRetag after the upgrade = %+v, %v", fs, err)
	}
}

// The discoveries of retags and vectors, and their counts, are index
// range scans: their cost follows the files they look at, not the
// library. With vector_missing, the look and the count read its index in
// order and probe library_files by key, never walk it.
func TestJobDiscoveryUsesIndexes(t *testing.T) {
	s := openT(t, tempDB(t))
	for _, tc := range []struct {
		q    string
		args []any
		want string
		not  []string // what the plan must not hold
	}{
		{readSQL[sDiscoverRetag], []any{"", ms(t0), 8}, "library_files USING INDEX library_files_retag (key>?)", nil},
		{readSQL[sNeedsVector], []any{"v1", "", ms(t0), 8}, "library_files USING INDEX library_files_tagged (tagged_version=? AND key>?)", nil},
		{readSQL[sCountRetag], nil, "library_files USING INDEX library_files_retag", nil},
		{readSQL[sCountVector], []any{"v1"}, "library_files USING INDEX library_files_tagged (tagged_version=?)", nil},
		{qNeedsVectorMissing, []any{"v1", "", ms(t0), 8}, "INDEX vector_missing_model_set (model_set=?", []string{"TEMP B-TREE", "SCAN library_files"}},
		{qCountVectorMissing, []any{"v1"}, "INDEX vector_missing_model_set (model_set=?", []string{"SCAN library_files"}},
	} {
		plan := queryPlan(t, s.r, tc.q, tc.args...)
		if !strings.Contains(plan, tc.want) {
			t.Errorf("plan of %.60q does not use %q:\n%s", tc.q, tc.want, plan)
		}
		for _, n := range tc.not {
			if strings.Contains(plan, n) {
				t.Errorf("plan of %.60q holds %q:\n%s", tc.q, n, plan)
			}
		}
		// A vector is looked for in the covering index of model set and
		// key, not through the table's rows (800-byte vectors).
		if strings.Contains(tc.q, "track_vectors") && !strings.Contains(plan, "COVERING INDEX track_vectors_model_set (model_set=? AND file_key=?)") {
			t.Errorf("plan of %.60q probes the vectors without their covering index:\n%s", tc.q, plan)
		}
	}
}
