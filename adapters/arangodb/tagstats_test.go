package arangodb

import (
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/nomarr/nomarr/core/store"
)

// TestScoreNumberIsAScore: every string qTagStats counts as a score
// (scoreNumber) is one store.Score reads, and what completions store is
// counted.
func TestScoreNumberIsAScore(t *testing.T) {
	re := regexp.MustCompile(scoreNumber)
	score := func(v string) bool {
		_, ok := store.Score(map[string]string{"k": v}, "k")
		return ok
	}
	for _, v := range []string{"0.9100", "0", "1", " 0.5 ", "-0.2", "+0.5", "1e-3", "2.5E+01", "99999999999999999999.9e99"} {
		if !re.MatchString(v) || !score(v) {
			t.Errorf("%q: counted %v, a score %v; want both", v, re.MatchString(v), score(v))
		}
	}
	for _, v := range []string{"", "abc", "NaN", "Inf", "0x1p-2", "1_0", "1e400", "1e", "0.5.1", "- 1"} {
		if re.MatchString(v) {
			t.Errorf("%q counted as a score", v)
		}
	}
	rng := rand.New(rand.NewPCG(5, 9))
	const alphabet = "0123456789.eE+- \tx"
	for range 200_000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if v := string(b); re.MatchString(v) && !score(v) {
			t.Fatalf("%q is counted as a score, store.Score refuses it", v)
		}
	}
}
