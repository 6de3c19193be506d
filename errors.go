package ackgap

import (
	"errors"
	"fmt"
)

// Sentinel errors. Stores translate driver errors into these at their
// boundary, so callers test them with errors.Is without importing a driver.
var (
	// ErrMissingEventID: the message carries no event id. The event id is
	// assigned by the producer and must travel with every copy (Watermill
	// metadata, Kafka header, SQS message attribute); ackgap never generates
	// one, because a generated id differs per delivery and dedupes nothing.
	ErrMissingEventID = errors.New("ackgap: message has no event id")

	// ErrEventIDTooLong: the event id is longer than the configured limit
	// (ackgap.MaxEventIDBytesDefault unless configured).
	ErrEventIDTooLong = errors.New("ackgap: event id too long")

	// ErrEventIDInvalid: the event id is not valid UTF-8 or holds a NUL
	// byte. Such an id cannot be stored as text (PostgreSQL refuses it
	// with SQLSTATE 22021) nor sent as an SQS String attribute, and no
	// retry changes it, so it is rejected before the inbox insert.
	ErrEventIDInvalid = errors.New("ackgap: event id is not valid UTF-8 text without NUL")

	// ErrEventIDConflict: an event id already in the inbox arrived again with
	// a different payload. It is not a plain duplicate: a producer reused an
	// id for another event, and silently skipping it would lose that event.
	ErrEventIDConflict = errors.New("ackgap: event id reused with a different payload")

	// ErrIdempotencyConflict: an outbox row with this idempotency key exists
	// with a different payload. Like HTTP idempotency keys (IETF draft
	// "The Idempotency-Key HTTP Header Field"), one key names one request.
	ErrIdempotencyConflict = errors.New("ackgap: outbox idempotency key reused with a different payload")

	// ErrTransitionRefused: a guarded transition found its row in a state the
	// transition does not start from, or found no row.
	ErrTransitionRefused = errors.New("ackgap: guarded transition refused")

	// ErrBadPayload: the message payload does not parse.
	ErrBadPayload = errors.New("ackgap: payload does not parse")

	// ErrStoreUnavailable: the database could not be reached or the
	// connection broke (connection refused or reset, pool closed, database
	// busy past its timeout). Messages that fail with it are retried, never
	// dead-lettered: the message is fine, the database is not.
	ErrStoreUnavailable = errors.New("ackgap: store unavailable")

	// ErrStoreMisconfigured: the database is not set up for the code that
	// runs on it (a table, column, schema or database missing, missing
	// grants or credentials): a deploy mistake, not a bad message. Stores
	// return it together with ErrStoreUnavailable (errors.Is matches both),
	// so the message is redelivered, never dead-lettered, until the deploy
	// is fixed (ackgap migrate up, the right schema, the grants).
	// docs/errors.md lists the codes of each store.
	ErrStoreMisconfigured = errors.New("ackgap: database not set up for this code (not migrated, wrong schema or database, missing grants or credentials)")

	// ErrInvalidData: the database refused a statement because of the data
	// it was given (invalid encoding, a value too long or out of range, a
	// check or not-null constraint). Retrying the same message cannot
	// change that: stores return it inside a permanent error with reason
	// ReasonInvalidData, and the message is dead-lettered. docs/errors.md
	// lists the codes of each store.
	ErrInvalidData = errors.New("ackgap: the database refused the data")

	// ErrUnencodable: a broker adapter cannot encode the message for its
	// broker (SQS: more than 10 message attributes, an attribute name SQS
	// refuses). Publishing it again cannot succeed; the dead-letter path
	// of the router and of kafkabroker.BatchConsumer then sends a
	// sanitised copy instead ([MetadataDeadLetterSanitized]).
	ErrUnencodable = errors.New("ackgap: message cannot be encoded for the broker")

	// ErrDuplicate: the statement ran in a transaction whose inbox insert
	// found the event already applied (a pipelined inbox insert:
	// stores.Store.BeginInboxDeferred). The
	// transaction was rolled back; the inbox middleware acks the message as
	// a duplicate whatever the handler returns. Handlers just return it.
	ErrDuplicate = errors.New("ackgap: event already applied (duplicate delivery); transaction rolled back")

	// ErrCommitUnknown: the store's commit call failed, so the outcome is
	// unknown to the caller (stores.Store.CommitTx): the transaction may
	// have committed all the same, for example a COMMIT that the database
	// ran after the client's context ran out (pgxstore sends a
	// transaction's statements and its COMMIT in one round trip). The inbox
	// middleware and package batch wrap it in the error of such an attempt
	// (InboxReport.Outcome failed): the message is not acked, and its
	// redelivery either applies it or, if the commit did happen, finds the
	// inbox row and is acked as a duplicate. An observer that counts
	// applied events counts the event once that duplicate comes, since no
	// attempt will report it applied.
	ErrCommitUnknown = errors.New("ackgap: commit outcome unknown")

	// ErrNoTransaction: a transaction-scoped helper was called with a
	// context that does not come from the inbox middleware.
	ErrNoTransaction = errors.New("ackgap: no inbox transaction in context")
)

