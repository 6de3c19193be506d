DROP TABLE IF EXISTS {{.Progress}};
