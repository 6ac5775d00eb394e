// Package httpapi is the HTTP surface of `nomarr serve` (docs/design.md §11): a JSON
// API, the Prometheus endpoint and a small dashboard. It only translates HTTP
// into calls on a Backend; it decides nothing.
//
// # Endpoints
//
//	GET  /, /library, /track, /insights, /playlists, /health
//	                                    the pages (ui/index.html, no data in it)
//	GET  /ui/{name}                     the pages' scripts and styles (embedded)
//	GET  /api/v1/library?q=&status=&…   one page of files (LibraryBackend)
//	GET  /api/v1/files/{key}            one file, its tags and scores
//	GET  /api/v1/files/{key}/audio      the file's audio (Range requests)
//	GET  /api/v1/insights               score histograms, mood and genre counts
//	GET  /api/v1/info                   Backend.Info
//	GET  /api/v1/health/history?limit=N Backend.History (default 100, 1..10000)
//	GET  /metrics                       Prometheus exposition
//	POST /api/v1/workers/pause          Backend.SetEnabled(false)
//	POST /api/v1/workers/resume         Backend.SetEnabled(true)
//	POST /api/v1/workers/reset          Backend.Reset("") (every failed component)
//	POST /api/v1/workers/{id}/reset     Backend.Reset(id)
//
// Every answer but the pages, their assets, audio and /metrics is JSON; errors are
// {"error": "..."} with a matching status: 400 bad query, 401 missing or
// wrong token, 403 cross-origin browser POST, 421 a Host header that is not
// a loopback name on a loopback-bound server, 404 unknown route or a backend
// error wrapping ErrNotFound, 405 wrong method (with Allow), 503 a backend
// error wrapping ErrUnavailable, 500 any other backend error (its text is
// logged, not sent: store errors can carry connection strings).
//
// # Access rules
//
// The rules depend on the address the server is bound to (Options.Addr),
// not on the client's address:
//
//   - Loopback (127.0.0.0/8, ::1, "localhost"): reads (GET, HEAD) are open.
//     Admin calls (POST) are open when no token is configured and need
//     `Authorization: Bearer <api_token>` when one is.
//   - Anything else (a LAN address, 0.0.0.0, ::, an empty host, a host name):
//     New refuses to start without a token (config key `api_token`), and
//     every route needs the token, /metrics included (Prometheus:
//     `authorization: {credentials: ...}`). The exceptions are the pages and
//     their assets, which hold no data: their script asks for the token
//     when the API answers 401 and keeps it in sessionStorage. (The audio
//     preview cannot send the token: there it plays on loopback only.)
//
// Tokens are compared in constant time. POSTs from a browser on another
// origin (Sec-Fetch-Site / Origin, see net/http.CrossOriginProtection) are
// refused with 403 whatever the token, so a web page cannot pause the
// workers of a token-less loopback instance. On a loopback address every
// request whose Host header is not "localhost" or a loopback IP literal
// (any port) is refused with 421 before routing: a page on a DNS-rebinding
// name re-pointed at 127.0.0.1 is "same-origin" to the browser, but still
// sends its own name as Host, so it can neither read nor pause the
// instance. Requests are logged at debug level (method, path, status, size,
// duration, remote address); headers, and so the Authorization header, are
// never logged.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
)

// Sentinel errors a Backend may wrap (fmt.Errorf("...: %w", ErrNotFound)) to
// choose the HTTP status.
var (
	// ErrNotFound: the component named in a reset is unknown → 404.
	ErrNotFound = errors.New("not found")
	// ErrUnavailable: the store (or another dependency) is down → 503.
	ErrUnavailable = errors.New("unavailable")
)

// WorkerInfo is one worker as the API shows it.
type WorkerInfo struct {
	Component  string `json:"component"`
	Status     string `json:"status"` // pending | healthy | unhealthy | failed
	Phase      string `json:"phase,omitempty"`
	CurrentJob string `json:"current_job,omitempty"`
	// CurrentPath is the path of the current job's file (CurrentJob is its
	// key), when the store could tell.
	CurrentPath     string    `json:"current_path,omitempty"`
	PID             int       `json:"pid,omitempty"`
	Restarts        int       `json:"restarts"`
	LastFrameAgeMs  int64     `json:"last_frame_age_ms"` // -1: no frame yet
	FailureReason   string    `json:"failure_reason,omitempty"`
	RestartAt       time.Time `json:"restart_at,omitzero"`
	FilesProcessed  int64     `json:"files_processed"`
	Errors          int64     `json:"errors"`
	ClaimConflicts  int64     `json:"claim_conflicts"`
	AvgProcessingMs float64   `json:"avg_processing_ms"`
	FramesDropped   int       `json:"frames_dropped"`
	// Kills counts the supervisor's kills of the worker's processes since
	// the main process started, by cause ("hang", "stall", …, every cause
	// the core names, 0 included); Deaths the ends of its processes the
	// supervisor handled (crashes, exits, kills, a stop's exits). Unlike
	// Restarts (the restart policy's persisted count, which resets after
	// a healthy run) they only go up, and start at 0 with the process.
	Kills  map[string]int64 `json:"kills,omitempty"`
	Deaths int64            `json:"deaths"`
}

