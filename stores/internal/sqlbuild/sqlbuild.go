// Package sqlbuild holds the SQL that the SQL stores share: guarded
// transition statements, and the loading, rendering and planning of
// versioned migrations. It imports no driver.
package sqlbuild

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/ident"
	"github.com/ackgap/ackgap/stores"
)

// Dialect is what differs between the SQL stores' statements.
type Dialect struct {
	// Placeholder returns the bind parameter for position n (1-based).
	Placeholder func(n int) string
}

// Postgres numbers parameters $1, $2, ...
var Postgres = Dialect{Placeholder: func(n int) string { return "$" + strconv.Itoa(n) }}

// SQLite numbers parameters ?1, ?2, ...
var SQLite = Dialect{Placeholder: func(n int) string { return "?" + strconv.Itoa(n) }}

// Transition returns the guarded UPDATE for p with its arguments, and the
// SELECT that reads the row's current state (one column; the empty string
// when p.To is "", which sets no state) when the UPDATE changed nothing.
// p must have passed WithDefaults and Validate.
func Transition(d Dialect, p *ackgap.Transition) (update string, args []any, current string, currentArgs []any) {
	table := ident.Quote(p.Table)
	if p.Schema != "" {
		table = ident.Quote(p.Schema) + "." + table
	}
	state := ident.Quote(p.StateColumn)
	key := ident.Quote(p.KeyColumn)

	args = make([]any, 0, 2+len(p.From)+len(p.Set)+len(p.Guards))
	bind := func(v any) string {
		args = append(args, v)
		return d.Placeholder(len(args))
	}
	var set []string
	if p.To != "" {
		set = append(set, state+" = "+bind(p.To))
	}
	set = append(set, SetClauses(p, bind)...)
	where := key + " = " + bind(p.Key)
	if p.To != "" {
		from := make([]string, len(p.From))
		for i, f := range p.From {
			from[i] = bind(f)
		}
		where += " AND " + state + " IN (" + strings.Join(from, ", ") + ")"
	}
	where += GuardClauses(p, bind)
	update = "UPDATE " + table + " SET " + strings.Join(set, ", ") + " WHERE " + where
	col := state
	if p.To == "" {
		col = "''"
	}
	current = "SELECT " + col + " FROM " + table + " WHERE " + key + " = " + d.Placeholder(1)
	return update, args, current, []any{p.Key}
}

// SetClauses returns the assignments of p other than its state: the
// version increment, then each of p.Set ("col" = $n, or "col" = "col" +
// $n for SetAdd, - for SetSubtract), binding values with bind in that
// order.
func SetClauses(p *ackgap.Transition, bind func(any) string) []string {
	var set []string
	if p.VersionColumn != "" {
		v := ident.Quote(p.VersionColumn)
		set = append(set, v+" = "+v+" + 1")
	}
	for _, a := range p.Set {
		c := ident.Quote(a.Column)
		switch a.Op {
		case ackgap.SetAdd, ackgap.SetSubtract:
			set = append(set, c+" = "+c+" "+string(a.Op)+" "+bind(a.Value))
		default:
			set = append(set, c+" = "+bind(a.Value))
		}
	}
	return set
}

// GuardClauses returns p.Guards as WHERE conditions, each preceded by
// " AND ", binding values with bind in order. p must have passed Validate,
// which admits only the GuardOp constants.
func GuardClauses(p *ackgap.Transition, bind func(any) string) string {
	var b strings.Builder
	for _, g := range p.Guards {
		b.WriteString(" AND " + ident.Quote(g.Column) + " " + string(g.Op) + " " + bind(g.Value))
	}
	return b.String()
}

// Migration is stores.Migration, so the stores can return it.
type Migration = stores.Migration

// LoadMigrations reads files named NNN_name.up.sql and NNN_name.down.sql
// from dir in fsys, renders each as a text/template with names (already
// quoted identifiers), and returns them ordered by version. Every version
// needs both files.
func LoadMigrations(fsys fs.FS, dir string, names any) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		file := e.Name()
		var up bool
		switch {
		case strings.HasSuffix(file, ".up.sql"):
			up = true
		case strings.HasSuffix(file, ".down.sql"):
		default:
			continue
		}
		num, name, ok := strings.Cut(strings.TrimSuffix(strings.TrimSuffix(file, ".up.sql"), ".down.sql"), "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("migration file %q: want NNN_name.up.sql or NNN_name.down.sql", file)
		}
		raw, err := fs.ReadFile(fsys, path.Join(dir, file))
		if err != nil {
			return nil, err
		}
		tmpl, err := template.New(file).Option("missingkey=error").Parse(string(raw))
		if err != nil {
			return nil, fmt.Errorf("migration file %q: %w", file, err)
		}
		var out strings.Builder
		if err := tmpl.Execute(&out, names); err != nil {
			return nil, fmt.Errorf("migration file %q: %w", file, err)
		}
		m := byVersion[version]
		if m == nil {
			m = &Migration{Version: version, Name: name}
			byVersion[version] = m
		}
		if up {
			m.UpSQL = out.String()
		} else {
			m.DownSQL = out.String()
		}
	}
	out := make([]Migration, 0, len(byVersion))
	for _, m := range byVersion {
		if m.UpSQL == "" || m.DownSQL == "" {
			return nil, fmt.Errorf("migration %03d_%s lacks its up or down file", m.Version, m.Name)
		}
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	return out, nil
}

// Step is one migration to run, up or down.
type Step struct {
	Migration
	Down bool
}

