package stores

// ErrorClassifier is the part of [Store] that tells what a database
// error means, for errors that reach ackgap without passing through a store
// method: the handler's own statements on its transaction (pgx.Tx, *sql.Tx)
// return the driver's errors as they are. The inbox middleware and the
// batch processor pass a handler's error, and a commit's, through
// ClassifyError. A store that knows no codes returns err unchanged.
//
// ClassifyError returns err itself when it is nil or not a database error
// the store recognises; an error wrapping ackgap.ErrStoreUnavailable when
// the database is busy or unreachable (the message is redelivered, never
// dead-lettered); a permanent error with reason ackgap.ReasonInvalidData
// wrapping ackgap.ErrInvalidData when the database refused the data
// (dead-lettered without retries). The result still wraps err. docs/errors.md
// lists the codes of each store and their class.
type ErrorClassifier interface {
	ClassifyError(err error) error
}
