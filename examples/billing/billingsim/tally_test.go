package billingsim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
)

// A pass whose commit failed with an unknown outcome, then a pass that
// found the inbox row: the commit happened and no pass will report the
// event applied, so the duplicate stands for that report. This is what
// stalled TestDemoBrokers/sqs/postgres under load (the first pass of the
// producer waited for an applied report that never came). If the
// applying pass reports after all (a duplicate reported before the
// applied pass it saw), the duplicate counts as one again.
func TestTallyCommitUnknown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	unknown := fmt.Errorf("ackgap inbox: commit: %w: %w", ackgap.ErrCommitUnknown, ackgap.ErrStoreUnavailable)
	newT := func() *tally {
		return newTally(&plan{events: make([]event, 2), expectedDups: map[string]int{"E1": 0, "E2": 1}})
	}
	report := func(tl *tally, id string, o ackgap.Outcome, err error) {
		tl.observe(ctx, &ackgap.InboxReport{EventID: id, Outcome: o, Err: err, Received: time.Now(), Committed: time.Now()})
	}

	tl := newT()
	report(tl, "E1", ackgap.OutcomeFailed, unknown)
	require.Zero(t, tl.appliedEvents)
	report(tl, "E1", ackgap.OutcomeDuplicate, nil)
	require.Equal(t, 1, tl.appliedEvents, "the duplicate shows the unknown commit happened")
	require.Equal(t, 1, tl.appliedUnreported)
	require.Zero(t, tl.events["E1"].dups, "not one of the injected duplicates")
	report(tl, "E2", ackgap.OutcomeApplied, nil)
	report(tl, "E2", ackgap.OutcomeDuplicate, nil)
	require.True(t, tl.complete())
	require.Zero(t, tl.twice)

	// A failure before the commit proves nothing: a duplicate then is one
	// of another pass that applied (and will report).
	tl = newT()
	report(tl, "E2", ackgap.OutcomeFailed, ackgap.ErrStoreUnavailable)
	report(tl, "E2", ackgap.OutcomeDuplicate, nil)
	require.Zero(t, tl.appliedEvents)
	require.Equal(t, 1, tl.events["E2"].dups)

	// The applying pass reports after the duplicate that stood for it.
	tl = newT()
	report(tl, "E2", ackgap.OutcomeFailed, unknown)
	report(tl, "E2", ackgap.OutcomeDuplicate, nil)
	report(tl, "E2", ackgap.OutcomeApplied, nil)
	require.Equal(t, 1, tl.appliedEvents)
	require.Zero(t, tl.appliedUnreported)
	require.Zero(t, tl.twice)
	require.Equal(t, 1, tl.events["E2"].dups)
	report(tl, "E2", ackgap.OutcomeApplied, nil)
	require.Equal(t, 1, tl.twice, "a second applied report is a second application")
}
