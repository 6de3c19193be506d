-- ackgap 004 (SQLite): each consumer transaction also records its
-- partition's watermark (every offset below it was acked, so its
-- transaction committed earlier). A file restored from a backup holds a
-- prefix of the commit order: the row it kept tells how far it really is,
-- and a Kafka consumer starts a partition from the lower of it and the
-- group's committed offset (the inbox skips what survived). updated_at is
-- Unix microseconds.
CREATE TABLE IF NOT EXISTS {{.Progress}} (
    consumer   TEXT    NOT NULL,
    topic      TEXT    NOT NULL,
    partition  INTEGER NOT NULL,
    watermark  INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (consumer, topic, partition)
) WITHOUT ROWID;
