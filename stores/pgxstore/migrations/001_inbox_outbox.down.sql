-- ackgap 001 down: drops the inbox and the outbox with all their rows.
DROP TABLE {{.Outbox}};
DROP TABLE {{.Inbox}};
