package appendrow

import (
	"database/sql"

	sq "github.com/Masterminds/squirrel"
	"github.com/ThreeDotsLabs/watermill/message"
)

// onBuiltInsert builds its INSERT with a query builder (wave 19, iiot's
// bob insert; squirrel here): a row per delivery.
func onBuiltInsert(db *sql.DB) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error {
		q := sq.Insert("readings").Columns("device", "value")
		q = q.Values(msg.UUID, string(msg.Payload))
		query, args, err := q.ToSql()
		if err != nil {
			return err
		}
		_, err = db.Exec(query, args...) // want `an INSERT without ON CONFLICT`
		return err
	}
}

// onBuiltUpsert's builder adds ON CONFLICT: clean.
func onBuiltUpsert(db *sql.DB) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error {
		query, args, err := sq.StatementBuilder.Insert("readings").Columns("id", "value").Values(msg.UUID, 1).Suffix("ON CONFLICT (id) DO NOTHING").ToSql()
		if err != nil {
			return err
		}
		_, err = db.Exec(query, args...)
		return err
	}
}

func registerBuilt(r *message.Router, db *sql.DB) {
	r.AddNoPublisherHandler("built", "t", nil, onBuiltInsert(db))
	r.AddNoPublisherHandler("upsert", "t", nil, onBuiltUpsert(db))
}
