package httpapi

import (
	"net"
	"net/http"
	"strconv"
	"strings"
)

// checkHost refuses, on a loopback-bound server, every request whose Host
// header does not name this machine's loopback interface: "localhost", a
// loopback IP literal (127.0.0.0/8, ::1), in any case and with any port.
// This closes DNS rebinding: a page on attacker.example whose name is
// re-pointed at 127.0.0.1 talks to the API "same-origin", so the browser's
// Origin and Sec-Fetch-Site headers let it through, but its requests still
// carry Host: attacker.example. A missing Host is refused too (browsers
// always send one). On any other bound address the token guards the data
// and the names clients use are unknown, so Host is not checked there.
//
// Refusals are 421 Misdirected Request, for every route, before routing.
func (s *Server) checkHost(next http.Handler) http.Handler {
	if !s.loopback {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopbackName(r.Host) {
			writeError(w, http.StatusMisdirectedRequest,
				"host "+quoteHost(r.Host)+" refused: this API is bound to a loopback address; use localhost or 127.0.0.1")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopbackName reports whether a Host header value (host or host:port)
// names the loopback interface without a DNS lookup.
func isLoopbackName(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") { // [::1] without a port
		host = host[1 : len(host)-1]
	}
	host = strings.TrimSuffix(host, ".") // "localhost." is the same name
	if strings.Contains(host, "%") {     // a zone only makes sense on link-local addresses
		return false
	}
	return host != "" && isLoopbackHost(host)
}

// quoteHost renders a Host header for an error message, quoted and
// bounded in length.
func quoteHost(h string) string {
	const limit = 80
	if len(h) > limit {
		h = h[:limit]
	}
	return strconv.Quote(h)
}
