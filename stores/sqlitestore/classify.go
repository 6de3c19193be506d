package sqlitestore

import (
	"github.com/ackgap/ackgap/stores/storekit"
)

// ClassifyError implements [stores.Store.ClassifyError] for errors of
// modernc.org/sqlite and database/sql, such as those of a handler's own
// statements on its *sql.Tx. Busy or unusable (SQLITE_BUSY and
// SQLITE_LOCKED past busy_timeout, SQLITE_IOERR, SQLITE_CANTOPEN,
// SQLITE_FULL, SQLITE_READONLY, SQLITE_NOTADB, SQLITE_CORRUPT, a closed
// database or connection), and a database not set up for the code
// (SQLITE_ERROR "no such table" or "no such column", on ackgap's tables or
// the handler's own: a deploy mistake; SQLITE_AUTH): wraps
// ackgap.ErrStoreUnavailable, and for a database not set up also
// ackgap.ErrStoreMisconfigured. Refused data
// (SQLITE_CONSTRAINT_CHECK, SQLITE_CONSTRAINT_NOTNULL,
// SQLITE_CONSTRAINT_DATATYPE, SQLITE_TOOBIG, SQLITE_MISMATCH): a permanent
// error, reason ackgap.ReasonInvalidData, wrapping ackgap.ErrInvalidData.
// Anything else, and errors already classified, are returned unchanged.
// The table is in docs/errors.md.
func (s *Store) ClassifyError(err error) error {
	return storekit.ClassifyError("sqlitestore", classes, err)
}

// classes sorts this driver's errors for storekit.ClassifyError.
var classes = storekit.Classes{Misconfigured: misconfigured, Unavailable: unavailable, InvalidData: invalidData}
