// Package failovertest fails a real PostgreSQL over under a running Kafka
// consumer (issue 24): a primary and an asynchronous standby made by
// tools/pgfailover.sh, the standby cut off while the consumer commits, the
// primary killed, the standby promoted and the consumer pointed at it. Its
// tests prove that ackgap with progress rows replays what the promoted
// database lost, once, and measure what a hand-written safe consumer
// (inbox in the transaction, offset committed after the commit) loses.
//
// The tests need root and postgresql-common; they run under tools/test.sh,
// which sets FAILOVER_SCRIPT, and skip (saying so) without it. Under
// tools/test.sh a pair that cannot be made fails the test.
package failovertest
