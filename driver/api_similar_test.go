package driver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/adapters/httpapi"
)

// An API without a similarity index answers the similarity routes 503,
// each with its reason, and never reaches the main loop.
func TestSimilarityWithoutIndex(t *testing.T) {
	srv, err := httpapi.New(&API{}, httpapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, p := range []string{"/api/v1/similar?file=a", "/api/v1/mix?seed=a", "/api/v1/path?from=a&to=b", "/api/v1/playlists"} {
		res, err := ts.Client().Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var body struct{ Error string }
		if res.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(b, &body) != nil ||
			!strings.Contains(body.Error, "no similarity index on this server") {
			t.Errorf("%s: %d %s", p, res.StatusCode, b)
		}
	}
}
