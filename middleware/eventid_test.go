package middleware_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
)

// TestCheckEventID: what an event id may hold. Anything valid UTF-8
// without NUL, up to the limit, is accepted, however odd.
func TestCheckEventID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"e1", "ordre-été-🧾", "tab\there", "a\x01b", "\uFFFD", strings.Repeat("x", 255)} {
		require.NoError(t, ackgap.CheckEventID(id, 0), "%+q", id)
	}
	require.ErrorIs(t, ackgap.CheckEventID("", 0), ackgap.ErrMissingEventID)
	for _, id := range []string{"\xff\xfe\xfa", "a\x00b", "\x00", "ok\xc3", "\xed\xa0\x80" /* a UTF-16 surrogate */} {
		err := ackgap.CheckEventID(id, 0)
		require.ErrorIs(t, err, ackgap.ErrEventIDInvalid, "%+q", id)
		require.True(t, utf8.ValidString(err.Error()) && strings.IndexByte(err.Error(), 0) < 0,
			"the message quotes the id with escapes: %q", err.Error())
	}
	require.ErrorIs(t, ackgap.CheckEventID(strings.Repeat("x", 256), 0), ackgap.ErrEventIDTooLong, "MaxEventIDBytesDefault")
	require.ErrorIs(t, ackgap.CheckEventID("123456789", 8), ackgap.ErrEventIDTooLong)
	require.NoError(t, ackgap.CheckEventID("12345678", 8))
	require.ErrorIs(t, ackgap.CheckEventID(strings.Repeat("\xff", 300), 0), ackgap.ErrEventIDInvalid, "invalid before too long")
}

// TestInvalidEventIDIsRejected: the inbox rejects an id that is not UTF-8
// or holds NUL with a permanent error of its own (reason event_id_invalid)
// before it touches the store, so the database never turns it into a
// transient error (PostgreSQL's SQLSTATE 22021) that is retried until the
// attempts run out.
func TestInvalidEventIDIsRejected(t *testing.T) {
	for _, id := range []string{"\xff\xfe\xfa", "e\x001"} {
		inbox, b := setup(t, nil)
		_, err := inbox(b.charge)(event(id, `{}`))
		require.ErrorIs(t, err, ackgap.ErrEventIDInvalid)
		require.True(t, ackgap.IsPermanent(err), "goes to the dead-letter path")
		require.Equal(t, ackgap.ReasonEventIDInvalid, ackgap.ReasonOf(err))
		require.Zero(t, b.calls)
		require.Equal(t, []ackgap.Outcome{ackgap.OutcomeRejected}, b.outcomes())
		require.Empty(t, b.reports[0].EventID, "an invalid id is not reported (spans and logs take text)")
		require.Equal(t, "pending", b.status(t))
	}
}
