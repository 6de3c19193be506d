// Package keyed: effects that carry a key derived from the message are not
// reported, a publisher over the transaction is an outbox, and generated
// HTTP API clients are effects.
package keyed

import (
	"database/sql"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v3/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/cqrs"
	"github.com/ThreeDotsLabs/watermill/message"

	"example.com/tickets"
)

type event struct {
	TicketID       string
	IdempotencyKey string
}

func register(r *message.Router, api *tickets.ClientWithResponses, db *sql.DB) {
	r.AddNoPublisherHandler("sheet", "t", nil, func(msg *message.Message) error {
		_, err := api.PostSheetsSheetRowsWithResponse(msg.Context(), "refunds", tickets.Row{Columns: []string{string(msg.Payload)}}) // want `an HTTP API call \(tickets.ClientWithResponses.PostSheetsSheetRowsWithResponse\) .*repeats on every redelivery`
		return err
	})
	r.AddNoPublisherHandler("receipt", "t", nil, func(msg *message.Message) error {
		var ev event
		receipt := tickets.Receipt{TicketID: ev.TicketID, IdempotencyKey: ev.IdempotencyKey}
		_, err := api.PutReceiptsWithResponse(msg.Context(), receipt) // clean: the message's key goes with it
		return err
	})
	r.AddNoPublisherHandler("read", "t", nil, func(msg *message.Message) error {
		_, err := api.GetReceiptWithResponse(msg.Context(), "1") // clean: a read
		return err
	})
	r.AddNoPublisherHandler("outbox", "t", nil, func(msg *message.Message) error {
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		pub, err := wsql.NewPublisher(tx)
		if err != nil {
			return err
		}
		bus := cqrs.NewEventBus(pub)
		if err := bus.Publish(msg.Context(), ev2{}); err != nil { // clean: published into the transaction
			return err
		}
		return tx.Commit()
	})
}

type ev2 struct{}
