-- ackgap 001: inbox and outbox (SQLite).
-- {{.Inbox}} and the other names are quoted identifiers filled in by
-- sqlitestore.Migrations. Times are Unix microseconds (INTEGER).

-- One row per (consumer, event id) ever applied. The primary key is the
-- dedupe check: the insert of a second copy conflicts.
CREATE TABLE {{.Inbox}} (
    consumer     TEXT    NOT NULL,
    event_id     TEXT    NOT NULL,
    payload_hash BLOB,
    received_at  INTEGER NOT NULL,
    PRIMARY KEY (consumer, event_id)
) WITHOUT ROWID;

CREATE INDEX {{.InboxReceivedIndex}} ON {{.Inbox}} (received_at);

-- External effects recorded in the handler's transaction, carried out by a
-- relay with the row's idempotency key.
CREATE TABLE {{.Outbox}} (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    kind            TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL UNIQUE,
    payload         BLOB    NOT NULL,
    payload_hash    BLOB    NOT NULL,
    headers         TEXT    NOT NULL DEFAULT '{}',
    consumer        TEXT    NOT NULL DEFAULT '',
    event_id        TEXT    NOT NULL DEFAULT '',
    state           TEXT    NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'claimed', 'done', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT    NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    available_at    INTEGER NOT NULL,
    claimed_until   INTEGER,
    done_at         INTEGER
);

CREATE INDEX {{.OutboxDueIndex}} ON {{.Outbox}} (available_at) WHERE state IN ('pending', 'claimed');
