// Package kitloop receives through an SQS wrapper library's one-message
// Receive in a loop and deletes through its Delete (field trial, wave 60:
// GeoNet/fdsn's consumers over GeoNet/kit): the loop is an SQS consumer,
// and the delete after a failure only logged is errack's.
package kitloop

import (
	"context"
	"database/sql"
	"log"

	"example.org/sqswrap"
)

// Holdings indexes each notification.
func Holdings(ctx context.Context, q *sqswrap.SQS, db *sql.DB, url string) {
	for ctx.Err() == nil {
		m, err := q.ReceiveWithContext(ctx, url, 600)
		if err != nil {
			continue
		}
		if _, err := db.ExecContext(ctx, "UPDATE holdings SET indexed = true WHERE key = $1", m.Body); err != nil {
			log.Printf("index: %v", err)
		}
		if err := q.Delete(url, m.ReceiptHandle); err != nil {
			log.Printf("delete: %v", err)
		}
	}
}
