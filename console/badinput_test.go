package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/console"
)

// TestBadTextIsABadRequest: an event id or an outbox filter no row can
// hold (not UTF-8, a NUL byte) is a 400 with a message, not a 500 with the
// database's error logged at ERROR.
func TestBadTextIsABadRequest(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		seed(t, s)
		b := setup(t, s, nil)
		for path, want := range map[string]string{
			"/event?id=%ff%fe":       "UTF-8",
			"/event?id=e%00":         "UTF-8",
			"/outbox?key=%ff":        "UTF-8",
			"/outbox?kind=ch%fearge": "UTF-8",
		} {
			code, body := b.get(path)
			require.Equal(t, http.StatusBadRequest, code, path)
			require.Contains(t, body, want, path)
		}
		require.NotContains(t, b.log.String(), "level=ERROR")
	})
}

// TestFailedLoginIsLogged: a wrong token is logged, at warn, with the
// remote address and without the token.
func TestFailedLoginIsLogged(t *testing.T) {
	eachBackend(t, func(t *testing.T, s seeder) {
		b := setup(t, s, &console.Config{Token: token})
		const wrong = "wrong-token-9876543210"
		code, _, _ := b.post("/login", url.Values{"token": {wrong}})
		require.Equal(t, http.StatusUnauthorized, code)
		require.Contains(t, b.log.String(), `level=WARN msg="console: login refused" remote=`)
		require.NotContains(t, b.log.String(), wrong)
		require.NotContains(t, b.log.String(), token)
	})
}

// TestUnmigratedStoreSaysSo: a console on a database never migrated says
// the database is not set up (503 with what to do), not "busy".
func TestUnmigratedStoreSaysSo(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, be.open(t), nil)
			code, body := b.get("/outbox")
			require.Equal(t, http.StatusServiceUnavailable, code)
			require.Contains(t, body, "not set up for this code")
			require.Contains(t, body, "ackgap migrate up")
		})
	}
}