// SQL returns the statement text of the step's direction.
func (s Step) SQL() string {
	if s.Down {
		return s.DownSQL
	}
	return s.UpSQL
}

// Plan returns the steps that take a database at version current to what p
// asks, in the order to run them.
func Plan(all []Migration, current int, p *stores.MigrateParams) ([]Step, error) {
	newest := 0
	if len(all) > 0 {
		newest = all[len(all)-1].Version
	}
	target := p.TargetVersion
	if !p.Down && target == 0 {
		target = newest
	}
	if target < 0 || target > newest {
		return nil, fmt.Errorf("TargetVersion %d is outside 0..%d", target, newest)
	}
	var steps []Step
	if !p.Down {
		if target < current {
			return nil, fmt.Errorf("TargetVersion %d is below the current version %d: migrate down instead", target, current)
		}
		for _, m := range all {
			if m.Version > current && m.Version <= target {
				steps = append(steps, Step{Migration: m})
			}
		}
		return steps, nil
	}
	if target > current {
		return nil, fmt.Errorf("TargetVersion %d is above the current version %d: migrate up instead", target, current)
	}
	for i := len(all) - 1; i >= 0; i-- {
		if m := all[i]; m.Version <= current && m.Version > target {
			steps = append(steps, Step{Migration: m, Down: true})
		}
	}
	return steps, nil
}

// Names are the quoted names migrations and statements use. Tables are
// schema-qualified when a schema is set; index names never are (both
// PostgreSQL and SQLite put an index in its table's schema).
type Names struct {
	Inbox, Outbox, Migration           string
	InboxReceivedIndex, OutboxDueIndex string
	// MigrationLockKey is a stable text to derive an advisory lock from.
	MigrationLockKey string
	// OutboxDoneIndex and OutboxDeadIndex index done and dead outbox rows
	// (migration 002); unqualified, like the other index names.
	OutboxDoneIndex, OutboxDeadIndex string
	// OutboxNotifyFunc is the PostgreSQL trigger function that notifies
	// relays of new outbox rows, schema-qualified when a schema is set.
	OutboxNotifyFunc string
	// Progress is the consumers' progress table (pgxstore migration 005,
	// sqlitestore 004, mysqlstore 004): a partition's watermark per consumer.
	Progress string
	// SchemaDot is the quoted schema followed by a dot, or "" without a
	// schema: it qualifies index names in DROP INDEX.
	SchemaDot string
}

// TableNames returns the names for schema ("" = unqualified) and prefix
// ("" = stores.TablePrefixDefault).
func TableNames(schema, prefix string) Names {
	if prefix == "" {
		prefix = stores.TablePrefixDefault
	}
	schemaDot := ""
	if schema != "" {
		schemaDot = ident.Quote(schema) + "."
	}
	q := func(name string) string {
		if schema == "" {
			return ident.Quote(name)
		}
		return ident.Quote(schema) + "." + ident.Quote(name)
	}
	return Names{
		Inbox:              q(prefix + "inbox"),
		Outbox:             q(prefix + "outbox"),
		Migration:          q(prefix + "migration"),
		InboxReceivedIndex: ident.Quote(prefix + "inbox_received_at_idx"),
		OutboxDueIndex:     ident.Quote(prefix + "outbox_due_idx"),
		MigrationLockKey:   q(prefix + "migration"),
		OutboxDoneIndex:    ident.Quote(prefix + "outbox_done_at_idx"),
		OutboxDeadIndex:    ident.Quote(prefix + "outbox_dead_idx"),
		OutboxNotifyFunc:   q(prefix + "outbox_notify"),
		Progress:           q(prefix + "progress"),
		SchemaDot:          schemaDot,
	}
}

// MigrationTx is one migration step's transaction in a store's dialect;
// the store translates its driver's errors.
type MigrationTx interface {
	// Version takes the store's migration lock if it needs one, creates the
	// version table (and schema) if missing, and returns the current
	// version.
	Version(ctx context.Context) (int, error)
	// Apply runs step's SQL and adds (up) or removes (down) its row in the
	// version table.
	Apply(ctx context.Context, step Step) error
	Commit(ctx context.Context) error
	// Rollback ends the transaction if it is still open.
	Rollback(ctx context.Context)
}

// Migrate runs the steps that take the database to what p asks, one step
// per transaction from begin, re-reading the version in each, so a
// concurrent migrator's work (serialised by the store's lock) is never
// repeated.
func Migrate(ctx context.Context, all []Migration, p *stores.MigrateParams, begin func(context.Context) (MigrationTx, error)) (*stores.MigrateResult, error) {
	res := &stores.MigrateResult{}
	for {
		done, err := migrateStep(ctx, all, p, begin, res)
		if err != nil || done {
			return res, err
		}
	}
}

func migrateStep(ctx context.Context, all []Migration, p *stores.MigrateParams, begin func(context.Context) (MigrationTx, error), res *stores.MigrateResult) (done bool, err error) {
	tx, err := begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	current, err := tx.Version(ctx)
	if err != nil {
		return false, err
	}
	res.Version = current
	steps, err := Plan(all, current, p)
	if err != nil {
		return false, fmt.Errorf("migrate: %w", err)
	}
	if len(steps) == 0 {
		return true, nil
	}
	step := steps[0]
	if err := tx.Apply(ctx, step); err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	res.Applied = append(res.Applied, step.Version)
	res.Version = step.Version
	if step.Down {
		res.Version = step.Version - 1
	}
	return len(steps) == 1, nil
}
