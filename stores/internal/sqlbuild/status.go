package sqlbuild

import (
	"time"

	"github.com/ackgap/ackgap/stores"
)

// MigrationStatus joins the known migrations all (oldest first) with the
// applied versions read from a version table (version -> applied_at).
func MigrationStatus(all []Migration, applied map[int]time.Time) *stores.MigrationStatusResult {
	res := &stores.MigrationStatusResult{}
	for _, m := range all {
		at, ok := applied[m.Version]
		res.Migrations = append(res.Migrations, stores.MigrationState{Version: m.Version, Name: m.Name, Applied: ok, AppliedAt: at})
		res.Latest = max(res.Latest, m.Version)
		if ok {
			res.Version = max(res.Version, m.Version)
		}
	}
	return res
}
