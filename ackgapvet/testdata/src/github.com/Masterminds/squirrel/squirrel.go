// Package squirrel is a stub of github.com/Masterminds/squirrel's insert
// builder for the checker's tests.
package squirrel

// InsertBuilder builds an INSERT.
type InsertBuilder struct{}

// StatementBuilderType builds statements for a placeholder format.
type StatementBuilderType struct{}

// StatementBuilder is the default statement builder.
var StatementBuilder StatementBuilderType

// Insert starts an INSERT INTO into.
func Insert(into string) InsertBuilder { return InsertBuilder{} }

// Insert starts an INSERT INTO into.
func (b StatementBuilderType) Insert(into string) InsertBuilder { return InsertBuilder{} }

// Columns sets the columns.
func (b InsertBuilder) Columns(cols ...string) InsertBuilder { return b }

// Values adds a row.
func (b InsertBuilder) Values(vals ...any) InsertBuilder { return b }

// Suffix adds SQL after the statement.
func (b InsertBuilder) Suffix(sql string, args ...any) InsertBuilder { return b }

// ToSql renders the statement.
func (b InsertBuilder) ToSql() (string, []any, error) { return "", nil, nil }
