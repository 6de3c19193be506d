// Package multiface: two transactions for one message behind an interface
// (field trial wave 4, insights-results-aggregator H2): the per-package
// mode sees no commit below an interface method; the whole-program walk
// does.
package multiface

import (
	"context"
	"database/sql"

	"github.com/segmentio/kafka-go"
)

// Storage is what the consumer writes through.
type Storage interface {
	WriteReport(key string) error
	WriteRecommendations(key string) error
}

// DBStorage commits a transaction per method.
type DBStorage struct{ DB *sql.DB }

func (s *DBStorage) inTx(q, key string) error {
	tx, err := s.DB.Begin()
	if err != nil {
		return err
	}
	if _, err := tx.Exec(q, key); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// WriteReport commits the report.
func (s *DBStorage) WriteReport(key string) error {
	return s.inTx("UPDATE report SET n = 1 WHERE k = $1", key)
}

// WriteRecommendations commits the recommendations.
func (s *DBStorage) WriteRecommendations(key string) error {
	return s.inTx("UPDATE recommendation SET n = 1 WHERE k = $1", key)
}

func store(st Storage, key string) error {
	if err := st.WriteReport(key); err != nil {
		return err
	}
	return st.WriteRecommendations(key) // want: a second transaction
}

// ConsumeReports stores each message, then commits it.
func ConsumeReports(ctx context.Context, r *kafka.Reader, st Storage) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := store(st, string(m.Value)); err != nil {
			return
		}
		r.CommitMessages(ctx, m)
	}
}

type txKey struct{}

// Executor runs a function in a transaction carried by the context, and
// in a savepoint of it when one is already open (veziizi's dbtx shape).
type Executor struct{ DB *sql.DB }

// InTx begins, runs fn inside, commits: one transaction, however many
// nested InTx calls fn makes.
func (e *Executor) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if tx, ok := ctx.Value(txKey{}).(*sql.Tx); ok {
		return fn(context.WithValue(ctx, txKey{}, tx))
	}
	tx, err := e.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(context.WithValue(ctx, txKey{}, tx)); err != nil {
		return err
	}
	return tx.Commit() // not a second transaction: fn ran inside this one
}

// ConsumeNested writes through nested InTx calls: one transaction.
func ConsumeNested(ctx context.Context, r *kafka.Reader, e *Executor) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		err = e.InTx(ctx, func(ctx context.Context) error {
			return e.InTx(ctx, func(ctx context.Context) error {
				tx := ctx.Value(txKey{}).(*sql.Tx)
				_, err := tx.Exec("UPDATE report SET n = 1 WHERE k = $1", string(m.Value))
				return err
			})
		})
		if err != nil {
			return
		}
		r.CommitMessages(ctx, m)
	}
}

// Txn wraps a transaction (pgstream's pool helper shape).
type Txn struct{ Tx *sql.Tx }

// ExecInTx runs fn with the transaction wrapped: one transaction.
func (e *Executor) ExecInTx(fn func(*Txn) error) error {
	tx, err := e.DB.Begin()
	if err != nil {
		return err
	}
	if err := fn(&Txn{Tx: tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit() // not a second transaction
}

// ConsumeWrapped writes through ExecInTx, nested once.
func ConsumeWrapped(ctx context.Context, r *kafka.Reader, e *Executor) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		err = e.ExecInTx(func(t *Txn) error {
			return e.ExecInTx(func(t2 *Txn) error {
				_, err := t2.Tx.Exec("UPDATE report SET n = 1 WHERE k = $1", string(m.Value))
				return err
			})
		})
		if err != nil {
			return
		}
		r.CommitMessages(ctx, m)
	}
}
