package mysqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores/storekit"
)

// Server error numbers this store acts on
// (https://mariadb.com/kb/en/mariadb-error-code-reference/, the same
// numbers on MySQL 8 except where noted).
const (
	erDupEntry          = 1062 // ER_DUP_ENTRY
	erLockDeadlock      = 1213 // ER_LOCK_DEADLOCK, SQLSTATE 40001: the whole transaction rolled back
	erLockWaitTimeout   = 1205 // ER_LOCK_WAIT_TIMEOUT: only the statement rolled back
	erConCount          = 1040 // ER_CON_COUNT_ERROR: too many connections
	erServerShutdown    = 1053 // ER_SERVER_SHUTDOWN
	erQueryInterrupted  = 1317 // ER_QUERY_INTERRUPTED
	erOptionPreventsStm = 1290 // ER_OPTION_PREVENTS_STATEMENT (--read-only)
	erCantExecReadOnly  = 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
	erConnectionKilled  = 1927 // ER_CONNECTION_KILLED (MariaDB)
	erLockNowait        = 3572 // ER_LOCK_NOWAIT (MySQL 8)
	erNoSuchTable       = 1146 // ER_NO_SUCH_TABLE
	erBadField          = 1054 // ER_BAD_FIELD_ERROR
	erBadDB             = 1049 // ER_BAD_DB_ERROR
	erAccessDenied      = 1045 // ER_ACCESS_DENIED_ERROR
	erAccessDeniedNoPw  = 1698 // ER_ACCESS_DENIED_NO_PASSWORD_ERROR (an unknown user, or one that must log in another way)
	erDBAccessDenied    = 1044 // ER_DBACCESS_DENIED_ERROR
	erTableAccessDenied = 1142 // ER_TABLEACCESS_DENIED_ERROR
	erBadNull           = 1048 // ER_BAD_NULL_ERROR
	erDataTooLong       = 1406 // ER_DATA_TOO_LONG
	erOutOfRange        = 1264 // ER_WARN_DATA_OUT_OF_RANGE
	erTruncatedValue    = 1292 // ER_TRUNCATED_WRONG_VALUE
	erWrongValue        = 1366 // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
	erNoDefault         = 1364 // ER_NO_DEFAULT_FOR_FIELD
	erCheckMariaDB      = 4025 // ER_CONSTRAINT_FAILED (MariaDB CHECK)
	erCheckMySQL        = 3819 // ER_CHECK_CONSTRAINT_VIOLATED (MySQL 8 CHECK)
)

// ClassifyError implements [stores.Store.ClassifyError] for errors of
// go-sql-driver/mysql and database/sql, such as those of a handler's own
// statements on its *sql.Tx.
//
// Busy or unreachable: a deadlock (1213; the transaction was rolled back),
// a lock-wait timeout (1205), too many connections (1040), a server
// shutting down (1053), a killed query or connection (1317, 1927), a
// read-only server (1290, 1792), NOWAIT (3572), a broken connection
// (mysql.ErrInvalidConn, driver.ErrBadConn, a net.Error, a closed
// database): wraps ackgap.ErrStoreUnavailable, so the message is
// redelivered, never dead-lettered. A database not set up for the code
// (1146 no such table, 1054 no such column, 1049 no such database, 1044,
// 1045, 1698, 1142 access denied): wraps ackgap.ErrStoreUnavailable and
// ackgap.ErrStoreMisconfigured. Refused data (1048 NULL, 1406 too long,
// 1264 out of range, 1292, 1366 wrong value, 1364 no default, 4025 / 3819
// CHECK): a permanent error, reason ackgap.ReasonInvalidData, wrapping
// ackgap.ErrInvalidData (with STRICT_TRANS_TABLES in sql_mode, MariaDB's
// and MySQL's default; without it the server truncates and warns).
// Anything else, and errors already classified, are returned unchanged.
// The table is in docs/errors.md.
func (s *Store) ClassifyError(err error) error {
	return storekit.ClassifyError("mysqlstore", classes, err)
}

// classes sorts this driver's errors for storekit.ClassifyError.
var classes = storekit.Classes{Misconfigured: misconfigured, Unavailable: unavailable, InvalidData: invalidData}

// code returns the server error number of err, or 0.
func code(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

func isCode(err error, n uint16) bool { return code(err) == n }

func misconfigured(err error) bool {
	switch code(err) {
	case erNoSuchTable, erBadField, erBadDB, erAccessDenied, erAccessDeniedNoPw, erDBAccessDenied, erTableAccessDenied:
		return true
	}
	return false
}

func invalidData(err error) bool {
	switch code(err) {
	case erBadNull, erDataTooLong, erOutOfRange, erTruncatedValue, erWrongValue, erNoDefault, erCheckMariaDB, erCheckMySQL:
		return true
	}
	return false
}

func unavailable(err error) bool {
	switch code(err) {
	case erLockDeadlock, erLockWaitTimeout, erConCount, erServerShutdown, erQueryInterrupted,
		erOptionPreventsStm, erCantExecReadOnly, erConnectionKilled, erLockNowait:
		return true
	case 0:
	default:
		return false
	}
	var ne net.Error
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) || errors.As(err, &ne) ||
		errors.Is(err, sql.ErrConnDone) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// database/sql does not export its "database is closed" error.
	return strings.Contains(err.Error(), "sql: database is closed")
}

// beginError translates a failure to begin a transaction: the database
// could not be had, the message was fine: it wraps
// ackgap.ErrStoreUnavailable, so the message is redelivered.
func beginError(err error) error {
	return fmt.Errorf("mysqlstore: begin: %w: %w", ackgap.ErrStoreUnavailable, err)
}

// interpretError is the one place driver errors are translated.
func interpretError(op string, err error) error {
	if err == nil {
		return nil
	}
	if misconfigured(err) {
		return storekit.Misconfigured("mysqlstore: "+op, err)
	}
	if unavailable(err) {
		return fmt.Errorf("mysqlstore: %s: %w: %w", op, ackgap.ErrStoreUnavailable, err)
	}
	if invalidData(err) {
		return ackgap.Permanent(ackgap.ReasonInvalidData, fmt.Errorf("mysqlstore: %s: %w: %w", op, ackgap.ErrInvalidData, err))
	}
	return fmt.Errorf("mysqlstore: %s: %w", op, err)
}
