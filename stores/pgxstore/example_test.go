package pgxstore_test

import (
	"fmt"
	"strings"

	"github.com/ackgap/ackgap/stores/pgxstore"
)

// Migrations gives the SQL that Migrate runs, rendered with your schema
// and prefix, for goose, atlas or a DBA.
func ExampleMigrations() {
	migrations, err := pgxstore.Migrations(&pgxstore.Config{Schema: "billing", TablePrefix: "ag_"})
	if err != nil {
		panic(err)
	}
	for _, m := range migrations {
		fmt.Printf("%03d_%s\n", m.Version, m.Name)
		for _, line := range strings.Split(m.UpSQL, "\n") {
			if strings.HasPrefix(line, "CREATE") || strings.HasPrefix(line, "ALTER") || strings.HasPrefix(line, "DROP") {
				fmt.Println(line)
			}
		}
	}
	// Output:
	// 001_inbox_outbox
	// CREATE TABLE "billing"."ag_inbox" (
	// CREATE INDEX "ag_inbox_received_at_idx" ON "billing"."ag_inbox" (received_at);
	// CREATE TABLE "billing"."ag_outbox" (
	// CREATE INDEX "ag_outbox_due_idx" ON "billing"."ag_outbox" (available_at) WHERE state IN ('pending', 'claimed');
	// 002_outbox_relay
	// ALTER TABLE "billing"."ag_outbox" ADD COLUMN claim_token text;
	// CREATE INDEX "ag_outbox_done_at_idx" ON "billing"."ag_outbox" (done_at) WHERE state = 'done';
	// CREATE INDEX "ag_outbox_dead_idx" ON "billing"."ag_outbox" (id) WHERE state = 'dead';
	// CREATE FUNCTION "billing"."ag_outbox_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
	// CREATE TRIGGER ackgap_outbox_notify AFTER INSERT ON "billing"."ag_outbox"
	// 003_notify_after_commit
	// DROP TRIGGER ackgap_outbox_notify ON "billing"."ag_outbox";
	// DROP FUNCTION "billing"."ag_outbox_notify"();
	// ALTER TABLE "billing"."ag_inbox" ADD COLUMN trace_parent text;
	// 004_outbox_autovacuum
	// ALTER TABLE "billing"."ag_outbox" SET (
	// 005_progress
	// CREATE TABLE IF NOT EXISTS "billing"."ag_progress" (
}
