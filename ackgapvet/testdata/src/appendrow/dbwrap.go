package appendrow

import (
	"database/sql"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Database is an application's wrapper that holds *sql.DB in a named
// field, not embedded (wave 33, webhook-event-processor's db.Database): its
// Exec is a database call whose SQL is the caller's.
type Database struct{ conn *sql.DB }

// Exec runs a statement on the pool.
func (d *Database) Exec(query string, args ...any) (sql.Result, error) {
	return d.conn.Exec(query, args...)
}

// Name is a method of the same wrapper without database/sql's shape: not a
// database call.
func (d *Database) Name(query string) string { return query }

func registerInventory(r *message.Router, db *Database) {
	r.AddNoPublisherHandler("inventory", "inventory", nil, func(msg *message.Message) error {
		_ = db.Name("INSERT INTO nothing (id) VALUES (1)")
		_, err := db.Exec("INSERT INTO inventory (id, sku) VALUES ($1, $2)", newID(), string(msg.Payload)) // want `an INSERT without ON CONFLICT \(appendrow.Database.Exec\) on the consumer path of watermill handler \(func literal\) appends a row`
		return err
	})
}

func newID() string { return "fresh" }
