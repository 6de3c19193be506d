// Package notice stores a notification per finished job: it counts the
// job's notifications first and skips (acks) the message when one is
// there (field trial, wave 47: fyredocs' notification subscriber), so the
// insert after the count is the record a redelivery finds. The twin
// inserts a log row with no check.
package notice

import (
	"github.com/nats-io/nats.go/jetstream"
	"gorm.io/gorm"
)

// Notice is a user's notification.
type Notice struct {
	JobID string
	Text  string
}

// Entry is a log row.
type Entry struct{ Text string }

// Run consumes finished jobs.
func Run(cons jetstream.Consumer, db *gorm.DB) error {
	_, err := cons.Consume(func(m jetstream.Msg) {
		id := string(m.Data())
		var n int64
		if err := db.Model(&Notice{}).Where("job_id = ?", id).Count(&n).Error; err != nil {
			_ = m.Nak()
			return
		}
		if n > 0 {
			_ = m.Ack()
			return
		}
		if err := db.Create(&Notice{JobID: id, Text: "done"}).Error; err != nil {
			_ = m.Nak()
			return
		}
		_ = m.Ack()
	})
	if err != nil {
		return err
	}
	_, err = cons.Consume(func(m jetstream.Msg) {
		if err := db.Create(&Entry{Text: string(m.Data())}).Error; err != nil {
			_ = m.Nak()
			return
		}
		_ = m.Ack()
	})
	return err
}
