package outbox

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestBackoff(t *testing.T) {
	r := &Relay{cfg: Config{RetryInitialInterval: time.Second, RetryMaxInterval: 10 * time.Second}}
	plain := errors.New("x")
	for range 200 {
		require.InDelta(t, 1, r.backoff(1, plain).Seconds(), 0.2+1e-9, "first retry: initial ±20%")
		require.InDelta(t, 4, r.backoff(3, plain).Seconds(), 0.8+1e-9, "doubles per attempt")
		d := r.backoff(50, plain)
		require.LessOrEqual(t, d, 10*time.Second, "capped")
		require.GreaterOrEqual(t, d, 8*time.Second)
		require.Equal(t, 30*time.Second, r.backoff(1, RetryAfter(30*time.Second, plain)), "Retry-After longer than the backoff wins")
		require.InDelta(t, 4, r.backoff(3, RetryAfter(time.Millisecond, plain)).Seconds(), 0.8+1e-9, "a shorter one does not shorten it")
		require.Equal(t, RetryAfterMax, r.backoff(1, RetryAfter(100*time.Hour, plain)))
	}
}

func TestLastError(t *testing.T) {
	require.Empty(t, lastError(nil))
	require.Equal(t, "ab", lastError(errors.New("a\x00b")), "PostgreSQL text holds no NUL")
	require.Equal(t, "a\uFFFDb", lastError(errors.New("a\xffb")), "nor invalid UTF-8")
	long := lastError(errors.New(strings.Repeat("é", LastErrorMaxBytes)))
	require.LessOrEqual(t, len(long), LastErrorMaxBytes)
	require.True(t, utf8.ValidString(long), "cut on a rune boundary")
}
