package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// History limits of GET /api/v1/health/history.
const (
	DefaultHistoryLimit = 100
	MaxHistoryLimit     = 10000
)

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	info, err := s.info(r)
	if err != nil {
		s.backendError(w, r, "info", err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// info is Backend.Info with Version filled from Options when empty.
func (s *Server) info(r *http.Request) (Info, error) {
	info, err := s.b.Info(r.Context())
	if err == nil && info.Version == "" {
		info.Version = s.version
	}
	return info, err
}

func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	limit := DefaultHistoryLimit
	if q := r.URL.Query(); q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > MaxHistoryLimit {
			writeError(w, http.StatusBadRequest, "limit must be an integer from 1 to "+strconv.Itoa(MaxHistoryLimit))
			return
		}
		limit = n
	}
	rows, err := s.b.History(r.Context(), limit)
	if err != nil {
		s.backendError(w, r, "history", err)
		return
	}
	if len(rows) > limit { // never more than asked for
		rows = rows[:limit]
	}
	out := make([]historyRowJSON, len(rows))
	for i, row := range rows {
		out[i] = historyRowJSON{At: row.At, Instance: row.Instance, Component: row.Component, Status: row.Status}
	}
	writeJSON(w, http.StatusOK, struct {
		History []historyRowJSON `json:"history"`
	}{out})
}

func (s *Server) handleSetEnabled(enabled bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.b.SetEnabled(r.Context(), enabled); err != nil {
			s.backendError(w, r, "set enabled", err)
			return
		}
		msg := "http api: workers paused"
		if enabled {
			msg = "http api: workers resumed"
		}
		s.log.Info(msg, "remote", r.RemoteAddr)
		writeJSON(w, http.StatusOK, struct {
			WorkerEnabled bool `json:"worker_enabled"`
		}{enabled})
	}
}

// handleReset serves both reset routes: without {id} it resets every
// failed component (answer {"reset": "failed"}), with it that one
// component (answer {"reset": id}).
func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.b.Reset(r.Context(), id); err != nil {
		s.backendError(w, r, "reset", err)
		return
	}
	what := id
	if what == "" {
		what = "failed"
	}
	s.log.Info("http api: reset", "component", what, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, struct {
		Reset string `json:"reset"`
	}{what})
}

// backendError maps a Backend error to a status. ErrNotFound and
// ErrUnavailable carry their text to the client; anything else is logged
// and answered with a generic 500.
func (s *Server) backendError(w http.ResponseWriter, r *http.Request, op string, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		if r.Context().Err() == nil {
			s.log.Error("http api: backend failed", "op", op, "path", r.URL.Path, "err", err)
		}
		writeError(w, http.StatusInternalServerError, op+" failed: internal error (see server log)")
	}
}

// writeJSON encodes v first so that an encoding failure is still a clean 500.
func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"cannot encode response"}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}
