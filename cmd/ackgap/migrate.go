package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/ackgap/ackgap/stores"
)

func (a *app) migrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply ackgap's migrations, show which are applied, or print their SQL",
		Example: `  ackgap migrate up
  ackgap migrate status
  ackgap migrate sql > ackgap.sql`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.migrateUpCommand(), a.migrateStatusCommand(), a.migrateSQLCommand())
	return cmd
}

// migrationView is one migration in JSON output.
type migrationView struct {
	Version   int        `json:"version"`
	Name      string     `json:"name"`
	Applied   bool       `json:"applied"`
	AppliedAt *time.Time `json:"applied_at,omitempty"`
}

func (a *app) migrateUpCommand() *cobra.Command {
	var target int
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Apply the pending migrations (under the store's migration lock)",
		Long: `Apply the pending migrations up to the newest version, or to --target.
Each step runs in its own transaction under the store's migration lock
(PostgreSQL: an advisory lock; SQLite: BEGIN IMMEDIATE), so instances that
migrate at once apply each step once. A missing SQLite file is created.`,
		Example: `  ackgap migrate up --dsn 'postgres://app@db:5432/app' --schema ackgap
  ackgap migrate up --dsn sqlite:./app.db --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if target < 0 {
				return usageErrorf("--target is %d, must be 0 (newest) or a version", target)
			}
			mode := openCreate
			if dryRun {
				mode = openExisting
			}
			s, closeFn, err := a.open(cmd.Context(), mode)
			if err != nil {
				return err
			}
			defer closeFn()
			st, err := s.MigrationStatus(cmd.Context(), &stores.MigrationStatusParams{})
			if err != nil {
				return failed(err)
			}
			if target > st.Latest {
				return usageErrorf("--target %d is past the newest version, %d", target, st.Latest)
			}
			if dryRun {
				var todo []stores.MigrationState
				for _, m := range st.Pending() {
					if target == 0 || m.Version <= target {
						todo = append(todo, m)
					}
				}
				return a.printMigrations(cmd, todo, fmt.Sprintf("would apply %d migration(s); version is %d", len(todo), st.Version))
			}
			res, err := s.Migrate(cmd.Context(), &stores.MigrateParams{TargetVersion: target})
			if err != nil {
				return failed(err)
			}
			var applied []stores.MigrationState
			for _, v := range res.Applied {
				for _, m := range st.Migrations {
					if m.Version == v {
						applied = append(applied, stores.MigrationState{Version: v, Name: m.Name, Applied: true})
					}
				}
			}
			return a.printMigrations(cmd, applied, fmt.Sprintf("applied %d migration(s); version is %d", len(applied), res.Version))
		},
	}
	cmd.Flags().IntVar(&target, "target", 0, "version to migrate up to; 0 means the newest")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the migrations that would be applied, apply none")
	return cmd
}

func (a *app) migrateStatusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show applied and pending migrations (exit code 4 when some are pending)",
		Example: `  ackgap migrate status --dsn sqlite:./app.db
  ackgap migrate status --json | jq '.pending'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, closeFn, err := a.open(cmd.Context(), openExisting)
			if err != nil {
				return err
			}
			defer closeFn()
			st, err := s.MigrationStatus(cmd.Context(), &stores.MigrationStatusParams{})
			if err != nil {
				return failed(err)
			}
			pending := len(st.Pending())
			if a.json {
				out := struct {
					Version    int             `json:"version"`
					Latest     int             `json:"latest"`
					Pending    int             `json:"pending"`
					Migrations []migrationView `json:"migrations"`
				}{st.Version, st.Latest, pending, migrationViews(st.Migrations)}
				if err := printJSON(cmd.OutOrStdout(), out); err != nil {
					return failed(err)
				}
			} else {
				t := newTable(cmd.OutOrStdout(), "VERSION", "NAME", "APPLIED_AT")
				for _, m := range st.Migrations {
					at := "pending"
					if m.Applied {
						at = fmtTime(m.AppliedAt)
					}
					t.row(strconv.Itoa(m.Version), m.Name, at)
				}
				if err := t.flush(); err != nil {
					return failed(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "version %d of %d; %d pending\n", st.Version, st.Latest, pending)
			}
			if pending > 0 {
				return &exitError{code: exitPending}
			}
			return nil
		},
	}
}

func (a *app) migrateSQLCommand() *cobra.Command {
	var down bool
	var version int
	cmd := &cobra.Command{
		Use:   "sql",
		Short: "Print the migrations' SQL for goose, atlas, flyway or a DBA (connects to nothing)",
		Long: `Print the SQL of ackgap's migrations, rendered with --schema and --prefix, for
users who apply migrations with their own tool. The dialect comes from --dsn;
nothing is connected to. Each migration starts with a comment naming it.`,
		Example: `  ackgap migrate sql --dsn postgres:// --schema ackgap > ackgap.up.sql
  ackgap migrate sql --dsn sqlite:x --down --version 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ms, err := a.migrations()
			if err != nil {
				return err
			}
			if version < 0 || version > len(ms) {
				return usageErrorf("--version is %d, must be 0 (all) or in [1, %d]", version, len(ms))
			}
			if down {
				for i, j := 0, len(ms)-1; i < j; i, j = i+1, j-1 {
					ms[i], ms[j] = ms[j], ms[i]
				}
			}
			if a.json {
				type sqlView struct {
					Version int    `json:"version"`
					Name    string `json:"name"`
					Up      string `json:"up"`
					Down    string `json:"down"`
				}
				var out []sqlView
				for _, m := range ms {
					if version == 0 || m.Version == version {
						out = append(out, sqlView{m.Version, m.Name, m.UpSQL, m.DownSQL})
					}
				}
				return failed(printJSON(cmd.OutOrStdout(), out))
			}
			w := cmd.OutOrStdout()
			for _, m := range ms {
				if version != 0 && m.Version != version {
					continue
				}
				body, dir := m.UpSQL, "up"
				if down {
					body, dir = m.DownSQL, "down"
				}
				fmt.Fprintf(w, "-- ackgap migration %03d_%s (%s)\n%s\n", m.Version, m.Name, dir, body)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&down, "down", false, "print the down migrations, newest first")
	cmd.Flags().IntVar(&version, "version", 0, "print only this version; 0 means all")
	return cmd
}

func (a *app) printMigrations(cmd *cobra.Command, ms []stores.MigrationState, summary string) error {
	if a.json {
		out := struct {
			Summary    string          `json:"summary"`
			Migrations []migrationView `json:"migrations"`
		}{summary, migrationViews(ms)}
		return failed(printJSON(cmd.OutOrStdout(), out))
	}
	if len(ms) > 0 {
		t := newTable(cmd.OutOrStdout(), "VERSION", "NAME")
		for _, m := range ms {
			t.row(strconv.Itoa(m.Version), m.Name)
		}
		if err := t.flush(); err != nil {
			return failed(err)
		}
	}
	fmt.Fprintln(cmd.OutOrStdout(), summary)
	return nil
}

func migrationViews(ms []stores.MigrationState) []migrationView {
	out := make([]migrationView, 0, len(ms))
	for _, m := range ms {
		v := migrationView{Version: m.Version, Name: m.Name, Applied: m.Applied}
		if m.Applied && !m.AppliedAt.IsZero() {
			at := m.AppliedAt.UTC()
			v.AppliedAt = &at
		}
		out = append(out, v)
	}
	return out
}
