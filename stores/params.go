package stores

// TablePrefixDefault is the prefix of ackgap's table names when a store's
// TablePrefix is empty: ackgap_inbox, ackgap_outbox, ackgap_migration.
const TablePrefixDefault = "ackgap_"
