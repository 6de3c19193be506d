-- ackgap 004 down: drops the consumers' progress rows.
DROP TABLE IF EXISTS {{.Progress}};
