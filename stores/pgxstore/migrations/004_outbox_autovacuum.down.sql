-- ackgap 004 down: the outbox is vacuumed with the database's defaults.
ALTER TABLE {{.Outbox}} RESET (
    autovacuum_vacuum_scale_factor,
    autovacuum_vacuum_threshold,
    autovacuum_vacuum_insert_scale_factor,
    autovacuum_analyze_scale_factor
);
