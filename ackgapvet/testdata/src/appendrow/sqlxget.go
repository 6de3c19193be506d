package appendrow

import (
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jmoiron/sqlx"
)

// onFraudCheck inserts with sqlx's GetContext, RETURNING the new id (wave
// 21, base-server's fraud_detections): a row per delivery.
func onFraudCheck(db *sqlx.DB) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error {
		var id string
		return db.GetContext(msg.Context(), &id, "INSERT INTO fraud_detections (user_id) VALUES ($1) RETURNING id", msg.UUID) // want `an INSERT without ON CONFLICT`
	}
}

// onLookup reads with GetContext: clean.
func onLookup(db *sqlx.DB) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error {
		var n int
		return db.GetContext(msg.Context(), &n, "SELECT count(*) FROM users WHERE id = $1", msg.UUID)
	}
}

func registerFraud(r *message.Router, db *sqlx.DB) {
	r.AddNoPublisherHandler("fraud", "t", nil, onFraudCheck(db))
	r.AddNoPublisherHandler("lookup", "t", nil, onLookup(db))
}
