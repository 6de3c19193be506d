package appendrow

import (
	"database/sql"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
)

// Loader loads a manifest per message with COPY (field trial, wave 41:
// tipoca-stream's Redshift loads): a redelivered job loads it again.
type Loader struct{ db *sql.DB }

func (l *Loader) register(r *message.Router) {
	r.AddNoPublisherHandler("loads", "loads", nil, l.onLoad)
	r.AddNoPublisherHandler("rows", "rows", nil, l.onRows)
}

func (l *Loader) onLoad(msg *message.Message) error {
	_, err := l.db.Exec("COPY events FROM 's3://bucket/manifest' MANIFEST") // want `a bulk COPY ... FROM \(sql.DB.Exec\) on the consumer path of watermill handler onLoad appends a row`
	return err
}

// tx is the transaction onRows copies in.
var tx pgx.Tx

func (l *Loader) onRows(msg *message.Message) error {
	_, err := tx.CopyFrom(msg.Context(), pgx.Identifier{"events"}, []string{"body"}, pgx.CopyFromRows([][]any{{msg.Payload}})) // want `a bulk COPY \(pgx.Tx.CopyFrom\) on the consumer path of watermill handler onRows appends a row`
	return err
}
