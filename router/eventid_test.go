package router_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/router"
)

// TestInvalidEventIDIsDeadLettered (issue 12, item 1): an event id that is
// not UTF-8, or holds a NUL byte, is dead-lettered at once with reason
// event_id_invalid, keeping its bytes for redrive; nothing is applied and
// the message is tried once, not retried.
func TestInvalidEventIDIsDeadLettered(t *testing.T) {
	for _, id := range []string{"\xff\xfe\xfa", "e1\x00"} {
		b := setup(t, router.Config{}, nil)
		b.publish(t, id, `{"order_id":"o1"}`)
		dl := b.deadLetter(t)
		require.Equal(t, ackgap.ReasonEventIDInvalid, dl.Metadata.Get(ackgap.MetadataDeadLetterReason))
		require.Equal(t, id, dl.Metadata.Get(ackgap.MetadataEventIDKey), "the id's bytes travel for redrive")
		require.Equal(t, []ackgap.Outcome{ackgap.OutcomeRejected}, b.wait(t, 1))
		require.Equal(t, "pending", b.status(t, "o1"))
	}
}
