package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
)

// TestAPICallsGoThroughNoProxy: an admin command talking to a daemon on
// another host does not send its request, bearer token included, to the
// proxy that HTTP_PROXY names. The environment's proxy is read once per
// process, so the command runs in a child test process started with it.
func TestAPICallsGoThroughNoProxy(t *testing.T) {
	if os.Getenv("NOMARR_TEST_PROXY_CHILD") != "" {
		run([]string{"workers", "pause", "--http-addr", "nomarr-daemon.invalid:8356", "--api-token", "secret",
			"--data-dir", t.TempDir()}, io.Discard, io.Discard)
		return
	}
	var got atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		t.Logf("the proxy got %s %s with Authorization %q", r.Method, r.URL, r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer proxy.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAPICallsGoThroughNoProxy$", "-test.count=1")
	cmd.Env = append(os.Environ(), "NOMARR_TEST_PROXY_CHILD=1", "HTTP_PROXY="+proxy.URL, "http_proxy="+proxy.URL, "NO_PROXY=", "no_proxy=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if n := got.Load(); n != 0 {
		t.Errorf("%d admin requests went to the HTTP_PROXY", n)
	}
}
