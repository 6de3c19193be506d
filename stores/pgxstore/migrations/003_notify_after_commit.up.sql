-- ackgap 003 (PostgreSQL): relays are woken after the commit, not from a
-- trigger; inbox rows keep the trace context of the delivery that applied
-- the event.

-- NOTIFY in a transaction takes a database-wide lock at commit and holds
-- it through the commit's WAL flush, so every transaction that wrote an
-- outbox row committed one at a time (measured: 2,000-3,500 commits/s at
-- 16 connections instead of 5,000-9,000). pgxstore now sends pg_notify in
-- the same round trip as COMMIT but after it, in a transaction of its own
-- that writes nothing and so flushes nothing.
DROP TRIGGER ackgap_outbox_notify ON {{.Outbox}};
DROP FUNCTION {{.OutboxNotifyFunc}}();

-- W3C traceparent (https://www.w3.org/TR/trace-context/) of the delivery
-- that wrote the row, so a later copy's span can link to it. NULL when the
-- delivery was not traced.
ALTER TABLE {{.Inbox}} ADD COLUMN trace_parent text;
