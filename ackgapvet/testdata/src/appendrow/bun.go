package appendrow

import (
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/uptrace/bun"
)

type sentEmail struct{ ID, To string }

// registerBun logs each email sent with a bun insert (wave 20, universe's
// email service): a redelivery appends a second row. The upsert is clean.
func registerBun(r *message.Router, db *bun.DB) {
	r.AddNoPublisherHandler("emails", "emails", nil, func(msg *message.Message) error {
		_, err := db.NewInsert().Model(&sentEmail{To: string(msg.Payload)}).Exec(msg.Context()) // want `a bun insert \(bun.InsertQuery.Exec\)`
		return err
	})
	r.AddNoPublisherHandler("emails-once", "emails", nil, func(msg *message.Message) error {
		_, err := db.NewInsert().Model(&sentEmail{ID: msg.UUID}).On("CONFLICT (id) DO NOTHING").Exec(msg.Context()) // clean: keyed by the message
		return err
	})
}
