package pgxstore

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// TestTransitionSQLPlaceholders: for every shape, the cached text uses
// exactly the placeholders $1..$n of the n arguments transitionArgs lays
// out, and a second call with other values returns the same text.
func TestTransitionSQLPlaceholders(t *testing.T) {
	s := &Store{}
	s.names.Inbox, s.names.Outbox = `"ackgap_inbox"`, `"ackgap_outbox"`
	placeholder := regexp.MustCompile(`\$(\d+)`)
	for _, inbox := range []*stores.BeginInboxParams{nil, {Consumer: "c", EventID: "e"}} {
		for _, from := range [][]string{nil, {"a"}, {"a", "b"}, {"a", "b", "c"}} {
			for rows := range 3 {
				for _, set := range [][]ackgap.Assignment{nil, {{Column: "note", Value: "x"}, {Column: "stock", Value: 2, Op: ackgap.SetSubtract}}} {
					to, guards := "b", []ackgap.Guard(nil)
					if from == nil {
						// No state: a guard on another column.
						to, guards = "", []ackgap.Guard{{Column: "stock", Op: ackgap.GuardGreaterOrEqual, Value: 2}, {Column: "v", Op: ackgap.GuardEqual, Value: 7}}
						if set == nil {
							continue
						}
					}
					p := &stores.QueueTransitionParams{Transition: ackgap.Transition{Table: "orders", Key: "o1", From: from, To: to, Guards: guards, Set: set}}
					for i := range rows {
						p.Outbox = append(p.Outbox, ackgap.OutboxEntry{Kind: "k", IdempotencyKey: "key" + strconv.Itoa(i)})
					}
					q, err := newQueuedTransition(p)
					require.NoError(t, err)
					sql, args := s.transitionSQL(q, inbox)
					seen := map[int]bool{}
					for _, m := range placeholder.FindAllStringSubmatch(sql, -1) {
						n, _ := strconv.Atoi(m[1])
						seen[n] = true
					}
					require.Len(t, seen, len(args), "%s", sql)
					for n := 1; n <= len(args); n++ {
						require.True(t, seen[n], "$%d missing in %s", n, sql)
					}
					p.Transition.Key = "o2"
					q2, err := newQueuedTransition(p)
					require.NoError(t, err)
					again, args2 := s.transitionSQL(q2, inbox)
					require.Equal(t, sql, again)
					require.Contains(t, args2, "o2")
				}
			}
		}
	}
}
