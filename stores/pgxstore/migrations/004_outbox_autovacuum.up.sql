-- ackgap 004 (PostgreSQL): vacuum the outbox as the queue it is.
--
-- Every outbox row is written three times (inserted pending, rewritten when
-- a relay claims it, rewritten when it is done), and each rewrite of a
-- pending row leaves a dead entry in the due index (available_at, partial on
-- pending and claimed rows) until VACUUM removes it or a scan marks it
-- killed. With PostgreSQL's default (vacuum after 20 % of the table is
-- dead) a table of 1.1 million rows waits for 220,000 dead rows, and a
-- claim that meets them walks them all: measured 460 ms for the first claim
-- after 1,000,000 rows went done (benchmarks/RESULTS.md). Vacuuming after
-- 1 % (at least 1,000 rows) keeps the due index short. A transaction held
-- open for long (a backup, an idle session) still keeps dead rows alive:
-- no setting here can help then.
ALTER TABLE {{.Outbox}} SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.01,
    autovacuum_analyze_scale_factor = 0.02
);
