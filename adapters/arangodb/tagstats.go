package arangodb

import (
	"context"
	"strconv"

	"github.com/nomarr/nomarr/core/store"
)

// qTagStats groups, on the server, what store.TagStats counts of the
// files that have stored tags and still a library_files document: one
// "file" row counting them; a "score" row per score key (store.ScoreKey)
// and bin (store.Bin) counting the files whose score falls there; a
// "label" row per stored label (store.Labels, kept in file_tags.labels)
// counting the files listing it. One pass over file_tags, one probe of
// library_files per document; only the grouped rows travel. A score
// counts when it is a number, or a string in decimal notation
// (@number, scoreNumber): what completions store ("0.9100"); store.Score
// also reads hexadecimal, "Inf", ".5" and the like, which are not counted
// here.
var qTagStats = `FOR d IN file_tags
  FILTER DOCUMENT("library_files", d._key) != null
  LET t = d.tags || {}
  FOR it IN UNION(
      [{kind: "file"}],
      (FOR k IN ATTRIBUTES(t)
        FILTER CONTAINS(k, "_musicnn_") AND LEFT(k, 4) != "not_" AND LEFT(k, 4) != "non_" AND LEFT(k, 7) != "spread_"
        FILTER IS_NUMBER(t[k]) OR (IS_STRING(t[k]) AND REGEX_TEST(t[k], @number))
        RETURN {kind: "score", key: k, bin: MIN([MAX([FLOOR(TO_NUMBER(t[k]) * ` + bins + `), 0]), ` + lastBin + `])}),
      (FOR l IN (IS_ARRAY(d.labels) ? d.labels : []) RETURN {kind: "label", key: l}))
    COLLECT kind = it.kind, key = it.key, bin = it.bin WITH COUNT INTO n
    RETURN {kind, key, bin, n}`

var (
	bins    = strconv.Itoa(store.HistogramBins)
	lastBin = strconv.Itoa(store.HistogramBins - 1)
)

// scoreNumber is the decimal notation of a number, with the spaces
// store.Score trims (ASCII ones), small enough never to overflow a double (at most 20
// digits before the point, an exponent of at most two): every string it
// accepts store.Score reads (TestScoreNumberIsAScore). REGEX_TEST's
// syntax, which Go's regexp shares here.
const scoreNumber = `^[ \t\r\n]*[-+]?[0-9]{1,20}(\.[0-9]+)?([eE][-+]?[0-9]{1,2})?[ \t\r\n]*$`

// statsRow is one grouped row of qTagStats.
type statsRow struct {
	Kind string `json:"kind"`
	Key  string `json:"key"`
	Bin  num64  `json:"bin"`
	N    num64  `json:"n"`
}

// TagStats implements store.Browser: the server groups (qTagStats), the
// rows are summed here.
func (s *Store) TagStats(ctx context.Context) (store.TagStats, error) {
	var rows []statsRow
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		rows, err = queryAll[statsRow](ctx, s.db, qTagStats, map[string]any{"number": scoreNumber})
		return err
	})
	if err != nil {
		return store.TagStats{}, s.fail("tag stats", "", err)
	}
	st := store.NewTagStats()
	for _, r := range rows {
		switch r.Kind {
		case "file":
			st.Files += int(r.N)
		case "score":
			if r.Bin >= 0 && r.Bin < store.HistogramBins {
				st.AddScore(r.Key, (float64(r.Bin)+0.5)/store.HistogramBins, int(r.N))
			}
		case "label":
			st.AddLabel(r.Key, int(r.N))
		}
	}
	return st, nil
}