// Info is the body of GET /api/v1/info.
//
// On the wire Library is {"total","tagged","failed","pending","claimed"}
// (see MarshalJSON; store.Counts has no JSON tags, and encoding/json's
// case-insensitive field matching decodes it back into store.Counts).
type Info struct {
	Instance string `json:"instance"`
	// Node is the answering main process's node name (its instance id
	// begins with it), so a client asking about another node can tell.
	Node          string       `json:"node,omitempty"`
	Version       string       `json:"version"`
	Store         string       `json:"store"` // redacted: never a password
	WorkerEnabled bool         `json:"worker_enabled"`
	Workers       []WorkerInfo `json:"workers"`
	Library       store.Counts `json:"library"`
	// ModelSets are the hosts' model-set records as this host sees them;
	// nil (left out) when no host has recorded one, or when the store
	// could not be read (StoreError).
	ModelSets *ModelSetsInfo `json:"model_sets,omitempty"`
	// StoreError says why Library and WorkerEnabled are unknown (zeros):
	// a store read for this answer failed (the store is unreachable).
	StoreError string `json:"store_error,omitempty"`
	// StoreWritesFailing is set while the main process's last store write
	// failed: the store may answer reads (Library is then known) and still
	// refuse every write (another process holds the SQLite write lock, the
	// disk is full, the database file was replaced).
	StoreWritesFailing *StoreWriteFailure `json:"store_writes_failing,omitempty"`
	// StoreCorrupt is set once a store call of the main process or a read
	// for this API found the database damaged (store.ErrCorrupt): no retry
	// mends it, so it stays set until the main process stops; its Error
	// says how to repair the file.
	StoreCorrupt *StoreCorruption `json:"store_corrupt,omitempty"`
	// StoreErrors counts the main process's store calls that failed as a
	// store fault since it started, by operation (e.g. "renew_leases");
	// left out until one failed.
	StoreErrors map[string]int64 `json:"store_errors,omitempty"`
	// FilesQuarantined counts the files the main process quarantined as
	// poison (a worker holding them died once too often) since it
	// started.
	FilesQuarantined int64 `json:"files_quarantined"`
	// ClaimsReleased counts the claims the main process removed since it
	// started, by cause: "worker_died" (a dead worker's), "lease_expired"
	// and "not_work" (the claim cleanup's: a lease that ran out, a file
	// no longer work), every cause 0 included. The workers' own releases
	// are not in it.
	ClaimsReleased map[string]int64 `json:"claims_released,omitempty"`
	// ClockOffsetMs is the main process's last measurement of its host's
	// clock against the store server's (core/clockskew): the server's
	// minus this host's, positive when this host's clock is behind;
	// ClockUncertaintyMs how far off that may be (half the round trip),
	// and ClockSkew the verdict: ok, warn, dangerous or unknown (the
	// answer came too slowly to tell); ClockMeasuredAt when, by this
	// host's clock (the reading stands while the store does not answer).
	// All four are left out when the store has no server clock (SQLite)
	// or has not answered yet.
	ClockOffsetMs      *int64     `json:"clock_offset_ms,omitempty"`
	ClockUncertaintyMs *int64     `json:"clock_uncertainty_ms,omitempty"`
	ClockSkew          string     `json:"clock_skew,omitempty"`
	ClockMeasuredAt    *time.Time `json:"clock_measured_at,omitempty"`
	// Jobs counts the work other than tagging still to do; left out when
	// the host's model set is unknown or the store could not count it.
	Jobs *JobsInfo `json:"jobs,omitempty"`
}

// JobsInfo counts the work other than tagging (store.JobCounts): the
// files marked for a retag (`nomarr retag`), and the files tagged by
// ModelSet, the host's model set, without a track vector of it (the
// backfill makes them).
type JobsInfo struct {
	ModelSet       string `json:"model_set"`
	Retag          int    `json:"retag"`
	VectorsMissing int    `json:"vectors_missing"`
}

