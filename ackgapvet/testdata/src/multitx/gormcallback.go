package multitx

import (
	"github.com/IBM/sarama"
	"gorm.io/gorm"
)

// counted records the event and bumps a counter in one GORM transaction:
// both helpers are given the callback's tx, so nothing commits twice (a
// new user's report: per-package mode read tx.Create and tx.Save as two
// commits).
type counted struct{ g *gorm.DB }

func (h *counted) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *counted) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *counted) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	for m := range cl.Messages() {
		err := h.g.Transaction(func(tx *gorm.DB) error {
			if err := recordEvent(tx, string(m.Key)); err != nil {
				return err
			}
			if err := bumpCount(tx, string(m.Value)); err != nil {
				return err
			}
			return tx.Save(&struct{ N int }{1}).Error
		})
		if err != nil {
			return err
		}
		s.MarkMessage(m, "")
	}
	return nil
}

func recordEvent(tx *gorm.DB, id string) error {
	return tx.Save(&struct{ ID string }{id}).Error
}

func bumpCount(tx *gorm.DB, id string) error {
	return tx.Save(&struct{ ID string }{id}).Error
}
