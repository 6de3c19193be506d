-- ackgap 003: inbox rows keep the W3C traceparent
-- (https://www.w3.org/TR/trace-context/) of the delivery that wrote them.
ALTER TABLE {{.Inbox}} ADD COLUMN trace_parent VARCHAR(64);
