package idemkey

import (
	"database/sql"

	"github.com/ThreeDotsLabs/watermill/message"
)

// registerTracking counts a failed check in one branch and records a
// tracking event with ON CONFLICT in the other (wave 35, TrackBox H1):
// the insert is no dedupe of the counter, which a redelivery adds again.
// An inbox insert before the counter, in the same block, dedupes it.
func registerTracking(r *message.Router, db *sql.DB, check func([]byte) error) {
	r.AddNoPublisherHandler("tracking", "tracking", nil, func(msg *message.Message) error {
		if err := check(msg.Payload); err != nil {
			_, err := db.Exec("UPDATE trackings SET check_fail_count = check_fail_count + 1 WHERE id = $1", msg.UUID) // want `increments check_fail_count with no dedupe record`
			return err
		}
		_, err := db.Exec("INSERT INTO tracking_events (tracking_id, status) VALUES ($1, 'ok') ON CONFLICT (tracking_id, status) DO NOTHING", msg.UUID)
		return err
	})
	r.AddNoPublisherHandler("tracking-inbox", "tracking", nil, func(msg *message.Message) error {
		if _, err := db.Exec("INSERT INTO inbox (consumer, id) VALUES ('tracking', $1) ON CONFLICT DO NOTHING", msg.UUID); err != nil {
			return err
		}
		_, err := db.Exec("UPDATE trackings SET check_count = check_count + 1 WHERE id = $1", msg.UUID)
		return err
	})
}
