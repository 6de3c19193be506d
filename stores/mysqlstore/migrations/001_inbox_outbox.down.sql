-- ackgap 001 down: drops the inbox and the outbox with all their rows.
DROP TABLE IF EXISTS {{.Outbox}};
DROP TABLE IF EXISTS {{.Inbox}};
