// Command ackgap operates ackgap's tables on PostgreSQL and SQLite: apply
// and print the migrations, see the inbox and the outbox (and a Kafka
// consumer group's offsets, "status --kafka-brokers") at a glance, find
// what happened to one event, list, redrive and prune outbox rows without
// writing SQL, and check a deployment (database, SQS queues, Kafka topics
// and group) against ackgap's rules with "ackgap doctor". "ackgap console"
// serves the same on web pages (package console), on 127.0.0.1:8080 and
// read-only unless told otherwise.
//
// Install it with
//
//	go install github.com/ackgap/ackgap/cmd/ackgap@latest
//
// Every subcommand takes the same connection flags, with environment
// variables as fallbacks:
//
//	--dsn     ACKGAP_DSN     postgres://... or postgresql://... for PostgreSQL,
//	                         sqlite:PATH for an SQLite file, mysql://user@host:3306/db
//	                         or user@tcp(host:3306)/db for MariaDB/MySQL
//	--schema  ACKGAP_SCHEMA  PostgreSQL schema of ackgap's tables (default: search_path)
//	--prefix  ACKGAP_PREFIX  table name prefix (default "ackgap_")
//
// Output is a human table by default and JSON with --json. Progress of long
// work goes to stderr. Run "ackgap <command> --help" for each command's
// flags and an example.
//
// Exit codes:
//
//	0  success
//	1  the command failed (database unreachable, SQL error)
//	2  usage error: unknown command, bad flag, argument or DSN
//	3  nothing found: "event" with no inbox or outbox row, "outbox show" of an unknown id
//	4  "migrate status", "status": migrations are pending (the schema is behind the code)
//	5  "doctor": a check failed (warnings exit 0)
//
// The command is thin: it calls the public API users call
// (stores.Operator, pgxstore, sqlitestore).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &env{args: os.Args[1:], stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, now: time.Now})
	stop()
	os.Exit(code)
}
