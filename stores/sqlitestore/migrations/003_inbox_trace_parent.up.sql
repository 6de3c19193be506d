-- ackgap 003 (SQLite): inbox rows keep the W3C traceparent
-- (https://www.w3.org/TR/trace-context/) of the delivery that wrote them,
-- so a later copy's span can link to it. NULL when it was not traced.
ALTER TABLE {{.Inbox}} ADD COLUMN trace_parent TEXT;
