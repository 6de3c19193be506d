-- ackgap 002 down: removes the relay's trigger, indexes and claim tokens.
DROP TRIGGER ackgap_outbox_notify ON {{.Outbox}};
DROP FUNCTION {{.OutboxNotifyFunc}}();
DROP INDEX {{.SchemaDot}}{{.OutboxDeadIndex}};
DROP INDEX {{.SchemaDot}}{{.OutboxDoneIndex}};
ALTER TABLE {{.Outbox}} DROP COLUMN claim_token;
