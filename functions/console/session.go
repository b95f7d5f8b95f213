package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"

	"github.com/lensfn/lensfn/runtime/secret"
)

// cookieName is the session cookie; sealContext binds the sealed value to this use.
const (
	cookieName  = "lensfn_console"
	sealContext = "console-session/v1"
	// sessionTTL bounds a session's life: after it the user signs in again.
	sessionTTL = 12 * time.Hour
	// maxCookieBytes refuses a cookie no session of ours could be before opening it.
	maxCookieBytes = 4096
)

// session is what the sealed cookie carries.
type session struct {
	ID      string `json:"sid"`
	CSRF    string `json:"csrf"`
	Token   string `json:"tok,omitempty"`
	Expires int64  `json:"exp"`
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newSession(now time.Time) *session {
	return &session{ID: randomHex(16), CSRF: randomHex(32), Expires: now.Add(sessionTTL).Unix()}
}

// sessions seals and opens session cookies.
type sessions struct {
	sealer *secret.Sealer
	secure bool
	now    func() time.Time
}

// read opens the request's session cookie; nil when it is absent, tampered with or expired.
func (s *sessions) read(r *http.Request) *session {
	c, err := r.Cookie(cookieName)
	if err != nil || len(c.Value) > maxCookieBytes {
		return nil
	}
	plain, err := s.sealer.Open(c.Value, sealContext)
	if err != nil {
		return nil
	}
	var sess session
	if json.Unmarshal([]byte(plain), &sess) != nil || sess.ID == "" || sess.CSRF == "" || s.now().Unix() >= sess.Expires {
		return nil
	}
	return &sess
}

// write sets the session cookie.
func (s *sessions) write(w http.ResponseWriter, sess *session) {
	raw, _ := json.Marshal(sess)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.sealer.Seal(string(raw), sealContext), Path: "/",
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode, MaxAge: int(sessionTTL.Seconds())})
}

// clear removes the session cookie.
func (s *sessions) clear(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, Secure: s.secure,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

// csrfMatches compares a submitted CSRF token with the session's in constant time.
func csrfMatches(sess *session, submitted string) bool {
	return submitted != "" && subtle.ConstantTimeCompare([]byte(sess.CSRF), []byte(submitted)) == 1
}
