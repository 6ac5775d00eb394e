package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// DefaultAddr is where the API listens unless told otherwise (docs/design.md §11).
const DefaultAddr = "127.0.0.1:8356"

// ShutdownTimeout bounds the graceful shutdown of ListenAndServe.
const ShutdownTimeout = 5 * time.Second

// Options configures a Server.
type Options struct {
	// Addr is the listen address, host:port. Empty: DefaultAddr. Port 0
	// picks a free port (see Server.Addr).
	Addr string
	// Token is the API token (config key `api_token`). Mandatory when Addr
	// is not a loopback address. See the package doc for what it guards.
	Token string
	// Logger receives request logs (debug) and server errors. Nil: discard.
	Logger *slog.Logger
	// Version is exported as nomarr_build_info{version} and fills
	// Info.Version when the backend leaves it empty.
	Version string
}

// Server is the HTTP API. Create it with New.
type Server struct {
	b        Backend
	addr     string
	loopback bool
	token    bool     // a token is configured
	tokenSum [32]byte // sha256 of the token
	log      *slog.Logger
	version  string
	cop      *http.CrossOriginProtection
	audio    *audioSigner
	mux      *http.ServeMux
	handler  http.Handler

	mu       sync.Mutex
	listener net.Listener
	started  bool
}

// New checks opt and builds the server; it does not listen yet.
func New(b Backend, opt Options) (*Server, error) {
	if b == nil {
		return nil, errors.New("httpapi: nil Backend")
	}
	addr := opt.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("httpapi: bad listen address %q: %w", addr, err)
	}
	if opt.Token != "" && strings.TrimSpace(opt.Token) != opt.Token {
		return nil, errors.New("httpapi: api_token must not start or end with white space")
	}
	loop := isLoopbackHost(host)
	if !loop && opt.Token == "" {
		return nil, fmt.Errorf("httpapi: refusing to listen on non-loopback address %q without an API token: "+
			"set api_token or bind to 127.0.0.1", addr)
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		b:        b,
		addr:     addr,
		loopback: loop,
		token:    opt.Token != "",
		tokenSum: sha256.Sum256([]byte(opt.Token)),
		log:      log,
		version:  opt.Version,
		cop:      http.NewCrossOriginProtection(),
		audio:    newAudioSigner(),
		mux:      http.NewServeMux(),
	}
	if err := s.routes(); err != nil {
		return nil, err
	}
	s.handler = s.logRequests(s.checkHost(http.HandlerFunc(s.serve)))
	return s, nil
}

// isLoopbackHost reports whether a listen host only accepts local
// connections. Host names other than "localhost" are not trusted: they may
// resolve to anything.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if i := strings.IndexByte(host, '%'); i >= 0 { // fe80::1%eth0
		host = host[:i]
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler is the whole API (routing, access rules, request logging); use it
// to mount the API elsewhere or in tests.
func (s *Server) Handler() http.Handler { return s.handler }

// Addr is the address actually listened on once ListenAndServe has bound
// its socket (useful with port 0); "" before that.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return ""
	}
	return s.listener.Addr().String()
}

// Listen binds Options.Addr without serving yet, so that a caller can
// fail before starting anything else when the address is taken; Addr
// reports the bound address from then on. ListenAndServe serves on this
// socket. Listen may be called once, and only before ListenAndServe.
func (s *Server) Listen(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.listener != nil {
		return errors.New("httpapi: Listen called after Listen or ListenAndServe")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("httpapi: listen on %s: %w", s.addr, err)
	}
	s.listener = ln
	return nil
}

