-- ackgap 002 down: removes the relay's indexes and claim tokens.
DROP INDEX {{.OutboxDeadIndex}};
DROP INDEX {{.OutboxDoneIndex}};
ALTER TABLE {{.Outbox}} DROP COLUMN claim_token;
