// Package clause is a stub of gorm.io/gorm/clause.
package clause

// OnConflict is INSERT ... ON CONFLICT.
type OnConflict struct{ DoNothing bool }
