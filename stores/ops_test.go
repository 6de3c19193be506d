package stores_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/stores"
)

// TestRateWindow: the rate's span is the window, or the time since the
// consumer's oldest row when shorter, at least a minute; the console and
// "ackgap status" use it, so they print the same rate.
func TestRateWindow(t *testing.T) {
	now := time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		oldest time.Time
		want   time.Duration
	}{
		{time.Time{}, time.Hour},
		{now.Add(-3 * time.Hour), time.Hour},
		{now.Add(-50 * time.Minute), 50 * time.Minute},
		{now.Add(-10 * time.Second), time.Minute},
	} {
		s := stores.InboxConsumerStats{Oldest: c.oldest, Recent: 3}
		require.Equal(t, c.want, s.RateWindow(time.Hour, now), "oldest %s", c.oldest)
	}
}
