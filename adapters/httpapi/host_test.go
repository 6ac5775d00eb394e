package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLoopbackServerRefusesRebindingHost guards against DNS rebinding: a
// page on rebind.example whose name is re-pointed at 127.0.0.1 sends
// same-origin requests (Origin and Sec-Fetch-Site agree) with Host
// rebind.example. A loopback-bound, token-less server must refuse them on
// every route, reads included, before the backend is reached.
func TestLoopbackServerRefusesRebindingHost(t *testing.T) {
	f := newFake()
	s, err := New(f, Options{Addr: "127.0.0.1:8356"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/workers/pause"},
		{http.MethodPost, "/api/v1/workers/worker:discovery:0/reset"},
		{http.MethodGet, "/api/v1/info"},
		{http.MethodGet, "/api/v1/health/history"},
		{http.MethodGet, "/metrics"},
		{http.MethodGet, "/"},
		{http.MethodGet, "/no/such/route"},
	} {
		for _, host := range []string{"rebind.example:8356", "rebind.example", "127.0.0.1.rebind.example:8356",
			"localhost.rebind.example", "[fe80::1%25lo]:8356", ""} {
			r := httptest.NewRequest(c.method, c.path, nil)
			r.Host = host
			r.Header.Set("Origin", "http://"+host)
			r.Header.Set("Sec-Fetch-Site", "same-origin")
			w := httptest.NewRecorder()
			s.Handler().ServeHTTP(w, r)
			if w.Code != http.StatusMisdirectedRequest {
				t.Errorf("%s %s with Host %q on a loopback server: %d, want 421", c.method, c.path, host, w.Code)
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.enabled) > 0 || len(f.resets) > 0 || f.infoCalls > 0 {
		t.Errorf("the backend was reached: SetEnabled %v, Reset %v, Info calls %d", f.enabled, f.resets, f.infoCalls)
	}
}

// TestLoopbackServerAcceptsLoopbackHosts guards the other side of the Host
// check: every way a local client names the loopback interface still works.
func TestLoopbackServerAcceptsLoopbackHosts(t *testing.T) {
	s, err := New(newFake(), Options{Addr: "127.0.0.1:8356"})
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1:8356", "127.0.0.1", "127.1.2.3:9", "localhost:8356", "LOCALHOST",
		"localhost.:8356", "[::1]:8356", "[::1]"} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/info", nil)
		r.Host = host
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Errorf("GET /api/v1/info with Host %q: %d, want 200", host, w.Code)
		}
	}
}

// TestNonLoopbackServerIgnoresHost guards that the Host check applies to
// loopback-bound servers only: a LAN server is reached under names the
// server cannot know, and its token guards the data.
func TestNonLoopbackServerIgnoresHost(t *testing.T) {
	s, err := New(newFake(), Options{Addr: "0.0.0.0:8356", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/api/v1/info", nil)
	r.Host = "nas.local:8356"
	r.Header.Set("Authorization", "Bearer "+testToken)
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Errorf("GET /api/v1/info with Host nas.local on 0.0.0.0: %d, want 200", w.Code)
	}
}

// TestListenReportsABusyAddressBeforeServing guards the contract `nomarr
// serve` relies on to fail fast: Listen returns the bind error itself, and
// a successful Listen is what ListenAndServe then serves on.
func TestListenReportsABusyAddressBeforeServing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	s, err := New(newFake(), Options{Addr: busy.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(context.Background()); err == nil || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Errorf("Listen on a busy address: %v, want an error naming it", err)
	}

	s, err = New(newFake(), Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(context.Background()); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if addr == "" || strings.HasSuffix(addr, ":0") {
		t.Fatalf("Addr after Listen: %q", addr)
	}
	if err := s.Listen(context.Background()); err == nil {
		t.Error("second Listen accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe(ctx) }()
	res, err := http.Get("http://" + addr + "/api/v1/info")
	if err != nil {
		t.Fatalf("GET on the socket bound by Listen: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET /api/v1/info: %d", res.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe: %v", err)
	}
}
