-- ackgap 001: inbox and outbox (PostgreSQL).
-- {{.Inbox}} and the other names are quoted identifiers filled in by
-- pgxstore.Migrations; users of goose or atlas get the rendered SQL from it.

-- One row per (consumer, event id) ever applied. The primary key is the
-- dedupe check: the insert of a second copy conflicts.
CREATE TABLE {{.Inbox}} (
    consumer     text        NOT NULL,
    event_id     text        NOT NULL,
    payload_hash bytea,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);

CREATE INDEX {{.InboxReceivedIndex}} ON {{.Inbox}} (received_at);

-- External effects recorded in the handler's transaction, carried out by a
-- relay with the row's idempotency key.
CREATE TABLE {{.Outbox}} (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind            text        NOT NULL,
    idempotency_key text        NOT NULL UNIQUE,
    payload         bytea       NOT NULL,
    payload_hash    bytea       NOT NULL,
    headers         jsonb       NOT NULL DEFAULT '{}',
    consumer        text        NOT NULL DEFAULT '',
    event_id        text        NOT NULL DEFAULT '',
    state           text        NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'claimed', 'done', 'dead')),
    attempts        integer     NOT NULL DEFAULT 0,
    last_error      text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    available_at    timestamptz NOT NULL DEFAULT now(),
    claimed_until   timestamptz,
    done_at         timestamptz
);

CREATE INDEX {{.OutboxDueIndex}} ON {{.Outbox}} (available_at) WHERE state IN ('pending', 'claimed');