// StoreWriteFailure is a run of failed store writes of the main process:
// since the first failed, with the last one's operation and error.
type StoreWriteFailure struct {
	Since time.Time `json:"since"`
	Op    string    `json:"op"`
	Error string    `json:"error"`
}

// StoreCorruption is the first store call that found the database
// damaged.
type StoreCorruption struct {
	Since time.Time `json:"since"`
	Op    string    `json:"op"`
	Error string    `json:"error"`
}

// ModelSetsInfo is the hosts' model-set records (meta
// inventory.ModelSetsKey) as one host sees them (inventory.ModelSetReport):
// each host's version and age, and whether the re-tagging of files tagged
// by other models is held back, by which hosts and until when.
type ModelSetsInfo struct {
	Node    string `json:"node"`              // the host the answer is for
	Version string `json:"version,omitempty"` // its own record's, when that counts
	// Hosts are every record, by node name.
	Hosts []ModelSetHost `json:"hosts"`
	// HeldBack: the records that count name more than one version, so no
	// host's scan sends files back to work.
	HeldBack bool `json:"held_back"`
	// HeldBy are the hosts whose records hold Node back (another version
	// than Version); HeldUntil is when the last of their records lapses
	// if they stop writing them.
	HeldBy    []string  `json:"held_by,omitempty"`
	HeldUntil time.Time `json:"held_until,omitzero"`
}

// ModelSetHost is one host's model-set record.
type ModelSetHost struct {
	Node       string    `json:"node"`
	Version    string    `json:"version"`
	RecordedAt time.Time `json:"recorded_at"`
	AgeMs      int64     `json:"age_ms"` // negative: the host's clock is ahead
	// Counts: within inventory.ModelSetFresh, so scans take it into
	// account; LapsesAt is when it stops counting unless written again.
	Counts   bool      `json:"counts"`
	LapsesAt time.Time `json:"lapses_at"`
	// Renewing: written within inventory.ModelSetRenew, as a host that
	// still runs serve or tag writes it.
	Renewing bool `json:"renewing"`
}

// NewModelSetsInfo is the wire form of r; nil when r has no record.
func NewModelSetsInfo(r inventory.ModelSetReport) *ModelSetsInfo {
	if len(r.Hosts) == 0 {
		return nil
	}
	out := &ModelSetsInfo{Node: r.Node, Version: r.Version, HeldBack: r.HeldBack, HeldBy: r.HeldBy}
	if !r.HeldUntil.IsZero() {
		out.HeldUntil = r.HeldUntil.UTC()
	}
	for _, h := range r.Hosts {
		out.Hosts = append(out.Hosts, ModelSetHost{Node: h.Node, Version: h.Version, RecordedAt: time.UnixMilli(h.AtMs).UTC(),
			AgeMs: h.Age.Milliseconds(), Counts: h.Counts, LapsesAt: h.LapsesAt.UTC(), Renewing: h.Renewing})
	}
	return out
}

// libraryJSON is store.Counts with snake_case keys.
type libraryJSON struct {
	Total   int `json:"total"`
	Tagged  int `json:"tagged"`
	Failed  int `json:"failed"`
	Pending int `json:"pending"`
	Claimed int `json:"claimed"`
	Invalid int `json:"invalid"` // derived: store.Counts.Invalid
}

// MarshalJSON writes Library with lower-case keys and Workers as [] rather
// than null when empty.
func (i Info) MarshalJSON() ([]byte, error) {
	type plain Info // no methods: no recursion
	p := plain(i)
	if p.Workers == nil {
		p.Workers = []WorkerInfo{}
	}
	c := i.Library
	return json.Marshal(struct {
		plain
		Library libraryJSON `json:"library"` // shallower: wins over plain.Library
	}{p, libraryJSON{c.Total, c.Tagged, c.Failed, c.Pending, c.Claimed, c.Invalid()}})
}

// historyRowJSON is the wire form of store.HistoryRow.
type historyRowJSON struct {
	At        time.Time `json:"at"`
	Instance  string    `json:"instance"`
	Component string    `json:"component"`
	Status    string    `json:"status"`
}

// Backend is what the API needs from the running main process. Every method
// must be safe for concurrent use.
type Backend interface {
	Info(ctx context.Context) (Info, error)
	// SetEnabled pauses (false) or resumes (true) every worker sharing the store.
	SetEnabled(ctx context.Context, enabled bool) error
	// Reset manually resets one component, or every failed one when id is "".
	// An unknown id should give an error wrapping ErrNotFound.
	Reset(ctx context.Context, id string) error
	// History returns the newest health-history rows (at most limit),
	// oldest first.
	History(ctx context.Context, limit int) ([]store.HistoryRow, error)
}
