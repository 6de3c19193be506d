// Package gorm is a stub of gorm.io/gorm.
package gorm

import (
	"context"
	"errors"
)

type DB struct {
	Error        error
	RowsAffected int64
}

func (db *DB) WithContext(ctx context.Context) *DB          { return db }
func (db *DB) Model(v interface{}) *DB                      { return db }
func (db *DB) Where(q interface{}, args ...interface{}) *DB { return db }
func (db *DB) Create(v interface{}) *DB                     { return db }
func (db *DB) Clauses(c ...interface{}) *DB                 { return db }

// Save upserts v; outside a transaction GORM wraps it in one of its own
// (SkipDefaultTransaction off), so it commits.
func (db *DB) Save(v interface{}) *DB                           { return db.Commit() }
func (db *DB) Update(col string, v interface{}) *DB             { return db }
func (db *DB) First(dest interface{}, conds ...interface{}) *DB { return db }
func (db *DB) Transaction(fc func(tx *DB) error) error          { return nil }
func (db *DB) Begin() *DB                                       { return db }
func (db *DB) Commit() *DB                                      { return db }
func (db *DB) Rollback() *DB                                    { return db }

// ErrDuplicatedKey is returned by Create on a unique-key violation when
// the dialector translates errors.
var ErrDuplicatedKey = errors.New("duplicated key not allowed")

// Updates updates several columns.
func (db *DB) Updates(v interface{}) *DB { return db }

// UpdateColumn updates a column without hooks.
func (db *DB) UpdateColumn(col string, v interface{}) *DB { return db }

// Exec runs SQL.
func (db *DB) Exec(sql string, values ...interface{}) *DB { return db }

// Expression is a SQL expression.
type Expression struct{ SQL string }

// Expr makes a SQL expression.
func Expr(sql string, args ...interface{}) Expression { return Expression{SQL: sql} }

// Count counts the rows the query matches into n.
func (db *DB) Count(n *int64) *DB { return db }
