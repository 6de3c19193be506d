package pgxstore

import (
	"github.com/ackgap/ackgap/stores/storekit"
)

// ClassifyError implements [stores.Store.ClassifyError] for errors of pgx and
// PostgreSQL, such as those of a handler's own statements on its pgx.Tx.
// Busy or unreachable (connection exceptions 08xxx, transaction rollbacks
// 40xxx such as serialization failures and deadlocks, insufficient
// resources 53xxx, system errors 58xxx, lock_not_available 55P03,
// query_canceled 57014, shutdowns 57P0x, broken connections, a closed pool,
// a context deadline spent waiting on the server), and a database not set
// up for the code (undefined_table 42P01, undefined_column 42703,
// invalid_schema_name 3F000, invalid_catalog_name 3D000,
// insufficient_privilege 42501, authorization 28xxx: a deploy mistake, on
// ackgap's tables or the handler's own): wraps ackgap.ErrStoreUnavailable,
// and for a database not set up also ackgap.ErrStoreMisconfigured. Refused
// data (data exceptions 22xxx such as
// invalid encoding 22021 and value too long 22001, check_violation 23514,
// not_null_violation 23502): a permanent error, reason
// ackgap.ReasonInvalidData, wrapping ackgap.ErrInvalidData. Anything else,
// and errors already classified, are returned unchanged. The table is in
// docs/errors.md.
func (s *Store) ClassifyError(err error) error {
	return storekit.ClassifyError("pgxstore", classes, err)
}

// classes sorts this driver's errors for storekit.ClassifyError.
var classes = storekit.Classes{Misconfigured: misconfigured, Unavailable: unavailable, InvalidData: invalidData}
