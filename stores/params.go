package stores

import (
	"errors"
	"fmt"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/ident"
)

// TablePrefixDefault is the prefix of ackgap's table names when a store's
// TablePrefix is empty: ackgap_inbox, ackgap_outbox, ackgap_migration.
const TablePrefixDefault = "ackgap_"

// WithDefaults returns a copy of p with KeyColumn "id" and StateColumn
// "status" where empty.
func (p TransitionParams) WithDefaults() TransitionParams {
	if p.KeyColumn == "" {
		p.KeyColumn = "id"
	}
	if p.StateColumn == "" {
		p.StateColumn = "status"
	}
	return p
}

// Validate returns every problem with p at once (errors.Join), or nil.
// Call it on the result of WithDefaults.
func (p TransitionParams) Validate() error {
	var errs []error
	if p.Schema != "" {
		errs = append(errs, ident.Valid("Schema", p.Schema))
	}
	errs = append(errs,
		ident.Valid("Table", p.Table),
		ident.Valid("KeyColumn", p.KeyColumn),
		ident.Valid("StateColumn", p.StateColumn))
	if p.VersionColumn != "" {
		errs = append(errs, ident.Valid("VersionColumn", p.VersionColumn))
	}
	if p.Key == nil {
		errs = append(errs, errors.New("Key is nil"))
	}
	if len(p.From) == 0 {
		errs = append(errs, errors.New("From is empty: a guarded transition needs the states it starts from"))
	}
	if p.To == "" {
		errs = append(errs, errors.New("To is empty"))
	}
	for i, a := range p.Set {
		errs = append(errs, ident.Valid(fmt.Sprintf("Set[%d].Column", i), a.Column))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid transition: %w", err)
	}
	return nil
}

// Applied reports whether this call changed the row. Side effects that
// must happen once per state change (counters, outbox rows keyed by
// something other than the row) belong behind it: an already-applied
// transition was made by another event, which already did them.
func (r *TransitionResult) Applied() bool { return r.Outcome == TransitionApplied }

// Err returns nil when the transition applied or was already applied, and
// for a refused one a permanent error (reason ackgap.ReasonTransitionRefused)
// wrapping ackgap.ErrTransitionRefused: returned from a handler, it rolls
// the transaction back and sends the message to the dead-letter topic,
// from where it can be redriven once the row is in a state it starts from.
func (r *TransitionResult) Err() error {
	if r.Outcome != TransitionRefused {
		return nil
	}
	if !r.Found {
		return ackgap.Permanent(ackgap.ReasonTransitionRefused, fmt.Errorf("%w: no such row", ackgap.ErrTransitionRefused))
	}
	return ackgap.Permanent(ackgap.ReasonTransitionRefused, fmt.Errorf("%w: row is in state %q", ackgap.ErrTransitionRefused, r.Previous))
}

// Validate returns every problem with p at once (errors.Join), or nil.
func (p *OutboxInsertParams) Validate() error {
	var errs []error
	if p.Kind == "" {
		errs = append(errs, errors.New("Kind is empty"))
	}
	switch {
	case p.IdempotencyKey == "":
		errs = append(errs, errors.New("IdempotencyKey is empty"))
	case len(p.IdempotencyKey) > IdempotencyKeyMaxBytes:
		errs = append(errs, fmt.Errorf("IdempotencyKey is %d bytes, over the limit of %d", len(p.IdempotencyKey), IdempotencyKeyMaxBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid outbox row: %w", err)
	}
	return nil
}
