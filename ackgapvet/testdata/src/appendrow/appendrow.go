// Package appendrow: rows appended on every delivery.
package appendrow

import (
	"context"
	"database/sql"
	"errors"

	"github.com/ThreeDotsLabs/watermill/message"
	"gorm.io/gorm"

	"appendrow/ent"
)

type S struct {
	db  *sql.DB
	g   *gorm.DB
	ent *ent.Client
}

func (s *S) register(r *message.Router) {
	r.AddNoPublisherHandler("comments", "comments", nil, s.onComment)
	r.AddNoPublisherHandler("audit", "audit", nil, s.onAudit)
	r.AddNoPublisherHandler("keyed", "keyed", nil, s.onKeyed)
	r.AddNoPublisherHandler("deduped", "deduped", nil, s.onDeduped)
	r.AddNoPublisherHandler("dup", "dup", nil, s.onDupChecked)
	r.AddNoPublisherHandler("outbox", "outbox", nil, s.onOutbox)
	r.AddNoPublisherHandler("points", "points", nil, s.onPoints)
	r.AddNoPublisherHandler("gormdup", "gormdup", nil, s.onGormDup)
	r.AddNoPublisherHandler("batch", "batch", nil, s.onBatchCount)
}

// onGormDup records the event with a GORM Create whose duplicate-key error
// means "seen", in a callee (wave 33, zfeed): the Create is the dedupe
// record, not an append, and the consumer's other rows are covered.
func (s *S) onGormDup(msg *message.Message) error {
	return s.g.Transaction(func(tx *gorm.DB) error {
		if seen(tx, msg.UUID) {
			return nil
		}
		return tx.Create(&struct{ Body string }{string(msg.Payload)}).Error
	})
}

func seen(tx *gorm.DB, id string) bool {
	err := tx.Create(&struct{ ID string }{id}).Error
	return errors.Is(err, gorm.ErrDuplicatedKey)
}

// onPoints holds its SQL in a local variable assigned twice (field trial
// wave 14, fit-forge H1): the INSERT that runs is the one assigned last
// before the call.
func (s *S) onPoints(msg *message.Message) error {
	query := "SELECT balance FROM points WHERE user_id = $1"
	if err := s.db.QueryRow(query, msg.UUID).Scan(new(int)); err != nil {
		return err
	}
	query = "INSERT INTO points_ledger (user_id, delta) VALUES ($1, 10)"
	_, err := s.db.Exec(query, msg.UUID) // want `an INSERT without ON CONFLICT \(sql.DB.Exec\) on the consumer path of watermill handler onPoints appends a row`
	return err
}

func (s *S) onComment(msg *message.Message) error {
	_, err := s.ent.Comment.Create().SetBody(string(msg.Payload)).Save(msg.Context()) // want `medium: an ent insert \(ent.CommentCreate.Save\) on the consumer path of watermill handler onComment appends a row on every delivery`
	if err != nil {
		return err
	}
	return s.g.Create(&struct{ Body string }{string(msg.Payload)}).Error // want `a GORM insert`
}

func (s *S) onAudit(msg *message.Message) error {
	_, err := s.db.Exec("INSERT INTO audit_log (body) VALUES ($1)", msg.Payload) // want `an INSERT without ON CONFLICT \(sql.DB.Exec\) on the consumer path of watermill handler onAudit appends a row`
	return err
}

// onKeyed inserts with a conflict clause and upserts: clean.
func (s *S) onKeyed(msg *message.Message) error {
	if _, err := s.db.Exec("INSERT INTO orders (id) VALUES ($1) ON CONFLICT DO NOTHING", msg.UUID); err != nil {
		return err
	}
	if err := s.g.Clauses(nil).Create(&struct{}{}).Error; err != nil {
		return err
	}
	return s.ent.Comment.Create().OnConflict().Exec(context.Background())
}

// onDeduped records the event first (in a helper), so its plain insert is
// covered.
func (s *S) onDeduped(msg *message.Message) error {
	if err := s.record(msg.UUID); err != nil {
		return err
	}
	_, err := s.db.Exec("INSERT INTO lines (body) VALUES ($1)", msg.Payload)
	return err
}

func (s *S) record(id string) error {
	_, err := s.db.Exec("INSERT INTO inbox (id) VALUES ($1) ON CONFLICT DO NOTHING", id)
	return err
}

// onDupChecked records the event with a plain INSERT whose duplicate-key
// error means "seen" (the MySQL style), and writes a row keyed by the
// event id: clean.
func (s *S) onDupChecked(msg *message.Message) error {
	if _, err := s.db.Exec("INSERT INTO inbox (consumer, id) VALUES ('c', ?)", msg.UUID); err != nil {
		if isDupEntry(err) {
			return nil
		}
		return err
	}
	_, err := s.db.Exec("INSERT INTO lines (body) VALUES (?)", msg.Payload)
	return err
}

func (s *S) onOutbox(msg *message.Message) error {
	_, err := s.db.Exec("INSERT INTO outbox (idempotency_key, payload) VALUES (?, ?)", "charge:"+msg.UUID, msg.Payload)
	return err
}

func isDupEntry(err error) bool { return err != nil }

// onBatchCount counts what it processed in a variable named processed and
// keeps a map named seen of the batch's keys: neither is a duplicate-key
// test, so its insert is an append, not a dedupe record.
func (s *S) onBatchCount(msg *message.Message) error {
	processed := 0
	seen := map[string]bool{}
	for _, line := range []string{string(msg.Payload)} {
		if seen[line] {
			continue
		}
		seen[line] = true
		if _, err := s.db.Exec("INSERT INTO lines (body) VALUES (?)", line); err != nil { // want `an INSERT without ON CONFLICT \(sql.DB.Exec\) on the consumer path of watermill handler onBatchCount appends a row`
			return err
		}
		processed++
	}
	_ = processed
	return nil
}
