-- ackgap 003 down: drops the inbox's trace context.
ALTER TABLE {{.Inbox}} DROP COLUMN trace_parent;
