// Package multitx commits more than one database transaction for one
// message, and the look-alikes that do not.
package multitx

import (
	"context"
	"database/sql"
	"log"

	"example.com/txstore"
	"github.com/IBM/sarama"
	"github.com/jackc/pgx/v5/pgxpool"
	"gorm.io/gorm"
)

// Consumer is insights-results-aggregator's shape: two helpers that each
// commit, called one after the other for one message.
type Consumer struct{ db *sql.DB }

func (c *Consumer) inTx(q string, key []byte) error {
	tx, err := c.db.Begin()
	if err != nil {
		return err
	}
	if _, err := tx.Exec(q, key); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (c *Consumer) store(m *sarama.ConsumerMessage) error {
	if err := c.inTx("UPDATE report SET report = $1 WHERE cluster = $1", m.Key); err != nil { // transaction 1 commits
		return err
	}
	return c.inTx("UPDATE recommendation SET hits = $1 WHERE cluster = $1", m.Key) // want `c.inTx commits a second database transaction for the same message \(the first commits at line \d+: c.inTx\): if this one fails the message is half-applied`
}

func (c *Consumer) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	for m := range cl.Messages() {
		if err := c.store(m); err != nil {
			log.Println(err)
		}
		s.MarkMessage(m, "")
	}
	return nil
}

// pgxConsumer commits two pgx transactions inline.
type pgxConsumer struct{ pool *pgxpool.Pool }

func (p *pgxConsumer) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	ctx := s.Context()
	for m := range cl.Messages() {
		tx, err := p.pool.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE report SET report = $1 WHERE cluster = $1", m.Key); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		tx2, err := p.pool.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx2.Exec(ctx, "UPDATE recommendation SET hits = hits + 1 WHERE cluster = $1", m.Key); err != nil {
			return err
		}
		if err := tx2.Commit(ctx); err != nil { // want `pgx.Tx.Commit commits a second database transaction for the same message \(the first commits at line \d+: pgx.Tx.Commit\)`
			return err
		}
		s.MarkMessage(m, "")
	}
	return nil
}

// gormConsumer runs two gorm transactions, the second through a store in
// another package.
type gormConsumer struct {
	db    *gorm.DB
	store *txstore.Store
}

func (g *gormConsumer) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	for m := range cl.Messages() {
		err := g.db.Transaction(func(tx *gorm.DB) error {
			return tx.Create(m).Error
		})
		if err != nil {
			return err
		}
		if err := g.store.SaveReport(s.Context(), m.Key); err != nil { // want `g.store.SaveReport commits a second database transaction for the same message \(the first commits at line \d+: gorm.DB.Transaction\)`
			return err
		}
		s.MarkMessage(m, "")
	}
	return nil
}

// oneTx commits one transaction, then reads through the pool
// (autocommit), through a store in another package too. Clean.
type oneTx struct {
	c     *Consumer
	store *txstore.Store
}

func (o *oneTx) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	for m := range cl.Messages() {
		if err := o.c.inTx("UPDATE report SET report = $1 WHERE cluster = $1", m.Key); err != nil {
			return err
		}
		var n int
		if err := o.c.db.QueryRow("SELECT count(*) FROM report WHERE cluster = $1", m.Key).Scan(&n); err != nil {
			return err
		}
		if _, err := o.store.Lookup(s.Context(), m.Key); err != nil {
			return err
		}
		s.MarkMessage(m, "")
	}
	return nil
}

// branches commits one transaction or the other, never both. Clean.
type branches struct{ c *Consumer }

func (b *branches) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	for m := range cl.Messages() {
		var err error
		if len(m.Key) == 0 {
			err = b.c.inTx("UPDATE report SET report = NULL WHERE cluster = $1", m.Value)
		} else {
			err = b.c.inTx("UPDATE report SET report = $1 WHERE cluster = $1", m.Key)
		}
		switch m.Offset % 2 {
		case 0:
			err = b.c.inTx("UPDATE even SET n = $1 WHERE cluster = $1", m.Key)
		default:
			err = b.c.inTx("UPDATE odd SET n = $1 WHERE cluster = $1", m.Key)
		}
		if err != nil {
			return err
		}
		s.MarkMessage(m, "")
	}
	return nil
}

// onFailure records a failure in a transaction of its own only when the
// work's transaction failed: the work did not commit. Clean.
type onFailure struct{ c *Consumer }

func (f *onFailure) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	for m := range cl.Messages() {
		if err := f.c.inTx("UPDATE report SET report = $1 WHERE cluster = $1", m.Key); err != nil {
			_ = f.c.inTx("INSERT INTO failures (cluster) VALUES ($1)", m.Key)
		}
		s.MarkMessage(m, "")
	}
	return nil
}

// perItem commits a transaction per item of one message's batch: one call
// site in a loop, left alone.
type perItem struct{ c *Consumer }

func (p *perItem) apply(items [][]byte) error {
	for _, it := range items {
		if err := p.c.inTx("UPDATE item SET v = $1 WHERE id = $1", it); err != nil {
			return err
		}
	}
	return nil
}

func (p *perItem) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	for m := range cl.Messages() {
		if err := p.apply([][]byte{m.Key, m.Value}); err != nil {
			return err
		}
		s.MarkMessage(m, "")
	}
	return nil
}

// migrate commits two transactions but no consumer reaches it. Clean.
func migrate(ctx context.Context, c *Consumer) error {
	if err := c.inTx("UPDATE a SET v = $1 WHERE v = $1", nil); err != nil {
		return err
	}
	return c.inTx("UPDATE b SET v = $1 WHERE v = $1", nil)
}
