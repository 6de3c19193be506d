-- ackgap 005 (PostgreSQL): each consumer transaction also records its
-- partition's watermark (every offset below it was acked, so its
-- transaction committed earlier). A promoted standby or a restored backup
-- holds a prefix of the commit order: the row it kept tells how far the
-- database really is, and the consumer starts a partition from the lower
-- of it and the group's committed offset (the inbox skips what survived).
CREATE TABLE IF NOT EXISTS {{.Progress}} (
    consumer   text        NOT NULL,
    topic      text        NOT NULL,
    partition  integer     NOT NULL,
    watermark  bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, topic, partition)
);
