package httpapi

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// AudioURLTTL is how long an audio URL issued by GET
// /api/v1/files/{key}/audio-url plays (docs/decisions/audio-preview.md).
const AudioURLTTL = 30 * time.Minute

// audioSigner signs audio URLs: an HMAC-SHA256, under a key drawn at
// the server's start, of the file key and the expiry. A URL plays one
// file's audio until it expires or the server restarts, without the API
// token: an <audio> element cannot send an Authorization header.
type audioSigner struct {
	key [32]byte
	now func() time.Time
}

func newAudioSigner() *audioSigner {
	s := &audioSigner{now: time.Now}
	if _, err := rand.Read(s.key[:]); err != nil {
		panic("httpapi: no randomness for the audio URL key: " + err.Error()) // crypto/rand does not fail on Linux
	}
	return s
}

func (s *audioSigner) sig(fileKey string, exp int64) string {
	m := hmac.New(sha256.New, s.key[:])
	m.Write([]byte("audio\x00" + fileKey + "\x00" + strconv.FormatInt(exp, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

// url is the signed audio URL of fileKey, valid for AudioURLTTL.
func (s *audioSigner) url(fileKey string) (string, time.Time) {
	exp := s.now().Add(AudioURLTTL).Truncate(time.Second)
	v := url.Values{"exp": {strconv.FormatInt(exp.Unix(), 10)}, "sig": {s.sig(fileKey, exp.Unix())}}
	return "/api/v1/files/" + url.PathEscape(fileKey) + "/audio?" + v.Encode(), exp
}

// valid reports whether r carries an unexpired signature of fileKey.
func (s *audioSigner) valid(r *http.Request, fileKey string) bool {
	q := r.URL.Query()
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	if err != nil || s.now().Unix() > exp {
		return false
	}
	want := s.sig(fileKey, exp)
	return hmac.Equal([]byte(q.Get("sig")), []byte(want))
}

// handleAudioURL issues a signed audio URL for a file the store knows
// (read access: the token where one is needed).
func (s *Server) handleAudioURL(w http.ResponseWriter, r *http.Request) {
	lib, ok := s.library(w)
	if !ok {
		return
	}
	key := r.PathValue("key")
	if _, err := lib.File(r.Context(), key); err != nil {
		s.storeError(w, r, "file", err)
		return
	}
	u, exp := s.audio.url(key)
	writeJSON(w, http.StatusOK, struct {
		URL     string    `json:"url"`
		Expires time.Time `json:"expires"`
	}{u, exp})
}
