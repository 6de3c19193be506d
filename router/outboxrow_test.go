package router_test

import (
	"bytes"
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/router"
)

// TestInvalidOutboxRowIsDeadLetteredAtOnce: an outbox row the handler adds
// that fails validation (empty kind, idempotency key over the limit,
// payload over the limit), through AddOutbox or ApplyTransition, is the
// handler's bad data: dead-lettered at once with reason
// invalid_outbox_row, one attempt, nothing committed.
func TestInvalidOutboxRowIsDeadLetteredAtOnce(t *testing.T) {
	rows := map[string]*ackgap.OutboxEntry{
		"empty kind":   {IdempotencyKey: "charge:o1"},
		"key too long": {Kind: "charge", IdempotencyKey: strings.Repeat("k", ackgap.IdempotencyKeyMaxBytes+1)},
		"payload too large": {Kind: "charge", IdempotencyKey: "charge:o1",
			Payload: bytes.Repeat([]byte("x"), ackgap.OutboxPayloadMaxBytes+1)},
	}
	for name, row := range rows {
		for _, via := range []string{"AddOutbox", "ApplyTransition"} {
			t.Run(name+"/"+via, func(t *testing.T) {
				sink, logger := newSink()
				store := sqliteStore(t)
				attempts := 0
				h := chain(t, store, router.Config{Logger: logger}, func(ctx context.Context, _ *sql.Tx, _ *message.Message) error {
					attempts++
					if via == "AddOutbox" {
						return ackgap.AddOutbox(ctx, row)
					}
					_, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{Table: "orders", Key: "o1", From: []string{"a"}, To: "b"}, row)
					return err
				})
				_, err := h(newMsg("e-row", `{}`))
				require.NoError(t, err, "dead-lettered and acked")
				require.Equal(t, 1, attempts, "not retried")
				dead := sink.records(t, router.LogDeadLettered)
				require.Len(t, dead, 1)
				require.Equal(t, ackgap.ReasonInvalidOutboxRow, dead[0]["reason"])
				require.Contains(t, dead[0]["error"], "invalid outbox row")
				var n int
				require.NoError(t, store.DB().QueryRow(`SELECT count(*) FROM ackgap_outbox`).Scan(&n))
				require.Zero(t, n)
			})
		}
	}
}
