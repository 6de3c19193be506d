-- ackgap 003 down: drops the inbox's trace context and brings back the
-- trigger of migration 002.
ALTER TABLE {{.Inbox}} DROP COLUMN trace_parent;

CREATE FUNCTION {{.OutboxNotifyFunc}}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ackgap_outbox_' || md5(TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME), '');
    RETURN NULL;
END
$$;

CREATE TRIGGER ackgap_outbox_notify AFTER INSERT ON {{.Outbox}}
    FOR EACH STATEMENT EXECUTE FUNCTION {{.OutboxNotifyFunc}}();
