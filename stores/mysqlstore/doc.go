// Package mysqlstore is the ackgap store on MariaDB (10.6 or later) and
// MySQL 8, through database/sql and github.com/go-sql-driver/mysql.
//
// DSN: the driver's own form, user:pass@tcp(host:3306)/db, or a URL,
// mysql://user:pass@host:3306/db (mariadb:// too); see [ParseDSN]. Open
// sets sql_mode ANSI_QUOTES on every connection (ackgap quotes
// identifiers "like this"), keeps clientFoundRows off and turns
// interpolateParams on (one round trip per statement, not a prepare, an
// execute and a close).
//
// Every store transaction runs at READ COMMITTED (under InnoDB's default
// REPEATABLE READ, concurrent inbox inserts deadlock through gap locks):
// Open sets it once per session when a connection opens (SET SESSION
// TRANSACTION ISOLATION LEVEL, the same on MariaDB and MySQL 8; MariaDB
// 10.11 has no @@transaction_isolation), on a *sql.DB given to New it is
// set per transaction (one more round trip each).
// The inbox row is inserted directly: a duplicate key (1062) rolls back
// only that statement, so 1062 means "duplicate" and no savepoint is
// taken. A deadlock (1213), a lock-wait timeout (1205) and a lost
// connection are store-unavailable: the message is redelivered, never
// dead-lettered ([Store.ClassifyError], docs/errors.md).
//
// Outbox claims use SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE and
// SELECT by id (no UPDATE ... RETURNING). There is no notification
// channel (no LISTEN/NOTIFY): relays are woken in process by direct
// dispatch and otherwise poll every outbox Config.PollInterval
// (outbox.PollIntervalDefault, 1 s, as watermill-sql; the billing demo
// uses 50 ms). A row written by another process waits at most that long. Migrations hold GET_LOCK; DDL commits on
// its own, so each step's statements are idempotent and the version row is
// written last.
//
// What differs on MySQL 8: nothing in the SQL this store sends (no
// RETURNING is used, CHECK constraints are enforced from 8.0.16, SKIP
// LOCKED from 8.0.1); a CHECK violation is 3819 there, 4025 on MariaDB;
// only MariaDB is tested by this repository's suite.
package mysqlstore