// ListenAndServe serves on the socket bound by Listen, binding
// Options.Addr first if Listen was not called, until ctx ends, then shuts
// down gracefully: in-flight requests get ShutdownTimeout to finish before
// their connections are closed. It returns nil after a shutdown caused by
// ctx, or the error that stopped it; the socket is closed either way. It
// may be called once.
func (s *Server) ListenAndServe(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("httpapi: ListenAndServe called twice")
	}
	s.started = true
	ln := s.listener
	s.mu.Unlock()
	if ctx.Err() != nil { // stopped before it started
		if ln != nil {
			_ = ln.Close()
		}
		return nil
	}
	if ln == nil {
		var lc net.ListenConfig
		var err error
		if ln, err = lc.Listen(ctx, "tcp", s.addr); err != nil {
			return fmt.Errorf("httpapi: listen on %s: %w", s.addr, err)
		}
		s.mu.Lock()
		s.listener = ln
		s.mu.Unlock()
	}

	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	s.log.Info("http api listening", "addr", ln.Addr().String(), "loopback", s.loopback, "token", s.token)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	select {
	case err := <-errc: // Serve failed on its own
		return fmt.Errorf("httpapi: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	serr := srv.Shutdown(sctx)
	if serr != nil {
		s.log.Warn("http api: graceful shutdown incomplete, closing connections", "err", serr)
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("httpapi: serve: %w", err)
	}
	s.log.Info("http api stopped")
	return nil
}

// access is what a route needs from the caller.
type access int

const (
	public access = iota // no data: always open
	read                 // GET: open on loopback, token elsewhere
	admin                // POST: token whenever one is configured
	// audio is read, or a signed URL of the route's {key}
	// (audioSigner): the audio preview's <audio> element sends no token.
	audio
)

func (s *Server) routes() error {
	m, err := newMetricsHandler(s)
	if err != nil {
		return err
	}
	handle := func(pattern string, a access, h http.HandlerFunc) {
		s.mux.Handle(pattern, s.guard(a, h))
	}
	for _, p := range uiPages {
		handle("GET "+p, public, s.handlePage)
	}
	handle("GET /ui/{name}", public, s.handleAsset)
	handle("GET /api/v1/library", read, s.handleLibrary)
	handle("GET /api/v1/files/{key}", read, s.handleFile)
	handle("GET /api/v1/files/{key}/audio", audio, s.handleAudio)
	handle("GET /api/v1/files/{key}/audio-url", read, s.handleAudioURL)
	handle("POST /api/v1/playlists", admin, s.handleSavePlaylist)
	handle("GET /api/v1/insights", read, s.handleInsights)
	handle("GET /api/v1/info", read, s.handleInfo)
	handle("GET /api/v1/health/history", read, s.handleHistory)
	handle("GET /metrics", read, m.ServeHTTP)
	handle("POST /api/v1/workers/pause", admin, s.handleSetEnabled(false))
	handle("POST /api/v1/workers/resume", admin, s.handleSetEnabled(true))
	handle("POST /api/v1/workers/reset", admin, s.handleReset)
	handle("POST /api/v1/workers/{id}/reset", admin, s.handleReset)
	s.similarRoutes(handle)
	return nil
}

// serve routes r, answering unknown routes (404) and wrong methods (405,
// with the Allow header ServeMux computes) in JSON instead of ServeMux's
// plain text.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	c := &capture{header: make(http.Header)}
	h.ServeHTTP(c, r)
	if allow := c.header.Get("Allow"); allow != "" {
		w.Header().Set("Allow", allow)
	}
	code := c.code
	if code == 0 {
		code = http.StatusNotFound
	}
	msg := "not found"
	if code == http.StatusMethodNotAllowed {
		msg = "method " + r.Method + " not allowed"
	}
	writeError(w, code, msg)
}

// capture records what ServeMux's own 404/405 handlers would answer.
type capture struct {
	header http.Header
	code   int
}

func (c *capture) Header() http.Header { return c.header }
func (c *capture) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
}
func (c *capture) Write(p []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return len(p), nil
}

// guard applies the access rules of the package doc.
func (s *Server) guard(a access, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a == admin {
			if err := s.cop.Check(r); err != nil {
				writeError(w, http.StatusForbidden, "cross-origin request refused")
				return
			}
		}
		if a == audio && s.audio.valid(r, r.PathValue("key")) {
			h(w, r)
			return
		}
		need := s.token && (a == admin || (a != public && !s.loopback))
		if need && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="nomarr"`)
			writeError(w, http.StatusUnauthorized, "missing or invalid API token (Authorization: Bearer <api_token>)")
			return
		}
		h(w, r)
	})
}

// authorized checks the bearer token in constant time (hashes first, so
// the comparison does not even leak the token's length).
func (s *Server) authorized(r *http.Request) bool {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(cred)))
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

// logRequests logs each request at debug level. It never logs headers.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.log.Enabled(r.Context(), slog.LevelDebug) {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		rw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		if rw.code == 0 {
			rw.code = http.StatusOK
		}
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "http request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.String("query", redactQuery(r.URL.RawQuery)),
			slog.Int("status", rw.code),
			slog.Int64("bytes", rw.n),
			slog.Duration("duration", time.Since(start)),
			slog.String("remote", r.RemoteAddr),
		)
	})
}

// redactQuery is a query as the request log writes it: an audio URL's
// signature left out.
func redactQuery(raw string) string {
	if !strings.Contains(raw, "sig=") {
		return raw
	}
	v, err := url.ParseQuery(raw)
	if err != nil {
		return "(unparsed query, not logged)"
	}
	v.Set("sig", "REDACTED")
	return v.Encode()
}

// statusWriter remembers the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	code int
	n    int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes flushes through (promhttp may flush).
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
