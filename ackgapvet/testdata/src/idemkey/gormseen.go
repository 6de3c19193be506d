package idemkey

import (
	"errors"

	"github.com/IBM/sarama"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Counter is a row read, changed in Go and saved.
type Counter struct {
	ID    string
	Value int64
}

// Consumed is the dedupe row: (consumer, event id) under a unique key.
type Consumed struct {
	Consumer, EventID string
}

var errSeen = errors.New("event already consumed")

type seenHandler struct{ g *gorm.DB }

func (h *seenHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *seenHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *seenHandler) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	for m := range cl.Messages() {
		err := h.g.Transaction(func(tx *gorm.DB) error {
			if !insertIfAbsent(tx, string(m.Key)) {
				return errSeen
			}
			return bump(tx, string(m.Value))
		})
		if err != nil && !errors.Is(err, errSeen) {
			return err
		}
		s.MarkMessage(m, "")
	}
	return nil
}

// insertIfAbsent records the event: a GORM Create whose duplicate-key
// failure means "seen" (wave 33, zfeed). It is the dedupe record, not an
// append.
func insertIfAbsent(tx *gorm.DB, id string) bool {
	err := tx.Create(&Consumed{Consumer: "counts", EventID: id}).Error
	return !errors.Is(err, gorm.ErrDuplicatedKey)
}

// bump reads the counter, adds in Go and saves it, in the transaction that
// made the dedupe record: a redelivery is skipped before it.
func bump(tx *gorm.DB, id string) error {
	var c Counter
	if err := tx.First(&c, "id = ?", id).Error; err != nil {
		return err
	}
	c.Value++
	return tx.Save(&c).Error
}

// ErrAlreadySeen renames GORM's duplicate-key error (a new user's report).
var ErrAlreadySeen = gorm.ErrDuplicatedKey

type renamedHandler struct{ g *gorm.DB }

func (h *renamedHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *renamedHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *renamedHandler) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	for m := range cl.Messages() {
		_ = h.g.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&Consumed{Consumer: "counts", EventID: string(m.Key)}).Error; errors.Is(err, ErrAlreadySeen) {
				return nil
			}
			return bumpRenamed(tx, string(m.Value))
		})
		s.MarkMessage(m, "")
	}
	return nil
}

type doNothingHandler struct{ g *gorm.DB }

func (h *doNothingHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *doNothingHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *doNothingHandler) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	for m := range cl.Messages() {
		_ = h.g.Transaction(func(tx *gorm.DB) error {
			// GORM's INSERT ... ON CONFLICT DO NOTHING: the inbox row.
			if res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&Consumed{Consumer: "counts", EventID: string(m.Key)}); res.RowsAffected == 0 {
				return nil
			}
			return bumpOnce(tx, string(m.Value))
		})
		s.MarkMessage(m, "")
	}
	return nil
}

// bumpRenamed and bumpOnce are bump again, one per consumer: a function
// several consumers reach is checked once, under the first, so a shared
// one would not test the other consumers' dedupe records.
func bumpRenamed(tx *gorm.DB, id string) error {
	var c Counter
	if err := tx.First(&c, "id = ?", id).Error; err != nil {
		return err
	}
	c.Value++
	return tx.Save(&c).Error
}

func bumpOnce(tx *gorm.DB, id string) error {
	var c Counter
	if err := tx.First(&c, "id = ?", id).Error; err != nil {
		return err
	}
	c.Value++
	return tx.Save(&c).Error
}
