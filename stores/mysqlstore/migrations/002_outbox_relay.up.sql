-- ackgap 002: what the outbox relay needs (MariaDB, MySQL 8).
-- A new random token per claim: the guard of "mark done", "retry" and
-- "mark dead". Pruning finds done rows by age; stats and redrive find dead
-- rows by state. One ALTER TABLE, so the step is all or nothing.
ALTER TABLE {{.Outbox}}
    ADD COLUMN claim_token VARCHAR(64),
    ADD INDEX {{.OutboxDoneIndex}} (state, done_at),
    ADD INDEX {{.OutboxDeadIndex}} (state, id);
