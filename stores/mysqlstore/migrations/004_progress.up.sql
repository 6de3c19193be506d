-- ackgap 004: each consumer transaction also records its partition's
-- watermark (every offset below it was acked, so its transaction committed
-- earlier). A promoted replica or a restored backup holds a prefix of the
-- commit order: the row it kept tells how far it really is, and a Kafka
-- consumer starts a partition from the lower of it and the group's
-- committed offset (the inbox skips what survived). updated_at is Unix
-- microseconds. "partition" is a reserved word, quoted (ANSI_QUOTES).
CREATE TABLE IF NOT EXISTS {{.Progress}} (
    consumer    VARCHAR(255) NOT NULL,
    topic       VARCHAR(255) NOT NULL,
    "partition" INT          NOT NULL,
    watermark   BIGINT       NOT NULL,
    updated_at  BIGINT       NOT NULL,
    PRIMARY KEY (consumer, topic, "partition")
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
