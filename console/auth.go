package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// sessionCookie holds a session: a random id and its HMAC under the
// handler's secret. Sessions end when the process restarts.
const sessionCookie = "ackgap_console_session"

// Token throttle: after loginFailMax wrong tokens (logins and bearer
// tokens) within loginWindow, token checks are slowed, not refused: each
// waits its turn for one slot, held loginSlowCheck, so guesses go one at a
// time at most once per loginSlowCheck, until the oldest failure is
// loginWindow old. A wrong token is then answered 429; the right token is
// accepted after its wait, never refused, so wrong guesses (from any
// address: behind a proxy every user shares one) cannot lock the
// operators out.
const (
	loginFailMax   = 10
	loginWindow    = time.Minute
	loginSlowCheck = time.Second
)

// checkToken compares v to the token, slowed while throttled (see
// loginFailMax), and records a wrong one. It reports whether v is the
// token and, when it is not, whether the throttle was on (answer 429
// rather than 401). It returns ok false, throttled true when ctx ends
// while waiting.
func (h *Handler) checkToken(ctx context.Context, v string) (ok, throttled bool) {
	if h.throttled(false) {
		select {
		case h.slowCheck <- struct{}{}:
		case <-ctx.Done():
			return false, true
		}
		t := time.NewTimer(loginSlowCheck)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			<-h.slowCheck
			return false, true
		}
		<-h.slowCheck
		throttled = true
	}
	if h.tokenOK(v) {
		return true, false
	}
	h.throttled(true)
	return false, throttled
}

// throttled records a failed login when failed is true, and reports
// whether logins are refused now.
func (h *Handler) throttled(failed bool) bool {
	h.loginMu.Lock()
	defer h.loginMu.Unlock()
	now := time.Now()
	keep := h.loginFails[:0]
	for _, t := range h.loginFails {
		if now.Sub(t) < loginWindow {
			keep = append(keep, t)
		}
	}
	h.loginFails = keep
	if failed {
		h.loginFails = append(h.loginFails, now)
	}
	return len(h.loginFails) >= loginFailMax
}

// session is who makes a request: "" when nobody logged in.
type session struct {
	id   string // random, hex; "" for a bearer token
	who  string // for the write log
	csrf string // the form token bound to the session; "" for a bearer token
}

func (h *Handler) mac(parts ...string) string {
	m := hmac.New(sha256.New, h.secret)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

// sessionOf returns the request's session, if its cookie is valid.
func (h *Handler) sessionOf(r *http.Request) (session, bool) {
	if h.cfg.Token == "" {
		return session{}, false
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false
	}
	id, sig, ok := strings.Cut(c.Value, ".")
	if !ok || len(id) != 32 || !hmac.Equal([]byte(sig), []byte(h.mac("session", id))) {
		return session{}, false
	}
	return session{id: id, who: "session " + id[:8] + " from " + r.RemoteAddr, csrf: h.mac("csrf", id)}, true
}

// bearer returns the request's bearer token, if it has one.
func bearer(r *http.Request) (string, bool) {
	return strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func (h *Handler) tokenOK(v string) bool {
	return h.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(v), []byte(h.cfg.Token)) == 1
}

// write wraps a handler that changes the store: it needs the token (a
// session or a bearer token), a same-origin request and, for a session,
// the session's CSRF token in the form field "csrf". Refusals change
// nothing and are logged.
func (h *Handler) write(fn func(w http.ResponseWriter, r *http.Request, who string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		refuse := func(code int, why string) {
			h.cfg.Logger.Warn("console: write refused", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "reason", why)
			h.fail(w, r, code, why)
		}
		if h.cfg.Token == "" {
			refuse(http.StatusForbidden, "The console is read-only: no token is configured.")
			return
		}
		if err := h.cop.Check(r); err != nil {
			refuse(http.StatusForbidden, "Cross-origin request refused.")
			return
		}
		if v, ok := bearer(r); ok {
			switch good, slowed := h.checkToken(r.Context(), v); {
			case good:
				fn(w, r, "bearer token from "+r.RemoteAddr)
			case slowed:
				refuse(http.StatusTooManyRequests, "Wrong bearer token, and too many wrong tokens in the last minute: checks are slowed.")
			default:
				refuse(http.StatusUnauthorized, "Wrong bearer token.")
			}
			return
		}
		s, ok := h.sessionOf(r)
		if !ok {
			refuse(http.StatusUnauthorized, "Log in with the console's token to make changes.")
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) != 1 {
			refuse(http.StatusForbidden, "Missing or wrong CSRF token: reload the page and try again.")
			return
		}
		fn(w, r, s.who)
	})
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "login", "Log in", "", map[string]any{"Next": h.safeNext(r.URL.Query().Get("next"))})
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if h.cfg.Token == "" {
		h.fail(w, r, http.StatusForbidden, "The console is read-only: no token is configured.")
		return
	}
	next := h.safeNext(r.PostFormValue("next"))
	if good, slowed := h.checkToken(r.Context(), r.PostFormValue("token")); !good {
		if slowed {
			h.cfg.Logger.Warn("console: login refused: wrong token, too many wrong tokens", "remote", r.RemoteAddr)
			h.fail(w, r, http.StatusTooManyRequests, "Wrong token, and too many wrong tokens in the last minute: checks are slowed.")
			return
		}
		h.cfg.Logger.Warn("console: login refused", "remote", r.RemoteAddr)
		h.render(w, r, http.StatusUnauthorized, "login", "Log in", "", map[string]any{"Next": next, "Wrong": true})
		return
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		h.fail(w, r, http.StatusInternalServerError, "No randomness for a session.")
		return
	}
	id := hex.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id + "." + h.mac("session", id), Path: h.cfg.Prefix + "/",
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	h.cfg.Logger.Info("console: login", "session", id[:8], "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: h.cfg.Prefix + "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, h.cfg.Prefix+"/", http.StatusSeeOther)
}

// safeNext returns next if it is a path of the console, else the
// overview: a login never redirects elsewhere.
func (h *Handler) safeNext(next string) string {
	if strings.HasPrefix(next, h.cfg.Prefix+"/") && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return h.cfg.Prefix + "/"
}
