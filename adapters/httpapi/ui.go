package httpapi

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// uiFiles are the pages' assets: plain HTML, CSS and JavaScript modules,
// served as they are (no build step, nothing from another site).
//
//go:embed ui
var uiFiles embed.FS

// uiPages are the paths of the pages; each is the shell (ui/index.html),
// whose script draws the page the path names.
var uiPages = []string{"/{$}", "/library", "/track", "/insights", "/playlists", "/health"}

// uiCSP allows the shell's own scripts, styles, API calls and audio, and
// nothing else: no inline script, no other site.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"media-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func uiHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", uiCSP)
}

// handlePage serves the shell of every page; it holds no data.
func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	b, err := uiFiles.ReadFile("ui/index.html")
	if err != nil {
		writeError(w, http.StatusInternalServerError, "page missing from the build")
		return
	}
	uiHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b)
}

// uiTypes are the types of the asset files, whatever the host's MIME
// table says (a module script must be served as JavaScript).
var uiTypes = map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
	".html": "text/html; charset=utf-8", ".svg": "image/svg+xml"}

// handleAsset serves one embedded asset by name (GET /ui/{name}); names
// are looked up in the embedded tree only.
func (s *Server) handleAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if name == "" || strings.Contains(name, "/") || strings.HasPrefix(name, ".") {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	b, err := fs.ReadFile(uiFiles, "ui/"+name)
	if err != nil {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	uiHeaders(w)
	if ct := uiTypes[path.Ext(name)]; ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	_, _ = w.Write(b)
}