// Reasons put in the dead-letter metadata (key [MetadataDeadLetterReason]).
// They are stable strings: alerting and redrive tooling may match them.
const (
	ReasonMissingEventID      = "missing_event_id"
	ReasonEventIDTooLong      = "event_id_too_long"
	ReasonEventIDInvalid      = "event_id_invalid"
	ReasonInvalidData         = "invalid_data"
	ReasonEventIDConflict     = "id_reuse_payload_mismatch"
	ReasonTransitionRefused   = "transition_refused"
	ReasonBadPayload          = "bad_payload"
	ReasonIdempotencyConflict = "idempotency_conflict"
	// ReasonInvalidOutboxRow: the handler added an outbox row that fails
	// [OutboxEntry.Validate] (empty Kind or IdempotencyKey, a key over
	// IdempotencyKeyMaxBytes, a payload over OutboxPayloadMaxBytes).
	ReasonInvalidOutboxRow  = "invalid_outbox_row"
	ReasonPermanent         = "permanent"
	ReasonAttemptsExhausted = "attempts_exhausted"
)

// MetadataDeadLetterReason is the metadata key under which the router
// and kafkabroker.BatchConsumer record one of the Reason constants on a
// dead-lettered message. Watermill's own poison-queue keys
// (reason_poisoned: the final error's text, topic_poisoned,
// handler_poisoned, subscriber_poisoned) are set as well; see
// deadletter.go for the other keys of a dead-letter copy.
const MetadataDeadLetterReason = "ackgap_dead_letter_reason"

// PermanentError marks a failure that retrying cannot fix: the router rolls
// the transaction back, sends the message to the dead-letter topic with
// Reason, and acks it. Build it with [Permanent].
type PermanentError struct {
	// Reason is one of the Reason constants or a handler's own short
	// snake_case word; it is never empty.
	Reason string
	// Err is the underlying error; it may be nil.
	Err error
}

// Permanent returns an error that tells the router not to retry the
// message but to dead-letter it with reason (ReasonPermanent if empty).
// errors.Is(err, &PermanentError{}) and [IsPermanent] match it whatever it
// wraps; errors.Is(err, target) also matches what it wraps.
func Permanent(reason string, err error) error {
	if reason == "" {
		reason = ReasonPermanent
	}
	return &PermanentError{Reason: reason, Err: err}
}

// Error returns "permanent failure (reason): err".
func (e *PermanentError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("permanent failure (%s)", e.Reason)
	}
	return fmt.Sprintf("permanent failure (%s): %v", e.Reason, e.Err)
}

// Unwrap returns the wrapped error.
func (e *PermanentError) Unwrap() error { return e.Err }

// Is reports whether target is a *PermanentError, whatever its fields.
func (e *PermanentError) Is(target error) bool {
	_, ok := target.(*PermanentError)
	return ok
}

// IsPermanent reports whether err is or wraps a [PermanentError].
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// ReasonOf returns the Reason of the first [PermanentError] in err's chain,
// or "" if there is none.
func ReasonOf(err error) string {
	var p *PermanentError
	if errors.As(err, &p) {
		return p.Reason
	}
	return ""
}
