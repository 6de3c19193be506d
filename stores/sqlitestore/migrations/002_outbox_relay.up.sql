-- ackgap 002: what the outbox relay needs (SQLite).

-- A new random token per claim: the guard of "mark done", "retry" and
-- "mark dead", so a relay whose lease lapsed, and whose row another relay
-- claimed since, changes nothing.
ALTER TABLE {{.Outbox}} ADD COLUMN claim_token TEXT;

-- Pruning finds done rows by age; stats and redrive find dead rows.
CREATE INDEX {{.OutboxDoneIndex}} ON {{.Outbox}} (done_at) WHERE state = 'done';
CREATE INDEX {{.OutboxDeadIndex}} ON {{.Outbox}} (id) WHERE state = 'dead';
