-- ackgap 001: inbox and outbox (MariaDB >= 10.6, MySQL 8).
-- {{.Inbox}} and the other names are identifiers quoted with double
-- quotes: mysqlstore runs with sql_mode ANSI_QUOTES. Times are Unix
-- microseconds (BIGINT). Every statement is idempotent (IF NOT EXISTS):
-- DDL commits on its own, so a step cut short is run again whole.

-- One row per (consumer, event id) ever applied. The primary key is the
-- dedupe check: the insert of a second copy fails with 1062.
CREATE TABLE IF NOT EXISTS {{.Inbox}} (
    consumer     VARCHAR(255)   NOT NULL,
    event_id     VARCHAR(255)   NOT NULL,
    payload_hash VARBINARY(64),
    received_at  BIGINT         NOT NULL,
    PRIMARY KEY (consumer, event_id),
    INDEX {{.InboxReceivedIndex}} (received_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- External effects recorded in the handler's transaction, carried out by a
-- relay with the row's idempotency key.
CREATE TABLE IF NOT EXISTS {{.Outbox}} (
    id              BIGINT         NOT NULL AUTO_INCREMENT PRIMARY KEY,
    kind            VARCHAR(255)   NOT NULL,
    idempotency_key VARCHAR(255)   NOT NULL,
    payload         LONGBLOB       NOT NULL,
    payload_hash    VARBINARY(64)  NOT NULL,
    headers         LONGTEXT       NOT NULL,
    consumer        VARCHAR(255)   NOT NULL DEFAULT '',
    event_id        VARCHAR(255)   NOT NULL DEFAULT '',
    state           VARCHAR(16)    NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'claimed', 'done', 'dead')),
    attempts        INT            NOT NULL DEFAULT 0,
    last_error      TEXT           NOT NULL,
    created_at      BIGINT         NOT NULL,
    available_at    BIGINT         NOT NULL,
    claimed_until   BIGINT,
    done_at         BIGINT,
    UNIQUE KEY (idempotency_key),
    INDEX {{.OutboxDueIndex}} (state, available_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
