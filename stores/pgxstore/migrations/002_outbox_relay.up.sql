-- ackgap 002: what the outbox relay needs (PostgreSQL).

-- A new random token per claim: the guard of "mark done", "retry" and
-- "mark dead", so a relay whose lease lapsed, and whose row another relay
-- claimed since, changes nothing.
ALTER TABLE {{.Outbox}} ADD COLUMN claim_token text;

-- Pruning finds done rows by age; stats and redrive find dead rows.
CREATE INDEX {{.OutboxDoneIndex}} ON {{.Outbox}} (done_at) WHERE state = 'done';
CREATE INDEX {{.OutboxDeadIndex}} ON {{.Outbox}} (id) WHERE state = 'dead';

-- Wake relays right after a commit that added rows. The trigger runs once
-- per INSERT statement and NOTIFY is delivered at commit (never for a
-- rolled-back transaction); identical notifications of one transaction are
-- folded into one. The channel is derived from the table's schema and
-- name, so relays of other schemas are not woken. pgxstore's ListenOutbox
-- computes the same name.
CREATE FUNCTION {{.OutboxNotifyFunc}}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ackgap_outbox_' || md5(TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME), '');
    RETURN NULL;
END
$$;

CREATE TRIGGER ackgap_outbox_notify AFTER INSERT ON {{.Outbox}}
    FOR EACH STATEMENT EXECUTE FUNCTION {{.OutboxNotifyFunc}}();
