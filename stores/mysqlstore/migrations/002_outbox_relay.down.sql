-- ackgap 002 down: removes the relay's indexes and claim tokens.
ALTER TABLE {{.Outbox}}
    DROP INDEX {{.OutboxDeadIndex}},
    DROP INDEX {{.OutboxDoneIndex}},
    DROP COLUMN claim_token;
