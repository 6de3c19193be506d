package ackgapvet

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// programEnv loads testdata/program offline: its dependencies are local
// stubs (replace directives).
func programEnv() []string {
	return append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
}

// programRuns caches the two runs of testdata/program (whole-program and
// per-package) that most tests read: each run loads and type-checks the
// program and builds its SSA, seconds each under -race.
var programRuns struct {
	sync.Mutex
	whole, per *Report
}

// programReport returns the report of testdata/program, whole-program or
// per package, running it once per test binary. Callers must not change it.
func programReport(t *testing.T, perPackage bool) *Report {
	t.Helper()
	programRuns.Lock()
	defer programRuns.Unlock()
	slot := &programRuns.whole
	if perPackage {
		slot = &programRuns.per
	}
	if *slot == nil {
		rep, err := Run(&RunConfig{Dir: filepath.Join("testdata", "program"), Env: programEnv(), PerPackage: perPackage, Checks: []string{"all"}})
		require.NoError(t, err)
		*slot = rep
	}
	return *slot
}

// findingsIn returns the findings of check in file (slash path relative to
// testdata/program): those reported on their own, and those a merged
// finding of a consumer stands for (its related places, each with its own
// message), but not the repeats mergeRepeats folds into one in a function.
func findingsIn(rep *Report, file, check string) []Finding {
	var out []Finding
	in := func(f Finding) {
		if strings.HasSuffix(filepath.ToSlash(f.abs), "/testdata/program/"+file) && f.Check == check {
			out = append(out, f)
		}
	}
	for _, f := range rep.Findings {
		in(f)
		for _, r := range f.Related {
			if r.Check != f.Check || !perFunctionChecks[r.Check] {
				in(Finding{Check: r.Check, File: r.File, Line: r.Line, Column: r.Column, Message: r.Message, abs: r.abs})
			}
		}
	}
	return out
}

// consumerNamed returns the consumer map's entry named name, failing the
// test when there is none.
func consumerNamed(t *testing.T, rep *Report, name string) Consumer {
	t.Helper()
	for _, c := range rep.Consumers {
		if c.Name == name {
			return c
		}
	}
	require.Fail(t, "no consumer "+name, "%+v", rep.Consumers)
	return Consumer{}
}

// requireFindingsAt asserts that check reports exactly lines in file
// (slash path relative to testdata/program), each message holding want.
func requireFindingsAt(t *testing.T, rep *Report, file, check string, lines []int, want string) {
	t.Helper()
	require.Equal(t, lines, findingLines(rep, file, check))
	for _, f := range findingsIn(rep, file, check) {
		require.Contains(t, f.Message, want)
	}
}

// TestWholeProgramPathKinds: each way a consumer reaches its effect in
// testdata/program is followed by the whole-program mode and missed by the
// per-package mode: a handler declared in another package than AddHandler,
// a factory's handler calling an interface, a function field, a goroutine
// started by the handler, a channel to a worker started by main, and an SQS
// receive loop handing messages to a worker pool that calls a store through
// an interface, and a go-queue kq handler given to kq.MustNewQueue by main.
func TestWholeProgramPathKinds(t *testing.T) {
	rep := programReport(t, false)
	require.Empty(t, rep.Skipped)

	cases := []struct {
		kind, file, check, path string
	}{
		{"other package", "orders/orders.go", "earlyack", ""},
		{"other package", "orders/orders.go", "httpclient", ""},
		{"interface (factory)", "notify/notify.go", "effect", "handlers.NotifyHandler.func1 → notify.Email.Notify"},
		{"function field (factory)", "notify/notify.go", "effect", "handlers.HookHandler.func1 → notify.NewHook.func1"},
		{"goroutine", "handlers/handlers.go", "effect", "handlers.Service.AsyncHandler → handlers.Service.refund"},
		{"channel to a worker", "handlers/handlers.go", "effect", "handlers.Service.AsyncHandler → handlers.Worker"},
		{"SQS worker pool + interface", "ledger/ledger.go", "effect", "poller.Poll → poller.worker → ledger.Ledger.Apply"},
		{"go-queue kq handler in another package", "mqs/mqs.go", "effect", "go-queue kq handler Consume"},
		{"channel to a worker that receives in a method", "bridge/bridge.go", "effect", "bridge.B.Forward → bridge.Run"},
		{"channel to a worker that receives three calls down", "deepworker/deepworker.go", "effect", "deepworker.P.Enqueue → deepworker.P.Collect → deepworker.P.stage → deepworker.P.next → deepworker.P.read"},
	}
	for _, c := range cases {
		fs := findingsIn(rep, c.file, c.check)
		require.NotEmpty(t, fs, "%s: no %s finding in %s", c.kind, c.check, c.file)
		if c.path == "" {
			continue
		}
		var paths []string
		for _, f := range fs {
			paths = append(paths, f.Message)
		}
		require.Contains(t, strings.Join(paths, "\n"), c.path, "%s: the finding names the path", c.kind)
	}

	per := programReport(t, true)
	for _, c := range cases {
		if c.kind == "other package" || c.kind == "goroutine" {
			// orders.Handle and Service.AsyncHandler have a Watermill
			// handler's exact signature: the per-package mode takes them
			// for entry points in their own package (docs/ackgapvet.md,
			// per-package limits), and follows a call in the same package
			// even when it is a go statement.
			require.NotEmpty(t, findingsIn(per, c.file, c.check), c.kind)
			continue
		}
		for _, f := range findingsIn(per, c.file, c.check) {
			last := c.path[strings.LastIndex(c.path, "→ ")+len("→ "):]
			require.False(t, strings.HasSuffix(last, f.Function), "the per-package mode follows no %s path: if it now does, update the docs' limits: %+v", c.kind, f)
		}
	}
	require.Empty(t, per.Consumers, "the consumer map is a whole-program result")
}

// findingLines returns the lines of check's findings in file (see
// findingsIn).
func findingLines(rep *Report, file, check string) []int {
	var lines []int
	for _, f := range findingsIn(rep, file, check) {
		lines = append(lines, f.Line)
	}
	return lines
}

// consumerIn returns the map entry declared in file (slash path relative to
// testdata/program), failing the test when there is none.
func consumerIn(t *testing.T, rep *Report, file string) *Consumer {
	t.Helper()
	for i, c := range rep.Consumers {
		if strings.HasSuffix(c.File, "testdata/program/"+file) {
			return &rep.Consumers[i]
		}
	}
	require.FailNow(t, "no consumer in "+file, "%+v", rep.Consumers)
	return nil
}

// TestKqConstructorInAnotherPackage: a kq handler that main gets from a
// constructor of another package returning kq.ConsumeHandler (its type
// unexported) is a consumer, and its Consume is walked (Go-zero-IM's
// NewMsgReadTransfer, wave 14).
func TestKqConstructorInAnotherPackage(t *testing.T) {
	lines := findingLines(programReport(t, false), "mqs/mqs.go", "effect")
	require.Contains(t, lines, 31, "refundMq.Consume's Post: %+v", lines)
}

// TestChannelPassedDown: a fetch loop that sends on a channel parameter
// hands its messages to the caller that made the channel, passed it (a go
// statement through an interface) and receives from it: the caller's work
// is on the consumer's path (wave 14, go_url-shortener's StatService).
func TestChannelPassedDown(t *testing.T) {
	lines := findingLines(programReport(t, false), "clicks/clicks.go", "idemkey")
	require.Contains(t, lines, 52, "the counter Start writes for Consume's events: %+v", lines)
}

// TestHandlerCommitsItself: a handler the poll loop calls through a
// function value, which commits the message itself (through a helper) and
// returns early when its write fails, loses the message: the next
// message's commit passes over it (wave 15, ros-ocp-backend H1).
func TestHandlerCommitsItself(t *testing.T) {
	lines := findingLines(programReport(t, false), "recs/recs.go", "errack")
	require.Contains(t, lines, 34, "the failed write's branch: %+v", lines)
}

// TestAutoCommitDropsFailure: under an auto-commit (librdkafka's
// defaults; kafka-go's ReadMessage with a GroupID) a failure that the
// handler or the loop only logs is committed past, a loss on every
// transient failure and not only on a crash (wave 15, payload-tracker-go
// H1, sources-api-go H1). A loop that ends the process on the failure is
// not reported by errack.
func TestAutoCommitDropsFailure(t *testing.T) {
	rep := programReport(t, false)
	require.ElementsMatch(t, []int{35, 54}, findingLines(rep, "autolog/autolog.go", "errack"))
	for _, f := range findingsIn(rep, "autolog/autolog.go", "errack") {
		require.Contains(t, f.Message, "the auto-commit of", f.Message)
	}

	// One finding per consumer: each logged failure is named by its loop's
	// autocommit finding (one change fixes both), and so is the exit on a
	// failure after ReadMessage committed, which loses the message rather
	// than fetching it again.
	var own []int
	byLine := map[int]Finding{}
	for _, f := range rep.Findings {
		if strings.HasSuffix(filepath.ToSlash(f.abs), "/testdata/program/autolog/autolog.go") {
			own = append(own, f.Line)
			byLine[f.Line] = f
		}
	}
	require.Equal(t, []int{21, 35, 50, 70}, own, "the autocommit findings, and the confluent loop's INSERT (append)")
	require.Contains(t, byLine[50].Message, "a failure that is dropped or only logged is committed past all the same, at testdata/program/autolog/autolog.go:54")
	require.Contains(t, byLine[70].Message, "the exit on a failure at testdata/program/autolog/autolog.go:75 is such a crash: the message was committed, so it is lost")
	require.Equal(t, "poison", byLine[70].Related[0].Check)

	// The map says where these loops acknowledge: at the auto-commit.
	listen := consumerIn(t, rep, "autolog/autolog.go")
	require.Equal(t, "Tracker.Run", listen.Name)
	require.Len(t, listen.Acks, 1)
	require.Equal(t, 21, listen.Acks[0].Line)
	for _, c := range rep.Consumers {
		if c.Name == "Listener.Listen" {
			require.Len(t, c.Acks, 1, "%+v", c)
			require.Contains(t, c.Acks[0].What, "ReadMessage commits the offset as it returns")
			require.Equal(t, 50, c.Acks[0].Line)
		}
	}
}

// TestMessageChannelLoop: a loop over a library's receive-only channel of
// messages that ack themselves (Done or Ack, and a []byte payload) is a
// consumer, its Done the ack (wave 15, gizmo's sqs-sub example).
func TestMessageChannelLoop(t *testing.T) {
	rep := programReport(t, false)
	loop := consumerIn(t, rep, "chanloop/chanloop.go")
	require.Equal(t, KindMsgChan, loop.Kind)
	require.NotEmpty(t, loop.Acks)
	require.Equal(t, "acks with subs.SubscriberMessage.Done", loop.Acks[0].What)
	require.Equal(t, []int{19, 23, 37}, findingLines(rep, "chanloop/chanloop.go", "errack"), "the Done on the failed post, the Done after an unread status, and the helper that calls Done after a logged failure (wave 17, flyte's markMessageDone)")
}

// TestErrorCheckedLater: a write's error read a few statements after the
// call (a timer, a log line in between), in a handler whose result the
// loop drops before its commit, is a failure the commit passes over
// (wave 16, ccx-notification-writer H1).
//
// An err set inside a closure between the call and the check (a timing
// helper's func) is the closure's call's: the check is not paired with the
// earlier write (wave 17, flyte: a false finding of this rule).
func TestErrorCheckedLater(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{42, 52}, findingLines(rep, "latecheck/latecheck.go", "errack"), "HandleMessage's late check and HandleTimed's own failed insert")
	for _, f := range findingsIn(rep, "latecheck/latecheck.go", "errack") {
		require.NotContains(t, f.Message, "line 58", "the check after the timing closure is the closure's call's")
	}
}

// TestFailedKeyedWrite: a DynamoDB PutItem (through the code's own
// interface over the client) is no effect, a repeat leaves the same item,
// but when it fails and the message is deleted all the same, what it
// should have recorded is lost (wave 16, jit-runners H1).
//
// A failed launch whose branch falls back to another attempt and returns
// that one's error is handled, not reported (jit-runners' spot, then on
// demand).
func TestFailedKeyedWrite(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{72}, findingLines(rep, "launcher/launcher.go", "errack"), "the failed Store.Put (PutItem) only, not the spot launch's fallback")
	require.Equal(t, []int{64}, findingLines(rep, "launcher/launcher.go", "effect"), "the PutItem repeats harmlessly; the launch with a ClientToken runs once")
}

// TestAWSLaunchIsEffect: EC2 RunInstances (through the code's own
// interface over the client) launches another instance on every
// redelivery, unless its ClientToken is set: EC2 then launches once per
// token (wave 16, jit-runners H2).
func TestAWSLaunchIsEffect(t *testing.T) {
	effects := findingsIn(programReport(t, false), "launcher/launcher.go", "effect")
	require.Len(t, effects, 1)
	require.Contains(t, effects[0].Message, "RunInstances")
}

// TestConfigMapBuiltElsewhere: a ConfigMap built and returned by a function
// of another package (behind the code's own interface) that never turns
// the background commit off leaves it on; one whose package sets
// "enable.auto.commit" false does not (wave 16, edge-api H1).
func TestConfigMapBuiltElsewhere(t *testing.T) {
	require.Equal(t, []int{18}, findingLines(programReport(t, false), "confmap/confmap.go", "autocommit"))
}

// TestGolambdaSQSHandler: a callback given to m-mizutani/golambda's Start
// in a package that reads SQS records from its event is a Lambda SQS
// handler (wave 16, deepalert's Lambdas).
func TestGolambdaSQSHandler(t *testing.T) {
	rep := programReport(t, false)
	h := consumerIn(t, rep, "golam/golam.go")
	require.Equal(t, KindLambda, h.Kind)
	require.Equal(t, []int{26}, findingLines(rep, "golam/golam.go", "effect"))
}

// TestCreateAfterLookup: a create made only when a lookup found no row (in
// a caller's branch on sql.ErrNoRows or on the zero value a Get returned,
// or after `if found { return }`) is no append: a redelivery finds the
// row (the concurrent race is checkact's). An insert before any lookup is one (wave 15's
// payload-tracker-go, wave 16's edge-api: false append findings).
func TestCreateAfterLookup(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{81}, findingLines(rep, "devices/devices.go", "append"), "the devices and statuses creates are behind lookups")
	require.Equal(t, []int{85}, findingLines(rep, "devices/devices.go", "checkact"), "two deliveries at once both pass the lookup")
}

// TestDeleteBeforeStore: an SQS delete before the store's write is reported
// when the write is reached through the code's own interface (the map
// showed it after the ack while earlyack was silent) and when it is a
// DynamoDB PutItem, a write by key (a new user's consumer).
func TestDeleteBeforeStore(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{44, 60}, findingLines(rep, "earlydel/earlydel.go", "earlyack"))
	var put Consumer
	for _, c := range rep.Consumers {
		if c.Name == "Consumer.RunPut" {
			put = c
		}
	}
	require.Len(t, put.Writes, 1, "the map lists the PutItem: %+v", put)
	require.True(t, put.Writes[0].AfterAck, "after the delete: %+v", put)
}

// TestDroppedError: a write whose error is dropped unread before the
// commit is acked as done when it fails; a status ping's body close is no
// work (wave 17, ovh/cds's hooks; there the write is Redis, which is no
// work to the checker, so that hazard stays missed). The commit may stand
// alone in an if that reads no error (wave 26, Sentry H3).
func TestDroppedError(t *testing.T) {
	require.Equal(t, []int{20, 46}, findingLines(programReport(t, false), "dropped/dropped.go", "errack"))
}

// TestFunctionValuesByShape: a loop that calls its work through a
// function-typed parameter reaches a method value passed to it (a bound
// method wrapper in SSA) and a closure whose parameter names differ from
// the parameter type's.
func TestFunctionValuesByShape(t *testing.T) {
	lines := findingLines(programReport(t, false), "methval/methval.go", "effect")
	require.Contains(t, lines, 55, "Store.Save through st.Save: %+v", lines)
	require.Contains(t, lines, 63, "Notifier's closure through Work: %+v", lines)
}

// TestChannelsByField: a send on one struct field's channel does not reach
// the worker that receives from another field of the same element type.
func TestChannelsByField(t *testing.T) {
	rep := programReport(t, false)
	require.Empty(t, findingsIn(rep, "twochans/twochans.go", "effect"), "Audit sends on audit; Pay reads payouts")
	n := 0
	for _, c := range rep.Consumers {
		if c.Name == "T.Audit" {
			n++
			require.Empty(t, c.Effects, "%+v", c)
		}
	}
	require.Equal(t, 1, n, "%+v", rep.Consumers)
}

// TestForwardsNotEffects: a consumer that only publishes (a splitter, no
// state of its own) gets no effect finding for its publishes; one that
// writes a row and then publishes does (a dual write). The map lists both
// publishes.
func TestForwardsNotEffects(t *testing.T) {
	rep := programReport(t, false)
	var lines []int
	for _, f := range findingsIn(rep, "fanout/fanout.go", "effect") {
		lines = append(lines, f.Line)
	}
	require.Equal(t, []int{31}, lines, "only Ship's publish, after its UPDATE")
	split := 0
	for _, c := range rep.Consumers {
		if c.Name == "F.Split" {
			split++
			require.Len(t, c.Effects, 2, "the map still shows the forwards: %+v", c)
		}
	}
	require.Equal(t, 1, split, "%+v", rep.Consumers)
	per := programReport(t, true)
	require.Empty(t, per.Consumers)
}

// TestConsumerMap: one entry per entry point, with its acks, its effects,
// the path to each, and whether an effect comes after the ack or runs in
// another goroutine.
func TestConsumerMap(t *testing.T) {
	rep := programReport(t, false)
	byName := map[string]Consumer{}
	for _, c := range rep.Consumers {
		byName[c.Name] = c
	}
	require.Len(t, byName, 184, "%+v", rep.Consumers)

	// A receive loop that the call graph reaches from another consumer (a
	// fallback source behind an interface) and whose acks are closures it
	// hands on is still a consumer of its own.
	require.Equal(t, KindSQS, byName["SQS.Read"].Kind, "%+v", rep.Consumers)
	require.Equal(t, KindKafkaGo, byName["Kafka.Read"].Kind)

	// A helper that calls the function it is given (a transaction helper)
	// joins, in the call graph, every closure passed to it; each consumer
	// reaches only its own.
	require.Len(t, byName["Loud"].Effects, 1, "%+v", byName["Loud"])
	require.Empty(t, byName["Quiet"].Effects, "Quiet does not reach Loud's closure: %+v", byName["Quiet"])

	// A consumer base in a module that go.mod replaces with a local
	// directory of the same owner (a monorepo's shared module) is the
	// program's own consumer; the service's handler is on its path.
	base := byName["Base.Run"]
	require.Equal(t, KindKafkaGo, base.Kind, "%+v", rep.Consumers)
	require.True(t, strings.HasSuffix(filepath.ToSlash(base.File), "testdata/programshared/consumer/consumer.go"), base.File)
	require.Len(t, base.Effects, 1, "%+v", base)
	require.Equal(t, []string{"consumer.Base.Run", "viabase.Shipper.Handle"}, base.Effects[0].Path)
	require.Len(t, findingsIn(rep, "viabase/viabase.go", "effect"), 1, "the booking repeats on a redelivery")

	h := byName["Handle"]
	require.Equal(t, KindWatermill, h.Kind)
	require.Equal(t, "testdata/program/orders/orders.go", h.File)
	require.Len(t, h.Effects, 1)
	require.True(t, h.Effects[0].AfterAck, "orders.Handle acks before it posts")
	g := byName["F.Guard"]
	require.Len(t, g.Effects, 1, "%+v", g)
	require.False(t, g.Effects[0].AfterAck, "F.Guard acks only on a branch that returns: %+v", g)
	require.Equal(t, SeverityCritical, h.BlastRadius)
	require.Equal(t, 2, h.Findings, "earlyack and httpclient; the effect after the ack is not repeated by a redelivery")
	require.Empty(t, findingsIn(rep, "orders/orders.go", "effect"), "the post after the ack: earlyack names the loss, no redelivery repeats it")

	// A receive loop that is a method of a generic type: its SSA
	// instance has no package, only its origin has.
	gl := byName["Consumer.Start"]
	require.Equal(t, KindSQS, gl.Kind, "%+v", rep.Consumers)
	require.Len(t, gl.Effects, 1, "%+v", gl)
	require.Len(t, findingsIn(rep, "generic/generic.go", "effect"), 1, "the post repeats on a redelivery")

	// A worker's job that deletes its message first, then posts, reached
	// through a channel and an interface: the post comes after the ack.
	df := byName["RunActions"]
	require.Len(t, df.Effects, 1, "%+v", df)
	require.True(t, df.Effects[0].AfterAck, "job.Execute deletes before it posts: %+v", df)
	require.Empty(t, findingsIn(rep, "deletefirst/deletefirst.go", "effect"), "no redelivery repeats the post")
	require.Len(t, findingsIn(rep, "deletefirst/deletefirst.go", "earlyack"), 1, "the delete before the post loses it on a crash")

	k := byName["PaymentMq.Consume"]
	require.Equal(t, KindKq, k.Kind)
	require.Contains(t, k.Acks[0].What, "after an error too", "the map says kq commits failed messages")
	require.Len(t, k.Effects, 1)

	p := byName["Poll"]
	require.Equal(t, KindSQS, p.Kind)
	require.Len(t, p.Effects, 1)
	require.Equal(t, []string{"poller.Poll", "poller.worker", "ledger.Ledger.Apply"}, p.Effects[0].Path)
	require.True(t, p.Effects[0].Async, "the worker runs beside the loop")
	require.Equal(t, "acks with sqs.Client.DeleteMessage", p.Acks[0].What)

	a := byName["Service.AsyncHandler"]
	require.Len(t, a.Effects, 2)
	for _, e := range a.Effects {
		require.True(t, e.Async, "%+v", e)
	}
	require.Equal(t, "none found", a.Dedupe)

	var text, md bytes.Buffer
	require.NoError(t, WriteMap(&text, rep))
	require.Contains(t, text.String(), "via poller.Poll → poller.worker → ledger.Ledger.Apply")
	require.NoError(t, WriteMapMarkdown(&md, rep))
	require.Equal(t, 2+len(rep.Consumers), strings.Count(md.String(), "\n"), md.String())
}

// TestDiffMode: with -diff, only the consumers whose reachable code changed
// since the base revision are reported, with their findings.
func TestDiffMode(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed for -diff")
	}
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "program"))))
	stubs, err := filepath.Abs(filepath.Join("testdata", "src"))
	require.NoError(t, err)
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	mod = bytes.ReplaceAll(mod, []byte("../src/"), []byte(stubs+"/"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), mod, 0o644))
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "base")

	rep, err := Run(&RunConfig{Dir: dir, Env: programEnv(), DiffBase: "HEAD"})
	require.NoError(t, err)
	require.Empty(t, rep.Consumers, "nothing changed")
	require.Empty(t, rep.Findings)

	ledger := filepath.Join(dir, "ledger", "ledger.go")
	src, err := os.ReadFile(ledger)
	require.NoError(t, err)
	src = bytes.Replace(src, []byte("\"https://ledger.example/payments\""), []byte("\"https://ledger.example/v2/payments\""), 1)
	require.NoError(t, os.WriteFile(ledger, src, 0o644))

	rep, err = Run(&RunConfig{Dir: dir, Env: programEnv(), DiffBase: "HEAD"})
	require.NoError(t, err)
	require.Len(t, rep.Consumers, 1, "only the SQS loop reaches the ledger: %+v", rep.Consumers)
	require.Equal(t, "Poll", rep.Consumers[0].Name)
	require.NotEmpty(t, rep.Findings)
	for _, f := range rep.Findings {
		require.True(t, strings.HasSuffix(f.abs, filepath.Join("ledger", "ledger.go")), "a finding outside the changed consumer: %+v", f)
	}

	// A new file git does not track yet is changed in full: its consumer
	// is reported before it is added.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "newloop"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "newloop", "newloop.go"), []byte(`package newloop

import (
	"context"
	"database/sql"

	"github.com/segmentio/kafka-go"
)

func Run(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		_ = r.CommitMessages(ctx, m)
		_, _ = db.Exec("INSERT INTO seen (v) VALUES ($1)", string(m.Value))
	}
}
`), 0o644))
	rep, err = Run(&RunConfig{Dir: dir, Env: programEnv(), DiffBase: "HEAD"})
	require.NoError(t, err)
	var names []string
	for _, c := range rep.Consumers {
		names = append(names, c.Name)
	}
	require.ElementsMatch(t, []string{"Poll", "Run"}, names, "the ledger's loop and the untracked file's")

	_, err = Run(&RunConfig{Dir: dir, Env: programEnv(), DiffBase: "no-such-revision"})
	require.ErrorContains(t, err, "no-such-revision")
}

// TestWriteJSONKeepsConsumers: a report with a consumer map and no findings
// keeps its map in JSON, and findings is [] rather than null.
func TestWriteJSONKeepsConsumers(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, &Report{Consumers: []Consumer{{Kind: KindSQS, Name: "Poll", Acks: []Step{}, Effects: []Step{}, Writes: []Step{}}}}))
	require.Contains(t, b.String(), `"findings": []`)
	require.Contains(t, b.String(), `"name": "Poll"`)
}

// TestNilAckBelowTheLoop: a failed write turned into `return nil` two
// calls below a kafka-go loop that commits on its processor's nil result
// is reported (the processor is a closure bound through a parameter); a
// failure that is returned, a `return nil` that follows no failed work and
// a goroutine's `return` are not. The per-package mode knows no caller and
// reports nothing there.
func TestNilAckBelowTheLoop(t *testing.T) {
	var lines []int
	for _, f := range findingsIn(programReport(t, false), "swallow/swallow.go", "errack") {
		lines = append(lines, f.Line)
		require.Contains(t, f.Message, "acks the message", "%+v", f)
	}
	require.Equal(t, []int{47, 95, 138}, lines, "online's return nil after register fails, Purchases.Handle's return after its failed insert (committed by the goroutine after Handle returns), offline's return nil below an if/else assignment, and nothing else")
	require.Empty(t, findingsIn(programReport(t, true), "swallow/swallow.go", "errack"))
}

// TestMultiTxBehindInterface: two calls through a storage interface whose
// implementation commits a transaction each are two transactions for one
// message in the whole-program mode; the per-package mode sees no commit
// below an interface method.
func TestMultiTxBehindInterface(t *testing.T) {
	var lines []int
	for _, f := range findingsIn(programReport(t, false), "multiface/multiface.go", "multitx") {
		lines = append(lines, f.Line)
	}
	require.Equal(t, []int{49}, lines)
	require.Empty(t, findingsIn(programReport(t, true), "multiface/multiface.go", "multitx"))
}

// TestMapGoroutineThatAcks: a write in a goroutine per message that also
// commits its message is not "in another goroutine" (the commit waits for
// it there); a write in a worker that acks nothing still is.
func TestMapGoroutineThatAcks(t *testing.T) {
	rep := programReport(t, false)
	seen := 0
	for _, c := range rep.Consumers {
		switch c.Name {
		case "ConsumeEach":
			for _, s := range c.Writes {
				require.False(t, s.Async, "%+v", s)
				seen++
			}
		case "Poll":
			for _, s := range c.Effects {
				require.True(t, s.Async, "%+v", s)
				seen++
			}
		}
	}
	require.Equal(t, 2, seen)
}

// TestReceiveWrapperInAnotherPackage: a one-shot kafka-go receive wrapper
// (kqueue.Queue.Receive) whose loops are in another package stands for
// those loops in the whole-program mode: the loop is the consumer and what
// it calls is on its path. The per-package mode, which cannot see the other
// package's callers, finds nothing there.
func TestReceiveWrapperInAnotherPackage(t *testing.T) {
	names := func(rep *Report) []string {
		var out []string
		for _, c := range rep.Consumers {
			if strings.Contains(c.File, "/kqueue/") || strings.Contains(c.File, "/kworker/") {
				out = append(out, c.File[strings.LastIndex(c.File, "/")+1:]+" "+c.Name)
			}
		}
		return out
	}
	require.Equal(t, []string{"kworker.go kworker.Worker.Run"}, names(programReport(t, false)))
	require.Len(t, findingsIn(programReport(t, false), "kworker/kworker.go", "effect"), 1)
	require.Empty(t, findingsIn(programReport(t, true), "kworker/kworker.go", "effect"))
}

// TestGeneratorChannel: records sent on a channel that a generator makes
// and returns (func Events() <-chan Event) are handled where that channel
// is read: the reader is on the consumer's path, beside it. So is a worker
// started through errgroup's Go that reads the channel the loop sends on.
func TestGeneratorChannel(t *testing.T) {
	var lines []int
	for _, f := range findingsIn(programReport(t, false), "gen/gen.go", "effect") {
		lines = append(lines, f.Line)
	}
	require.Equal(t, []int{43, 61}, lines, "the generator's reader, and the errgroup worker that reads the jobs channel")
	require.Empty(t, findingsIn(programReport(t, true), "gen/gen.go", "effect"))
}

// TestGuardedTransition: an effect reached only behind a won guarded
// transition (a caller that archived the thread posts, a redelivery finds
// it archived) is not reported; one that another consumer reaches without
// the guard is, named with that consumer's path.
func TestGuardedTransition(t *testing.T) {
	rep := programReport(t, false)
	fs := findingsIn(rep, "surface/surface.go", "effect")
	require.Len(t, fs, 1, "%+v", fs)
	require.Contains(t, fs[0].Message, "surface.Manager.OnMirror → surface.Mirror.Post")
}

// TestClosureGivenToLibraryInterface: a closure given to a method of an
// interface a library declares (a tracer's WithSpan) is taken as called by
// it, so the delivery it makes through the application's own interface is
// on the consumer's path.
func TestClosureGivenToLibraryInterface(t *testing.T) {
	rep := programReport(t, false)
	fs := findingsIn(rep, "spanbus/spanbus.go", "effect")
	require.Len(t, fs, 1, "%+v", fs)
	require.Contains(t, fs[0].Message, "spanbus.Bus.Handle.func1 → spanbus.Webhook.Deliver")
}

// TestHTTPClientAfterAck: orders.Handle acks, then posts with the default
// client. The whole-program mode, which sees the ack, says the post comes
// after it (a slow server loses the call, nothing redelivers it), not that
// the message is delivered again while in flight; the per-package mode,
// which does not, keeps the lease wording (and pins the text replaced).
func TestHTTPClientAfterAck(t *testing.T) {
	whole := findingsIn(programReport(t, false), "orders/orders.go", "httpclient")
	require.Len(t, whole, 1)
	require.Contains(t, whole[0].Message, "on the consumer path of watermill handler Handle: the call comes after the message is acknowledged, so it is never retried")
	require.NotContains(t, whole[0].Message, "delivered again")

	per := findingsIn(programReport(t, true), "orders/orders.go", "httpclient")
	require.Len(t, per, 1)
	require.Contains(t, per[0].Message, leaseRisk, "the text httpClientAfterAck replaces")
}

// TestMapSeverityAgrees: the map's blast radius and the findings' severity
// have one source. A finding on the line of a consumer's effect or write
// has that step's severity (PaymentMq.Consume's post is critical: its type
// names a payment, which the finding's function name alone does not), and
// no consumer's blast radius is below a finding in it.
func TestMapSeverityAgrees(t *testing.T) {
	rep := programReport(t, false)
	mq := slices.DeleteFunc(findingsIn(rep, "mqs/mqs.go", "effect"), func(f Finding) bool { return f.Function != "PaymentMq.Consume" })
	require.Len(t, mq, 1)
	require.Equal(t, SeverityCritical, mq[0].Severity, "the map's path names mqs.PaymentMq.Consume")
	rank := map[Severity]int{"": 0, SeverityLow: 1, SeverityMedium: 2, SeverityHigh: 3, SeverityCritical: 4}
	for _, c := range rep.Consumers {
		for _, f := range rep.Findings {
			if !c.reaches(f.abs, f.Line) {
				continue
			}
			require.GreaterOrEqual(t, rank[c.BlastRadius], rank[f.Severity], "%s: %s %s:%d", c.Name, f.Check, f.File, f.Line)
			for _, s := range append(slices.Clone(c.Effects), c.Writes...) {
				if s.File == f.File && s.Line == f.Line {
					require.Equal(t, s.Severity, f.Severity, "%s: %s at %s:%d", c.Name, f.Check, f.File, f.Line)
				}
			}
		}
	}
}

// TestMapOutboxRow: an ackgap handler that writes outbox rows (the billing
// example's ChargeOrder, through ApplyTransition; the Prometheus example's
// Watermill handler behind the inbox middleware, through AddOutbox) shows
// them as effects the relay makes, and its blast radius is theirs, not
// "none"; the handler writing outbox rows is behind the inbox.
func TestMapOutboxRow(t *testing.T) {
	t.Parallel()
	rep, err := Run(&RunConfig{Dir: "..", Patterns: []string{"./examples/billing/orders", "./examples/prometheus"}, Env: append(os.Environ(), "GOWORK=off")})
	require.NoError(t, err)
	byName := map[string]Consumer{}
	for _, c := range rep.Consumers {
		byName[c.Name] = c
	}
	charge, ok := byName["ChargeOrder"]
	require.True(t, ok, "%+v", rep.Consumers)
	require.Equal(t, SeverityCritical, charge.BlastRadius, "the charge row")
	require.Len(t, charge.Effects, 1, "%+v", charge)
	require.Contains(t, charge.Effects[0].What, "an outbox row (ackgap.ApplyTransition), made by the relay")

	receipt, ok := byName["main.run.func6"]
	require.True(t, ok, "%+v", rep.Consumers)
	require.NotEmpty(t, receipt.BlastRadius)
	require.Len(t, receipt.Effects, 1, "%+v", receipt)
	require.Contains(t, receipt.Effects[0].What, "an outbox row (ackgap.AddOutbox)")
	require.True(t, strings.HasPrefix(receipt.Dedupe, "ackgap inbox"), receipt.Dedupe)
}

// TestMapIdempotencyKey: a post keyed on the Watermill message's UUID is
// accepted (no idemkey or effect finding: every redelivery of the message
// carries the same UUID), and the map says what the key covers and what
// it does not (a second publish of the event has a new UUID); a key from
// the payload is shown as it is written.
func TestMapIdempotencyKey(t *testing.T) {
	rep := programReport(t, false)
	require.Empty(t, findingsIn(rep, "keyedpost/keyedpost.go", "idemkey"))
	require.Empty(t, findingsIn(rep, "keyedpost/keyedpost.go", "effect"))
	var b bytes.Buffer
	require.NoError(t, WriteMap(&b, rep))
	require.Contains(t, b.String(), `Idempotency-Key "label-" + msg.UUID: Watermill's message id, the same on every redelivery of this message, so the receiver dedupes redeliveries; a second publish of the event is a new message with a new id`)
	require.Contains(t, b.String(), "Idempotency-Key orderOf(msg.Payload)\n")
}

// TestRedisStateWrite: a Redis write that stores state (a sorted-set
// member, a hash) is work, so its error dropped before the commit is
// reported; a SET with a TTL is a cache and is not (wave 17, ovh/cds H2).
func TestRedisStateWrite(t *testing.T) {
	require.Equal(t, []int{40, 57}, findingLines(programReport(t, false), "redisq/redisq.go", "errack"), "the dropped task write; the Lua script's logged failure (wave 42, fansX)")
}

// TestFunctionMadeByFactory: the function given to errgroup's Go is the
// result of a local closure factory (g.Go(handle(ctx, m))); the walk
// follows it into the handler of another package (wave 17, mailbadger).
func TestFunctionMadeByFactory(t *testing.T) {
	f := onlyFinding(t, programReport(t, false), "errgo/sender/sender.go", "effect")
	require.Equal(t, 15, f.Line)
	require.Contains(t, f.Message, "errgo.Run.func1.func1 → sender.Handler.Handle")
}

// onlyFinding returns the one finding of check in file, failing the test
// when there is none or more than one.
func onlyFinding(t *testing.T, rep *Report, file, check string) Finding {
	t.Helper()
	fs := findingsIn(rep, file, check)
	require.Len(t, fs, 1, "%+v", fs)
	return fs[0]
}

// TestReceiveInLiteralCalledInPlace: a fetch inside a function literal
// called where it is written (a timeout's scope) leaves the enclosing
// method the consumer, so its work and commit are walked; the fetch's own
// failure is no message's (wave 17, tempo's block-builder).
func TestReceiveInLiteralCalledInPlace(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, "Worker.Run", consumerIn(t, rep, "iife/iife.go").Name)
	require.Equal(t, []int{33}, findingLines(rep, "iife/iife.go", "effect"))
	require.Equal(t, []int{33}, findingLines(rep, "iife/iife.go", "errack"))
}

// TestHandlerThroughWrapperParameter: a typed closure passed to the
// application's own generic wrapper of cqrs.NewGroupEventHandler (in
// another package) is a CQRS handler (wave 16, openmeter's grouphandler).
func TestHandlerThroughWrapperParameter(t *testing.T) {
	rep := programReport(t, false)
	c := consumerIn(t, rep, "invoices/invoices.go")
	require.Equal(t, KindCQRS, c.Kind)
	require.Equal(t, []int{22}, findingLines(rep, "invoices/invoices.go", "effect"))
}

// TestGeneratorThroughParameter: a generator hands its channel to the
// receive loop it starts and returns it; the reader of what it returns is
// on the loop's path (wave 18, TeleBot).
func TestGeneratorThroughParameter(t *testing.T) {
	require.Equal(t, []int{42}, findingLines(programReport(t, false), "paramgen/paramgen.go", "effect"))
}

// TestOwnLoopAcksOnNil: the code's own loop commits after its handler
// returns nil, and the handler returns nil with its work started in a
// goroutine (wave 18, BharatMLStack skye).
func TestOwnLoopAcksOnNil(t *testing.T) {
	require.Equal(t, []int{17}, findingLines(programReport(t, false), "ownloop/handler/handler.go", "earlyack"))
}

// TestWorkInSyncLibraryCallback: a commit before a call whose write runs
// inside a library's synchronous callback (retry.Do, as gorm's
// Transaction) is reported, naming that call, not the dead-letter send in
// between (wave 19, porter-management).
func TestWorkInSyncLibraryCallback(t *testing.T) {
	f := onlyFinding(t, programReport(t, false), "synccb/synccb.go", "earlyack")
	require.Equal(t, 31, f.Line)
	require.Contains(t, f.Message, "calls s.Save")
}

// TestFetchFunctionReturnsToLoggingLoop: a function that fetches one
// message, works and commits it, called again and again by a loop that
// only logs what it returns, loses a message whose work fails: returning
// the error carries it nowhere, and the next call's commit passes over it
// (field trial, wave 20: Common-Backend H1; wave 19: iiot H2). A loop that
// stops on the error (Serve) is not reported.
func TestFetchFunctionReturnsToLoggingLoop(t *testing.T) {
	rep := programReport(t, false)
	require.ElementsMatch(t, []int{35, 53}, findingLines(rep, "pollfn/pollfn.go", "errack"))
	for _, f := range findingsIn(rep, "pollfn/pollfn.go", "errack") {
		if f.Line == 35 {
			require.Contains(t, f.Message, "only log what it returns")
		}
	}
}

// TestWrappedAckInFailedBranch: the code's own wrapper of the client's
// commit, called in a failed write's branch, acks the failure (wave 20,
// codecourt H4). A failed read through the code's wrapper of the receive,
// and an event that does not decode (FromJSON), are not errack's.
func TestWrappedAckInFailedBranch(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{38}, findingLines(rep, "wrapack/wrapack.go", "errack"))
}

// TestSharedLoopInRepository: a service whose module path names no host
// (module ordersvc) over the repository's shared receive loop, a module
// its go.mod replaces with a relative path: the shared loop is the
// repository's own code, so the service's handler is on a consumer path
// and its POST is reported (field trial, wave 21: E-Commerce-backend's
// order and payment services over pkg/aws).
func TestSharedLoopInRepository(t *testing.T) {
	rep, err := Run(&RunConfig{Dir: filepath.Join("testdata", "programsvc"), Env: programEnv(), Checks: []string{"all"}})
	require.NoError(t, err)
	var effects []string
	for _, f := range rep.Findings {
		if f.Check == "effect" {
			effects = append(effects, filepath.Base(f.abs)+":"+f.Message)
		}
	}
	require.Len(t, effects, 1, "%+v", rep.Findings)
	require.Contains(t, effects[0], "main.go:")
	require.Contains(t, effects[0], "queue.Consumer.StartPolling → main.main.func1")
}

// TestBatchCollectorCaller: a function that polls in a loop only to gather
// a batch it returns is not the consumer's loop; its caller, which works
// the batch and commits, is, and a failed batch it passes over is
// reported (field trial, wave 21: Finvibe's fetchBatch under runGroup).
func TestBatchCollectorCaller(t *testing.T) {
	rep := programReport(t, false)
	run := consumerIn(t, rep, "batchpoll/batchpoll.go")
	require.Equal(t, "Applier.Run", run.Name, "%+v", run)
	require.Equal(t, []int{47}, findingLines(rep, "batchpoll/batchpoll.go", "errack"))
}

// TestKafkaWrappersInAnotherPackage: a loop that reads and commits through
// the code's own wrappers in another package passes over a failed message
// (the next commit covers it): reported in the whole-program mode, which
// knows the wrapper commits. The wrapped read's failure (no message in
// hand) and the wrapped commit's failure (the message comes again) are not
// (field trial, wave 21: player-history-fetcher H1).
func TestKafkaWrappersInAnotherPackage(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{21, 40, 70}, findingLines(rep, "kwrap/kwrap.go", "errack"), "not the failed fetches at 18 and 37 (ReadJob decodes: no client type in its results, but it receives)")
	var entries []string
	for _, c := range rep.Consumers {
		if strings.HasSuffix(c.File, "testdata/program/kwrap/kwrap.go") {
			entries = append(entries, c.Name)
		}
	}
	require.Equal(t, []string{"kwrap.Ingest", "kwrap.IngestJobs", "kwrap.Deliver"}, entries, "the loop that takes fetchBatch's batch and commits it, not the batch collector (waves 23 and 24)")
	require.Contains(t, findingsIn(rep, "kwrap/kwrap.go", "errack")[0].Message, "queue.Commit (which commits the offset)")
}

// TestGenericSaramaHandler: a Sarama handler that is a generic type, whose
// instance reaches Sarama only as a ConsumerGroupHandler, is a consumer:
// its instance's methods are the program's, and the counter its function
// field reaches is reported (field trial, wave 21: lifelog's
// saramax.Handler[T]).
func TestGenericSaramaHandler(t *testing.T) {
	rep := programReport(t, false)
	h := consumerIn(t, rep, "genclaim/genclaim.go")
	require.Equal(t, KindSarama, h.Kind)
	require.Equal(t, []int{47}, findingLines(rep, "genclaim/genclaim.go", "idemkey"))
}

// TestDeferredAckNotBeforeWork: an ack in a defer statement runs when its
// function returns, so the write after the defer statement is not "after
// the ack" in the map (a new user's SQS consumer, wave 21's walk); errack
// still reports the deferred delete that acks a failed write.
func TestDeferredAckNotBeforeWork(t *testing.T) {
	rep := programReport(t, false)
	c := consumerIn(t, rep, "deferdel/deferdel.go")
	require.Len(t, c.Writes, 1, "%+v", c)
	require.False(t, c.Writes[0].AfterAck, "%+v", c.Writes[0])
	require.Equal(t, []int{14}, findingLines(rep, "deferdel/deferdel.go", "errack"))
}

// TestSharedLoopDedupePerHandler: one handler's ON CONFLICT on a shared
// receive loop does not dedupe another handler's rows: the two are targets
// of one call site, not steps of one path (field trial, wave 22:
// event-driven-crm H2).
func TestSharedLoopDedupePerHandler(t *testing.T) {
	require.Equal(t, []int{39}, findingLines(programReport(t, false), "sharedloop/sharedloop.go", "append"))
}

// TestDedupeRecordSeverity: a dedupe record whose values name the consumer
// ('payments') is a state write in the map, not money (a new user's
// consumer rated critical for its own dedupe insert).
func TestDedupeRecordSeverity(t *testing.T) {
	c := consumerIn(t, programReport(t, false), "dedupename/dedupename.go")
	require.Len(t, c.Writes, 2, "%+v", c)
	require.Equal(t, SeverityMedium, c.Writes[0].Severity, "%+v", c.Writes[0])
	require.Equal(t, SeverityMedium, c.BlastRadius)
	require.Contains(t, c.Dedupe, "insert … ON CONFLICT")
}

// TestSharedLoopHandlers: a receive loop shared by two services' consumers
// lists each handler its function value dispatches to (field trial, wave
// 24: rush-delivery-engine's one loop for six consumers); closures the
// loop hands to its own transaction helper are not handlers.
func TestSharedLoopHandlers(t *testing.T) {
	rep := programReport(t, false)
	loop := consumerIn(t, rep, "sharedloop/sharedloop.go")
	var names []string
	for _, h := range loop.Handlers {
		names = append(names, h.What)
	}
	require.Equal(t, []string{"handler sharedloop.Services.Customers", "handler sharedloop.Services.Notifications"}, names)
	require.Equal(t, 32, loop.Handlers[0].Line)
	for _, c := range rep.Consumers {
		if strings.HasSuffix(c.File, "testdata/program/multiface/multiface.go") {
			require.Empty(t, c.Handlers, "%s: the InTx callbacks are the loop's own", c.Name)
		}
	}
}

// TestAckThroughMethodValue: a handler registered as a method value
// (f.Updated) that defers its ack is reached through the method value's
// synthetic wrapper, which has no syntax (field trial, wave 25: the map
// crashed on stockohlc's Message.FileUpdated); the deferred ack over a
// failed update is reported.
func TestAckThroughMethodValue(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{57}, findingLines(rep, "boundack/boundack.go", "errack"))
	loop := consumerIn(t, rep, "boundack/boundack.go")
	require.Equal(t, "loop", loop.Name)
	require.NotEmpty(t, loop.Acks)
	require.Equal(t, 57, loop.Acks[0].Line)
}

// TestFailureTurnedIntoNothing: a failed write that a helper with no result
// only logs (Deliver returns nil after it and the loop commits), a write
// whose error is dropped before `return nil` in a function the loop
// commits on, and a delete deferred through the code's own wrapper are
// each an errack finding; a deferred helper given the result's error, and
// a function that returns the error, are not (field trial, waves 24 and
// 25: IM H3, stablesando H4 and H5, sqs-reader-service H1).
func TestFailureTurnedIntoNothing(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{32, 45, 115}, findingLines(rep, "voidlog/voidlog.go", "errack"))
	for _, f := range findingsIn(rep, "voidlog/voidlog.go", "errack") {
		switch f.Line {
		case 32:
			require.Contains(t, f.Message, "voidlog.Run acks the message after this function returns (it has no result to report the failure with)")
		case 45:
			require.Contains(t, f.Message, "voidlog.Record acks the message on that nil")
		case 115:
			require.Contains(t, f.Message, "defers h.remove (which acks the message)")
		}
	}
}

// TestDetachedPerPart: a function whose nil the loop commits on (its
// result dropped with `_ =`) that starts a goroutine per part of the
// message and returns nil is an earlyack finding; under kafka-go's
// ReadMessage auto-commit the finding says that moving the commit would
// not wait for it either; a function that waits for its goroutines is not
// reported (field trial, wave 24: arda-notification H3; wave 25:
// fintech-ecosystem H3). A value a decoder chain filled from the message
// (`json.NewDecoder(bytes.NewReader(m.Value)).Decode(&ev)`) handed to a
// goroutine before the commit is the message's (wave 27:
// picket-answersheet H2), and so is one decoded before a select whose
// case hands it over and returns nil (wave 32: reservation-worker H1).
func TestDetachedPerPart(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{63, 109, 136, 153}, findingLines(rep, "detach/detach.go", "earlyack"))
	fs := findingsIn(rep, "detach/detach.go", "earlyack")
	require.Contains(t, fs[0].Message, "detach.Run acks the message, while its work runs in another goroutine (go s.send at line 60)")
	require.Contains(t, fs[1].Message, "moving the commit after this function would not wait for it either")
}

// TestConfluentNeverCommits: a confluent-kafka-go consumer with the offset
// store turned off whose loop never stores or commits an offset is an
// autocommit finding (the group never commits), and a failure it logs is
// not said to be auto-committed; the loop that stores each offset after
// its work is not reported (field trial, wave 24:
// notification-service-go H1).
func TestConfluentNeverCommits(t *testing.T) {
	rep := programReport(t, false)
	fs := findingsIn(rep, "nocommit/nocommit.go", "autocommit")
	require.Len(t, fs, 1)
	require.Equal(t, 16, fs[0].Line)
	require.Contains(t, fs[0].Message, "the consumer group never commits")
	require.Empty(t, findingsIn(rep, "nocommit/nocommit.go", "errack"), "the auto-commit is off: no failure is committed past")
	require.Empty(t, findingsIn(rep, "nocommit/stored/stored.go", "autocommit"))
	c := consumerIn(t, rep, "nocommit/nocommit.go")
	require.NotEmpty(t, c.Acks)
	require.Contains(t, c.Acks[0].What, "never commits", "the map says nothing commits, not a timer")

	// With the background commit off a store sends nothing; the store
	// turned off by SetKey on the literal counts too (a new user's
	// consumers).
	fs = findingsIn(rep, "nocommit/storeonly/storeonly.go", "autocommit")
	require.Len(t, fs, 1)
	require.Contains(t, fs[0].Message, `"enable.auto.commit" false`)
	require.Contains(t, fs[0].Message, "commit it (CommitMessage) after its work")
	fs = findingsIn(rep, "nocommit/setkey/setkey.go", "autocommit")
	require.Len(t, fs, 1)
	require.Contains(t, fs[0].Message, `"enable.auto.offset.store" false`)
}

// TestSaramaNeverCommits: Sarama's auto-commit turned off where no package
// near the config (its own, one it imports or one importing it) commits
// is an autocommit finding (the marks never reach the broker), though
// another service of the module commits; a package that commits after
// its marks is not reported (field trial, wave 26:
// Cornerstone-backend H1; a new user's two services).
func TestSaramaNeverCommits(t *testing.T) {
	fs := findingsIn(programReport(t, false), "saramaoff/saramaoff.go", "autocommit")
	require.Len(t, fs, 1)
	require.Equal(t, 16, fs[0].Line)
	require.Contains(t, fs[0].Message, "the consumer group never commits: Consumer.Offsets.AutoCommit.Enable = false")
	require.Empty(t, findingsIn(programReport(t, false), "saramaok/saramaok.go", "autocommit"), "it commits itself")
}

// TestSaramaPartitionNoOffset: a Sarama partition consumer started at
// OffsetNewest with no offset manager is an autocommit finding, and the
// map's ack line says that nothing commits, not an auto-commit on a timer
// (field trial, wave 36: WBTech_L0 H1; a new user's report).
func TestSaramaPartitionNoOffset(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "saramapart/saramapart.go", "autocommit", []int{14}, "every start reads at the newest offset (OffsetNewest)")
	c := consumerNamed(t, rep, "StoreOrders")
	require.Equal(t, KindSaramaPartition, c.Kind)
	require.Len(t, c.Acks, 1, "%+v", c)
	require.Contains(t, c.Acks[0].What, "nothing: no consumer group, no offset is committed")
}

// TestSQSLibraryHandlers: a handler given to an SQS consumer library of
// another module, whose receive loop and delete are in the library, is an
// entry point that acks on its nil return: an interface's one method
// (go-sqs-poller's HandleMessage) and a function value made by a factory
// and passed through the library's middleware package (sqsconsumer's
// MessageHandlerFunc); its findings follow (field trial, waves 26 and
// 27: ca-risken, Wattpad/ship-it).
func TestSQSLibraryHandlers(t *testing.T) {
	rep := programReport(t, false)
	var names []string
	for _, c := range rep.Consumers {
		if strings.HasSuffix(c.File, "testdata/program/sqslib/sqslib.go") {
			require.Equal(t, KindSQSLib, c.Kind)
			require.NotEmpty(t, c.Acks)
			names = append(names, c.Name)
		}
	}
	require.Equal(t, []string{"Scanner.HandleMessage", "func literal returned by notify"}, names)
	require.Equal(t, []int{27}, findingLines(rep, "sqslib/sqslib.go", "errack"))
	require.Equal(t, []int{34}, findingLines(rep, "sqslib/sqslib.go", "effect"))
}

// TestGenericInstanceDeterministic: a generic consumer instantiated with
// two job types is walked through the same instance on every run (the
// first by name), so its findings do not change from run to run (field
// trial, wave 28: LinkMe's e-mail effect was in some runs only). Before
// the fix two of six runs of this package disagreed.
func TestGenericInstanceDeterministic(t *testing.T) {
	var first []string
	for range 4 {
		rep, err := Run(&RunConfig{Dir: filepath.Join("testdata", "program"), Patterns: []string{"./geninst"}, Env: programEnv(), Checks: []string{"all"}})
		require.NoError(t, err)
		var got []string
		for _, f := range rep.Findings {
			got = append(got, f.Check+" "+f.File+":"+strconv.Itoa(f.Line)+" "+f.Message)
		}
		require.NotEmpty(t, got)
		if first == nil {
			first = got
			continue
		}
		require.Equal(t, first, got)
	}
}

// TestGenericInstances: a generic entry point instantiated for two
// consumers (Consumer[Mail] and Consumer[Hook], each with its own work) is
// two consumers, each walked to its own effect; a generic function that
// builds the handler closure for two consumer groups (StartConsume[T],
// each with its own send function) is followed through both instances,
// and the closure's logged failure of the send, with the mark after it, is
// found (field trial, wave 28: LinkMe's e-mail and SMS consumers of one
// samarap.Handler[T], of which only one was walked; notification-service's
// StartConsume[T], whose logged SMTP failure was not reported).
func TestGenericInstances(t *testing.T) {
	rep := programReport(t, false)
	effects := map[string][]int{}
	for _, c := range rep.Consumers {
		if strings.HasSuffix(c.File, "testdata/program/geninst/geninst.go") {
			for _, e := range c.Effects {
				effects[c.Name] = append(effects[c.Name], e.Line)
			}
		}
	}
	require.Equal(t, map[string][]int{"Consumer[Hook].Run": {33}, "Consumer[Mail].Run": {24}}, effects)
	require.Equal(t, []int{24, 33}, findingLines(rep, "geninst/geninst.go", "effect"))

	c := consumerIn(t, rep, "genloop/genloop.go")
	var handlers []string
	for _, h := range c.Handlers {
		handlers = append(handlers, h.What)
	}
	require.Equal(t, []string{"handler genloop.StartConsume[Login].func1", "handler genloop.StartConsume[Register].func1"}, handlers)
	require.Equal(t, []int{67, 73}, findingLines(rep, "genloop/genloop.go", "effect"))
	require.Equal(t, []int{46}, findingLines(rep, "genloop/genloop.go", "errack"))
}

// TestRetriedThenMarked: a bounded retry loop whose last failure is only
// logged before the mark loses the message as surely as one try does
// (`for i := 0; i < 5; i++` and `for range 3`); returning the last failure
// instead is no finding (field trial, wave 28: LinkMe's post, check and
// publish consumers).
func TestRetriedThenMarked(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{38, 84}, findingLines(rep, "retrymark/retrymark.go", "errack"))
}

// TestAutoCommitWorker: under librdkafka's background commit, a worker
// goroutine the poll loop hands its messages to loses a failure it drops
// (`_ = send()`) or only logs, since the offset is committed past it; both
// join the loop's autocommit finding (field trial, wave 28:
// email-service's worker); a metric's logged failure does not (wave 29:
// timber's histogram and counter).
func TestAutoCommitWorker(t *testing.T) {
	rep := programReport(t, false)
	fs := findingsIn(rep, "autoworker/autoworker.go", "autocommit")
	require.Len(t, fs, 1)
	var related []int
	for _, r := range fs[0].Related {
		require.Equal(t, "errack", r.Check)
		related = append(related, r.Line)
	}
	require.Equal(t, []int{39, 54}, related, "the metric's logged failure (line 57) loses a sample, not the message")
	require.Contains(t, fs[0].Message, "a failure that is dropped or only logged is committed past all the same")
}

// TestLambdaRecordAck: in a Lambda stream handler whose loop names a
// record as failed when the callee fails and returns one partial batch
// response after the loop, the callee's nil acks its record: a write
// failure it drops is checkpointed past (field trial, wave 30:
// event-driven-ec-shop H1).
func TestLambdaRecordAck(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{32}, findingLines(rep, "lambdarec/lambdarec.go", "errack"))
}

// TestDuplicateSkipBeforeEffect: a write whose unique-key failure is taken
// for "seen" (return nil), committed before the notification it guards,
// which is made through an interface (wave 31, vulnerability-db H1): a
// failed notification's redelivery is skipped. The other order is clean.
func TestDuplicateSkipBeforeEffect(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "seenfirst/seenfirst.go", "checkact", []int{55}, "writes the record that a redelivery is skipped on (line 56) before the call of p.Notifier.Push")
}

// TestStatusGuardAckedBeforeMark: a JetStream callback that acks and
// returns on a job status it read with GORM, marks the status itself and
// then publishes (wave 47, fyredocs H1) loses the job on a crash after the
// mark; the twin that marks after its publish is clean.
func TestStatusGuardAckedBeforeMark(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "jobstatus/jobstatus.go", "checkact", []int{57}, "writes the record that a redelivery is skipped on (line 53) before the call of w.Pub.Publish")
}

// TestFailureHandlerThatNaks: a failure handler that asks for a
// redelivery on its retry path and acks on its last (wave 47, fyredocs'
// handleFailure) is no ack of the caller's failure branch, and a failed
// status update that falls through to its Nak is not acked; the failed
// update before its final Ack is. Nothing after the caller's `return` is
// taken for an ack after the handler. The GORM updates whose errors are
// dropped before an Ack (lines 57 and 82, wave 50) are errack's too; the
// one at 82 follows a publish keyed by the job's id, so it is no
// bookkeeping after work.
func TestFailureHandlerThatNaks(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{57, 82, 109, 138, 166}, findingLines(rep, "jobstatus/jobstatus.go", "errack"))
	require.Contains(t, findingsIn(rep, "jobstatus/jobstatus.go", "errack")[0].Message, "the error of w.DB.Model(&Job{}).Where(\"id = ?\", id).Update is dropped unread, and jetstream.Msg.Ack acks the message (line 62)")
	require.Contains(t, findingsIn(rep, "jobstatus/jobstatus.go", "errack")[2].Message, "acks with jetstream.Msg.Ack even when w.DB.Model(&Job{}).Where(\"id = ?\", id).Update failed (line 106)")
}

// TestBookkeepingAfterWork: a status write whose failure is only logged,
// in a helper named for it and called after a publish whose failure Naks
// (wave 47, fyredocs' updateJobStatus("completed")), is no errack finding:
// redelivering would publish again to mend a record about it. The same
// write as the message's only work is (line 138), and so is one after a
// POST that carries an idempotency key, whose repeat the receiver dedupes
// (line 166, a new user's report).
func TestBookkeepingAfterWork(t *testing.T) {
	rep := programReport(t, false)
	lines := findingLines(rep, "jobstatus/jobstatus.go", "errack")
	require.NotContains(t, lines, 127, "the status after the publish")
	require.Contains(t, lines, 138, "the status that is the message's work")
	require.Contains(t, lines, 166, "the status after a keyed POST")
}

// TestCopiedHeaderKeysPublish: a CQRS command handler that publishes its
// event with the command's header, which carries an idempotency key
// (wave 47, tickets' RefundTicket), publishes a repeat the receivers
// dedupe; the twin with a new header each delivery is reported.
func TestCopiedHeaderKeysPublish(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "cqrsheader/cqrsheader.go", "effect", []int{55}, "a publish (cqrs.EventBus.Publish) on the consumer path of Watermill CQRS handler Reprint")
}

// TestFallbackKeepsError: a failure branch that tries a fallback into the
// same error variable, checked and returned after (wave 47, fyredocs'
// LibreOffice fallback), drops nothing; the twin that logs and returns
// nil is reported.
func TestFallbackKeepsError(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "fallback/fallback.go", "errack", []int{48}, "when h.post fails (line 47) the error is only recorded")
}

// TestWaitedProgressGoroutine: a goroutine that writes a job's progress,
// started by a function of the package and stopped by a method that waits
// for it before the ack (wave 47, fyredocs' progress reporter), is no
// hand-off; a goroutine the ack does not wait for is.
func TestWaitedProgressGoroutine(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "reporter/reporter.go", "earlyack", []int{71}, "while the message's work runs in another goroutine (send, which starts a goroutine at line 70)")
}

// TestMiddlewareIsNoConsumer: a router middleware (given the next handler,
// returning one that wraps it) is no consumer of its own (wave 47, tickets'
// middlewares); the handlers beside it are.
func TestMiddlewareIsNoConsumer(t *testing.T) {
	rep := programReport(t, false)
	var names []string
	for _, c := range rep.Consumers {
		if strings.Contains(c.File, "/wmmiddle/") {
			names = append(names, c.Name)
		}
	}
	require.Equal(t, []string{"wmmiddle.Wire.func1", "wmmiddle.Wire.func2"}, names)
}

// TestCountThenInsert: an insert after a count of the event's rows that
// skips (acks) the message when one is there (wave 47, fyredocs'
// notification subscriber) is the record a redelivery finds, not a second
// row; the twin's insert with no check is append's.
func TestCountThenInsert(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "notice/notice.go", "append", []int{45}, "a GORM insert (gorm.DB.Create)")
}

// TestFailureBranchSettles: a function with no result whose failure
// branch nacks the message itself and returns (wave 48, go-sac's priority
// scheduler) is not acked by its caller's nil: no errack finding.
func TestFailureBranchSettles(t *testing.T) {
	rep := programReport(t, false)
	require.Empty(t, findingsIn(rep, "wmmiddle/wmmiddle.go", "errack"))
	consumerNamed(t, rep, "wmmiddle.Wire.func2")
}

// TestUnreachableEffect: an email below a return that stubs a sender out
// (wave 48, galaxy_service's GmailSender) never goes out: no effect
// finding and no effect in the map; the twin sender's is both.
func TestUnreachableEffect(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "stubsend/stubsend.go", "effect", []int{31}, "an email (mail.Client.DialAndSend)")
	require.Empty(t, consumerNamed(t, rep, "stubsend.Register.func1").Effects)
}

// TestBatchResponseFromHelper: a Lambda SQS handler that returns what a
// helper of another package returns, the failures with the records'
// joined errors (wave 48, GreenFlag's middleware.GetBatchResult), has its
// whole batch retried; the twin helper's nil error is clean.
func TestBatchResponseFromHelper(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "batchres/batchres.go", "lambdabatch", []int{35}, "returns what result.Joined returns: the batch item failures together with an error")
}

// TestLambdaSetupFatal: a Lambda handler that ends the process when its
// database does not open, given nothing of the event (wave 49,
// abi-sql-view-generator), is no poison; ending it on a record that does
// not decode is.
func TestLambdaSetupFatal(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "lambdasetup/lambdasetup.go", "poison", []int{31}, "log.Fatal on a message's failure (json.Unmarshal, line 30)")
}

// TestFranzReceiveWrapper: a franz-go source whose Poll fetches once and
// returns the records, behind an interface whose loop is in another
// package (wave 49, graphrag's KafkaJobSource), is a receive wrapper: the
// loop is the consumer, and its logged failure before the commit is
// errack's.
func TestFranzReceiveWrapper(t *testing.T) {
	rep := programReport(t, false)
	c := consumerNamed(t, rep, "consumer.Consumer.Run")
	require.Equal(t, KindFranz, c.Kind)
	requireFindingsAt(t, rep, "kgosource/consumer/consumer.go", "errack", []int{36}, "even when c.DB.ExecContext failed (line 32)")
	for _, c := range rep.Consumers {
		require.NotEqual(t, "Kafka.Poll", c.Name, "the wrapper is no consumer")
	}
}

// TestRabbitAutoAck: a RabbitMQ loop whose Consume has autoAck true (wave
// 50, apphook) loses what fails or crashes after each delivery
// (autocommit), and nothing is redelivered, so its post is no repeated
// effect; the map names the broker's ack. The application's wrapper of
// Consume with its own autoAck parameter is Consume (wave 51,
// order-processing-demo); its twin with autoAck false is quiet.
func TestRabbitAutoAck(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "rabbit/rabbit.go", "autocommit", []int{86, 113}, "consumes with autoAck true on the consumer path of message channel loop ")
	require.Empty(t, findingsIn(rep, "rabbit/rabbit.go", "effect"))
	require.Contains(t, consumerNamed(t, rep, "Hooks").Acks[0].What, "autoAck true: at most once")
	require.Contains(t, consumerNamed(t, rep, "Payments").Acks[0].What, "autoAck true: at most once")
	for _, a := range consumerNamed(t, rep, "Orders").Acks {
		require.NotContains(t, a.What, "autoAck true", "%+v", a)
	}
}

// TestNamedErrorNeverSet: a call whose named error result nothing sets
// (wave 47, distr-transactions) never fails, so its logged failure branch
// before the mark is no finding; the twin whose named error is the
// write's is.
func TestNamedErrorNeverSet(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "namederr/namederr.go", "errack", []int{50}, "even when h.refund failed (line 47)")
	for _, f := range findingsIn(rep, "namederr/namederr.go", "errack") {
		require.NotContains(t, f.Message, "h.pay")
	}
}

// TestDeadLetterBranchGatesAck: a caller that commits after its
// dead-letter step and after a nil alike still acks on the handler's nil
// without a dead-letter record, so a publish failure the handler drops is
// committed as done (wave 30, echoride H8).
func TestDeadLetterBranchGatesAck(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{22}, findingLines(rep, "dlqboth/dlqboth.go", "errack"))
}

// TestFanOutWaited: a Lambda handler that writes each record in a
// goroutine and waits for them (WaitGroup.Wait) before it returns: the
// map does not say the ack may not wait for the writes (a new user's
// report); a worker beside a receive loop still is (TestConsumerMap).
func TestFanOutWaited(t *testing.T) {
	c := consumerIn(t, programReport(t, false), "lambdafan/lambdafan.go")
	require.Len(t, c.Writes, 1)
	require.False(t, c.Writes[0].Async, "%+v", c.Writes[0])
}

// TestChannelInTwoFields: a channel stored from one struct field into
// another (Poller{events: d.events}), or passed to a constructor through
// a getter, is one channel, and a worker pool's
// `chan interface{}` field pairs its sends with its receives (wave 32,
// reservation-worker and Ads-service): the workers' effects are on the
// loops' paths. Two fields that hold two channels stay apart
// (TestConsumerMap's twochans).
func TestChannelInTwoFields(t *testing.T) {
	rep := programReport(t, false)
	var poller, ads, relay *Consumer
	for i, c := range rep.Consumers {
		switch c.Name {
		case "Poller.Run":
			poller = &rep.Consumers[i]
		case "Ads.Run":
			ads = &rep.Consumers[i]
		case "Relay.Run":
			relay = &rep.Consumers[i]
		}
	}
	require.NotNil(t, poller, "%+v", rep.Consumers)
	require.NotNil(t, ads)
	require.NotNil(t, relay)
	// A constructor's parameter stored in a field: the callers pass the
	// sink's channel through its getter (wave 32, reservation-worker's
	// NewSQSPoller(dispatcher.GetEventsChan())).
	require.Len(t, relay.Effects, 1)
	require.Equal(t, "fieldchan.Sink.drain", relay.Effects[0].Path[len(relay.Effects[0].Path)-1])
	require.Len(t, poller.Effects, 1)
	require.Equal(t, "fieldchan.Dispatcher.dispatch", poller.Effects[0].Path[len(poller.Effects[0].Path)-1])
	require.True(t, poller.Effects[0].Async)
	require.Len(t, ads.Writes, 1)
	require.Equal(t, "fieldchan.Ads.record", ads.Writes[0].Path[len(ads.Writes[0].Path)-1])
}

// TestFatalSetupBeforeWrapperLoop: a log.Fatal on a set-up failure before
// a loop that calls another package's receive wrapper is set-up, not a
// message's failure (wave 33: video-api's main, a false poison finding).
func TestFatalSetupBeforeWrapperLoop(t *testing.T) {
	rep := programReport(t, false)
	consumerIn(t, rep, "fatalsetup/fatalsetup.go")
	require.Empty(t, findingsIn(rep, "fatalsetup/fatalsetup.go", "poison"))
}

// TestBranchThatNeverRuns: a kq Consume returning the error of another
// package's function that returns a nil error on every path: the branch
// never runs, so it is no finding (wave 33, YunOJ's problemsubmitconsumer
// a false finding); the failure turned into nil inside that function is.
func TestBranchThatNeverRuns(t *testing.T) {
	rep := programReport(t, false)
	consumerIn(t, rep, "judge/judge.go")
	require.NotContains(t, findingLines(rep, "judge/judge.go", "errack"), 19)
	require.Equal(t, []int{23}, findingLines(rep, "judge/logic/logic.go", "errack"))
}

// TestKqErrorReturnedBelowConsume: a kq Consume that returns another
// function's error as its own (`return m.operate(ctx, value)`): kq commits
// what operate returns, so its returned lookup failure is lost (wave 34,
// kk-forum H4), reported there.
func TestKqErrorReturnedBelowConsume(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "judge/judge.go", "errack", []int{45}, "go-queue's kq commits the offset whatever Consume returns")
}

// TestReceiveWrapperBehindValueMethods: a one-shot SQS receive wrapper
// with a value receiver, called through an interface that holds a
// pointer, is reached through Go's synthetic pointer wrapper: the loop in
// the other package is still the consumer, with its effect on the path
// (wave 33, organic-cache C2).
func TestReceiveWrapperBehindValueMethods(t *testing.T) {
	var names []string
	rep := programReport(t, false)
	for _, c := range rep.Consumers {
		if strings.Contains(c.File, "/sqsgate/") {
			names = append(names, c.File[strings.LastIndex(c.File, "/")+1:]+" "+c.Name)
		}
	}
	require.Equal(t, []string{"waiter.go waiter.Wait"}, names)
	require.Len(t, findingsIn(rep, "sqsgate/waiter/waiter.go", "effect"), 1)
}

// TestMapDedupeAgreesWithChecks: an insert whose unique-key failure is
// read as "seen" is the consumer's dedupe record for the checks, and the
// map says so instead of "none found" (a new user's report).
func TestMapDedupeAgreesWithChecks(t *testing.T) {
	rep := programReport(t, false)
	c := consumerIn(t, rep, "dupseen/dupseen.go")
	require.Equal(t, "a dedupe record in dupseen.first at testdata/program/dupseen/dupseen.go:29", c.Dedupe)
	require.Empty(t, findingsIn(rep, "dupseen/dupseen.go", "append"))
}

// TestReadMessageThroughOwnInterface: kafka-go's ReadMessage (a reader
// with a GroupID) called through the code's own interface in another
// package commits as it returns, before the loop's work (wave 35,
// payment-gateway H1): autocommit reports the wrapper's call.
func TestReadMessageThroughOwnInterface(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "readwrap/readwrap.go", "autocommit", []int{16}, "c.ReadMessage, the code's wrapper of kafka-go's ReadMessage, commits the offset")
}

// TestCommitChannel: a worker that closes a hand-off's commit channel (the
// receive loop waits on msg.CommitCh, then commits) acks; closing it when
// the work failed is an errack finding, through a pipeline's job.Done that
// the dispatcher waits on before closing msg.CommitCh too. A worker that
// closes it only after the work succeeded is not reported. The dispatcher
// reaches the pipeline though each stores the channel from its
// constructor's parameter: the callers pass one make(chan) (field trial,
// wave 37: kubev2v/migration-event-streamer H1, H2).
func TestCommitChannel(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{77, 138}, findingLines(rep, "commitch/commitch.go", "errack"), "not line 71: a body that does not encode fails again on redelivery")
	fs := findingsIn(rep, "commitch/commitch.go", "errack")
	require.Contains(t, fs[0].Message, "acks with close(msg.CommitCh) (a hand-off's commit channel: the receive loop then acks with kafka.Reader.CommitMessages) when r.c.Post fails")
	require.Contains(t, fs[1].Message, "acks with close(job.Done) (a hand-off's commit channel: the receive loop then acks with kafka.Reader.CommitMessages) even when p.store failed")
	require.Contains(t, fs[1].Message, "keep the channel open on a failure")
}

// TestGoZeroRoutineGroup: a closure that go-zero's RoutineGroup.Run starts
// is a goroutine, so a fetch loop's channel hand-off reaches it: its
// commit after a failed handler and the handler's increment are found, and
// eight of them started in a loop commit out of order (field trial, wave
// 37: scooter-WSVA's copy of go-queue's kq).
func TestGoZeroRoutineGroup(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "zerogroup/zerogroup.go", "errack", []int{49}, "acks with kafka.Reader.CommitMessages even when q.handler.Consume failed")
	requireFindingsAt(t, rep, "zerogroup/zerogroup.go", "idemkey", []int{72}, "increments likes")
	requireFindingsAt(t, rep, "zerogroup/zerogroup.go", "commitorder", []int{44}, "starts workers in a loop that all take messages from the channel q.channel")
	c := consumerNamed(t, rep, "zerogroup.Queue.Start.func2")
	require.NotEmpty(t, c.Writes, "%+v", c)
	require.Contains(t, strings.Join(c.Writes[0].Path, " → "), "zerogroup.Queue.Start.func1 → zerogroup.Likes.Consume")
}

// TestLambdaOwnRecords: a Lambda handler whose event is the code's own
// struct with SQS records (ReceiptHandle, Body) is an SQS handler; one
// whose records are not a queue's is not a consumer (field trial, wave 37:
// deplio's q_receiver).
func TestLambdaOwnRecords(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "ownrec/ownrec.go", "errack", []int{31}, "a record whose http.Post fails (line 30) is only logged")
	requireFindingsAt(t, rep, "ownrec/ownrec.go", "effect", []int{30}, "Lambda SQS handler Deliver")
	for _, c := range rep.Consumers {
		require.NotEqual(t, "Summarize", c.Name, "a direct invocation's records are not a queue's")
	}
}

// TestGoZeroMongo: go-zero's mon client's InsertOne is a MongoDB write and
// an insert a redelivery repeats (field trial, wave 37: easy-chat H2); a
// kq queue with its default processors commits out of order, one with a
// single processor or CommitInOrder does not (easy-chat H4, TikTok H1).
func TestGoZeroMongo(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "zeromon/zeromon.go", "commitorder", []int{36}, "go-queue's kq consumes this queue with KqConf.Processors goroutines (8 by default; this KqConf, built in the code, sets neither Processors: 1 nor CommitInOrder)")
	requireFindingsAt(t, rep, "zeromon/zeromon.go", "append", []int{26}, "a MongoDB insert (mon.Collection.InsertOne)")
	c := consumerNamed(t, rep, "Transfer.Consume")
	require.Len(t, c.Writes, 1, "%+v", c)
	require.Contains(t, c.Writes[0].What, "a MongoDB write (mon.Collection.InsertOne)")
}

// TestLookupAcked: a handler that returns nil on any failed lookup (a
// sqlc-style query method around a SELECT, a QueryRow's Scan) acks a
// message whose read timed out; one that returns nil only for
// sql.ErrNoRows is not reported (field trial, wave 37: cyphera-monorepo
// H5).
func TestLookupAcked(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{42, 80, 108}, findingLines(rep, "lookupack/lookupack.go", "errack"))
	fs := findingsIn(rep, "lookupack/lookupack.go", "errack")
	require.Contains(t, fs[0].Message, "returns without an error when the lookup h.Q.GetCustomer fails (line 39), whatever the failure")
	// QueryRow(...).Scan and a row scanned after its QueryRow (a new user's
	// report): the second is folded into the first of its function.
	require.Contains(t, fs[1].Message, "returns without an error when the lookup h.DB.QueryRowContext fails (line 79)")
	require.Contains(t, fs[1].Message, "(the same in H.CreditRow at line 85)")
	// A Lambda record whose lookup fails is only logged: not in
	// BatchItemFailures, so it is deleted.
	require.Contains(t, fs[2].Message, "a record whose h.DB.QueryRowContext fails (line 108) is only logged")
}

// TestPubSubReceive: the callback given to Google Pub/Sub's Receive is an
// entry point whose message's Ack is the ack: an Ack before the work is an
// earlyack finding, an Ack after it is not (field trial, wave 38:
// cdnjs/tools H1, H2). A callback held in a local variable first is an
// entry point too (wave 51: go-gcp-doc-ai), and so is one stored in a
// struct field that is passed to Receive (wave 58: gqueue's handler list),
// set in this package or in a literal another package returns.
func TestPubSubReceive(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "pubsubcb/pubsubcb.go", "earlyack", []int{19, 52, 82}, "acks with pubsub.Message.Ack before the work")
	requireFindingsAt(t, rep, "pubsubcb/adapter/adapter.go", "earlyack", []int{31}, "acks with pubsub.Message.Ack before the work")
	require.Empty(t, findingsIn(rep, "pubsubcb/pubsubcb.go", "errack"))
	n := 0
	for _, c := range rep.Consumers {
		if c.Kind == KindPubSub {
			n++
			require.NotEmpty(t, c.Acks, "%+v", c)
			require.Contains(t, c.Acks[0].What, "pubsub.Message.Ack")
		}
	}
	require.Equal(t, 5, n, "%+v", rep.Consumers)
}

// TestGeneratedLifted: a finding inside a generated file (sqlc's INSERT) is
// reported at the call of the consumer's own code that reaches it, naming
// the generated place (field trial, wave 38: go-shortener H1, goctl's
// model); nothing is reported inside the generated file.
func TestGeneratedLifted(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "gensql/gensql.go", "append", []int{14}, "gensql/queries.go:18, reached through this call)")
	for _, f := range rep.Findings {
		require.NotContains(t, f.File, "gensql/queries.go", "%+v", f)
	}
}

// TestGormGen: gorm.io/gen's generated query types write rows: a Create
// appends one per delivery (reported at the consumer's call, not in the
// generated file); one chained after Clauses (an ON CONFLICT) does not
// (field trial, wave 38: seckill-service H2, H4).
func TestGormGen(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "gormgen/gormgen.go", "append", []int{20}, "a gorm.io/gen insert (query.IOrderDo.Create)")
	c := consumerNamed(t, rep, "GenUpserts")
	require.Len(t, c.Writes, 1, "%+v", c)
	require.Contains(t, c.Writes[0].What, "a database write (query.IOrderDo.Create)")
}

// TestRabbitMQDeliveries: a loop over the deliveries RabbitMQ's Consume
// returns is a consumer whose Delivery.Ack(multiple bool) is the ack: an
// Ack after a failed write that is only logged is an errack finding, a Nack
// on the failure is not (field trial, wave 39: micro-todoList).
func TestRabbitMQDeliveries(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "rabbit/rabbit.go", "errack", []int{26, 73}, "db.ExecContext")
	require.Contains(t, findingsIn(rep, "rabbit/rabbit.go", "errack")[0].Message, "acks with amqp091.Delivery.Ack even when db.ExecContext failed (line 23)")
	// A failure skipped with neither Ack nor Nack stays unacked on the
	// channel (field trial, wave 43: m-banking H1).
	require.Contains(t, findingsIn(rep, "rabbit/rabbit.go", "errack")[1].Message, "is neither acked, nacked nor rejected, and the loop goes on")
	// A failure requeued at once with no count comes back without end;
	// one requeued only when not yet redelivered does not (field trial,
	// wave 42: zjMall H2).
	requireFindingsAt(t, rep, "rabbit/rabbit.go", "poison", []int{39}, "RabbitMQ requeues it at the head of the queue")
	for _, name := range []string{"Tasks", "TasksNack", "TasksOnce", "TasksSkip"} {
		c := consumerNamed(t, rep, name)
		require.Equal(t, KindMsgChan, c.Kind)
		require.Len(t, c.Acks, 1, "%+v", c)
		require.Contains(t, c.Acks[0].What, "amqp091.Delivery.Ack")
	}
}

// TestAsynqHandlers: hibiken/asynq task handlers are consumers whether
// given to ServeMux.HandleFunc, registered as an asynq.Handler or converted
// to asynq.HandlerFunc (a factory's closure too); a nil return marks the
// task done, so a failed write only logged is an errack finding, and the
// handlers that return the error are quiet (field trial, wave 39: Zircon,
// go-zero-douyin). A middleware's wrapper is no handler; a factory that
// returns an asynq.HandlerFunc given to mux.Handle makes one (wave 60:
// xu-shop).
func TestAsynqHandlers(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "asynqsrv/asynqsrv.go", "errack", []int{30}, "the asynq task handler acks the message")
	// A call of the package's own function that starts a goroutine on the
	// payload and returns is a hand-off: asynq marks the task done first
	// (field trial, wave 41: posta's webhook dispatcher).
	requireFindingsAt(t, rep, "asynqsrv/asynqsrv.go", "earlyack", []int{90}, "while its work runs in another goroutine (d.Dispatch, which starts a goroutine at line 89)")
	for _, name := range []string{"Publisher.ProcessTask", "asynqsrv.Serve.func1", "func literal returned by archive", "asynqsrv.newMailer.func1"} {
		c := consumerNamed(t, rep, name)
		require.Equal(t, KindAsynq, c.Kind)
		require.Contains(t, c.Acks[0].What, "asynq marks the task done when the handler returns nil")
		require.Len(t, c.Writes, 1, "%+v", c)
	}
	for _, c := range rep.Consumers {
		require.NotContains(t, c.Name, "ServeMux", "asynq's own ServeMux.ProcessTask is not the code's consumer")
		// A middleware's HandlerFunc passes the task on (wave 58: gqueue).
		require.NotEqual(t, "asynqsrv.logged.func1", c.Name, "a middleware is no consumer")
	}
}

// TestNATSConsumers: nats.go subscription callbacks (JetStream with
// ManualAck, core NATS, jetstream.Consumer.Consume) and a JetStream pull
// loop are consumers whose msg.Ack() is the ack: an Ack after a failed
// update only logged is an errack finding, a Nak on the failure is not; a
// callback with no Ack says what NATS does without one. A Term after a
// failed Metadata (the reply subject does not parse) is no errack finding
// (a new user's report).
func TestNATSConsumers(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{22, 76, 104}, findingLines(rep, "natsub/natsub.go", "errack"), "the Ack after a logged failure; a core Nak and a rollback's nil (TestCoreNATSAtMostOnce); not Next's failed NextMsgWithContext, a receive with no message in hand (wave 44)")
	require.Contains(t, findingsIn(rep, "natsub/natsub.go", "errack")[0].Message, "acks with nats.Msg.Ack even when db.Exec failed (line 19)")
	for name, kind := range map[string]string{"natsub.Orders.func1": KindNATS, "natsub.Consume.func1": KindNATS, "Pull": KindNATSPull} {
		c := consumerNamed(t, rep, name)
		require.Equal(t, kind, c.Kind)
		require.Regexp(t, `^acks with (nats\.Msg|jetstream\.Msg)\.Ack$`, c.Acks[len(c.Acks)-1].What, "%+v", c)
	}
	c := consumerNamed(t, rep, "natsub.Results.func1")
	require.Equal(t, KindNATSCore, c.Kind)
	require.Len(t, c.Acks, 1, "%+v", c)
	require.Contains(t, c.Acks[0].What, "core NATS has no ack and no redelivery")
	require.Contains(t, c.Effects[0].What, "a publish (nats.Conn.Publish)")
}

// TestRedisQueues: go-redis loops are consumers: a reliable list (BLMOVE,
// LREM its ack), a stream read by a group (XREADGROUP, XACK) and a Pub/Sub
// channel (no ack). The list loop's LREM after a failed update only logged
// is an errack finding; the stream loop that leaves a failed entry pending
// is not (field trial, wave 39: heimdall).
func TestRedisQueues(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "redislist/redislist.go", "errack", []int{27}, "acks with redis.Client.LRem even when db.ExecContext failed (line 24)")
	// The ack read through its reply (`if err := rdb.LRem(...).Err(); ...`)
	// is one ack, before the write (a new user's report).
	requireFindingsAt(t, rep, "redislist/redislist.go", "earlyack", []int{58}, "acks with redis.Client.LRem before the work")
	// The stream loop reads only new entries (">") and nothing in its
	// package reads pending ones: what it leaves unacked is never
	// delivered again (field trial, wave 59: devpool); a package that
	// reclaims them (XAUTOCLAIM) is quiet.
	requireFindingsAt(t, rep, "redislist/redislist.go", "visibility", []int{35}, "XREADGROUP reads only new entries (\">\") on the consumer path of Redis queue loop Events, and nothing in the package reads the group's pending entries")
	require.Empty(t, findingsIn(rep, "redisclaim/redisclaim.go", "visibility"))
	require.Equal(t, KindRedisQueue, consumerNamed(t, rep, "Entries").Kind)
	early := consumerNamed(t, rep, "UpdatesEarly")
	require.Len(t, early.Acks, 1, "%+v", early)
	require.True(t, early.Writes[0].AfterAck, "%+v", early)
	for name, ack := range map[string]string{"Updates": "redis.Client.LRem", "Events": "redis.Client.XAck"} {
		c := consumerNamed(t, rep, name)
		require.Equal(t, KindRedisQueue, c.Kind)
		require.Len(t, c.Acks, 1, "%+v", c)
		require.Contains(t, c.Acks[0].What, ack)
	}
	c := consumerNamed(t, rep, "Watch")
	require.Equal(t, KindRedisPubSub, c.Kind)
	require.Contains(t, c.Acks[0].What, "Redis Pub/Sub has no ack")
	require.Len(t, c.Writes, 1, "%+v", c)
}

// TestPondHandOff: a Watermill handler that hands its message's work to a
// pond pool's Submit and returns nil acks before the work (earlyack), and
// the map marks the work as in another goroutine; its twin that waits for
// the task (a WaitGroup, pond v2's Task.Wait) is quiet (field trial, wave
// 39: software-engineering H1; a new user's report).
func TestPondHandOff(t *testing.T) {
	rep := programReport(t, false)
	require.Equal(t, []int{30, 84}, findingLines(rep, "pondpay/pondpay.go", "earlyack"))
	early := findingsIn(rep, "pondpay/pondpay.go", "earlyack")
	require.Contains(t, early[0].Message, "while its work runs in another goroutine (s.Pool.Submit at line 27)")
	// A call of the package's own function that submits to a pool and
	// returns is a hand-off too (field trial, wave 42: grogu's Handle).
	require.Contains(t, early[1].Message, "while its work runs in another goroutine (p.Submit, which starts a goroutine at line 83)")
	pay := consumerNamed(t, rep, "S.Pay")
	require.Len(t, pay.Effects, 1, "%+v", pay)
	require.True(t, pay.Effects[0].Async, "%+v", pay)
	for _, name := range []string{"S.PayWait", "S.PayTask"} {
		wait := consumerNamed(t, rep, name)
		require.Len(t, wait.Effects, 1, "%+v", wait)
		require.False(t, wait.Effects[0].Async, "%+v", wait)
	}
}

// TestFailuresNotHeard: a Lambda handler that names its failed record in
// BatchItemFailures and returns a nil error loses that record when the
// repository's event source mapping does not enable
// ReportBatchItemFailures (Lambda ignores the response); with the setting,
// or with no mapping in the repository, nothing is reported (field trial,
// wave 39: Zircon H1, a SAM template with no FunctionResponseTypes).
func TestFailuresNotHeard(t *testing.T) {
	stubs, err := filepath.Abs(filepath.Join("testdata", "src"))
	require.NoError(t, err)
	const handler = `package main

import (
	"context"
	"database/sql"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

var db *sql.DB

func handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var resp events.DynamoDBEventResponse
	rec := ev.Records[0]
	if _, err := db.ExecContext(ctx, "UPDATE videos SET queued = true WHERE id = $1", rec.EventID); err != nil {
		resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: rec.EventID}}
		return resp, nil
	}
	return resp, nil
}

func main() { lambda.Start(handle) }
`
	const template = "Resources:\n  Queue:\n    Type: AWS::Serverless::Function\n    Properties:\n      Events:\n        Stream:\n          Type: DynamoDB\n          Properties:\n            BatchSize: 1\n%s"
	for _, tc := range []struct {
		name, template string
		want           int
	}{
		{"mapping without ReportBatchItemFailures", fmt.Sprintf(template, ""), 1},
		{"mapping with ReportBatchItemFailures", fmt.Sprintf(template, "            FunctionResponseTypes:\n              - ReportBatchItemFailures\n"), 0},
		{"no mapping in the repository", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mod := "module example.com/zircon\n\ngo 1.26\n\nrequire github.com/aws/aws-lambda-go v1.0.0\n\nreplace github.com/aws/aws-lambda-go => " + stubs + "/github.com/aws/aws-lambda-go\n"
			require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(handler), 0o644))
			if tc.template != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "template.yaml"), []byte(tc.template), 0o644))
			}
			rep, err := Run(&RunConfig{Dir: dir, Env: programEnv()})
			require.NoError(t, err)
			var got []Finding
			for _, f := range rep.Findings {
				if f.Check == "lambdabatch" {
					got = append(got, f)
				}
			}
			require.Len(t, got, tc.want, "%+v", rep.Findings)
			for _, f := range got {
				require.Equal(t, 18, f.Line)
				require.Contains(t, f.Message, "no event source mapping of the repository enables ReportBatchItemFailures")
			}
		})
	}
}

// TestCoreNATSAtMostOnce: on a core NATS subscription nothing is delivered
// again, so a Nak is reported as the loss it is, and no finding says an
// effect or a row repeats on a redelivery (the INSERT here would be an
// append on any redelivering consumer); the map lists no ack. A handler
// type that a JetStream wrapper calls and acks after is that wrapper's
// handler, not an entry point of its own, and a single Next for a lookup
// is no pull loop (field trial, wave 40: openuem-worker, MVP).
func TestCoreNATSAtMostOnce(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "natsub/natsub.go", "errack", []int{22, 76, 104}, "")
	found := findingsIn(rep, "natsub/natsub.go", "errack")
	require.Contains(t, found[1].Message, "asks for a redelivery with nats.Msg.NakWithDelay on a core NATS subscription")
	// A failure turned into a success answers the requester wrongly on
	// core NATS too: kept.
	require.Contains(t, found[2].Message, "returns the result of the rollback instead of the failure")
	require.Empty(t, findingsIn(rep, "natsub/natsub.go", "append"))
	certs := consumerNamed(t, rep, "natsub.Certs.func1")
	require.Equal(t, KindNATSCore, certs.Kind)
	require.Len(t, certs.Acks, 1, "%+v", certs)
	require.Contains(t, certs.Acks[0].What, "msg.Ack and msg.Nak on it do nothing")
	reg := consumerNamed(t, rep, "natsub.Register.func1")
	require.Len(t, reg.Writes, 1, "%+v", reg)
	for _, c := range rep.Consumers {
		require.NotEqual(t, "Stock", c.Name, "a wrapper's handler is not a consumer of its own")
		require.NotEqual(t, "Key", c.Name, "one Next for a lookup is not a pull loop")
	}
}

// TestGoMailSetters: go-mail's Msg setters (From, To) build the message;
// only the client's DialAndSend mails it (field trial, wave 40:
// openuem-worker's notifications).
func TestGoMailSetters(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "gomailer/gomailer.go", "effect", []int{24}, "an email (mail.Client.DialAndSend)")
}

// TestFreshPutItem: a DynamoDB PutItem overwrites by key, but an item
// keyed by an id made afresh per delivery (uuid.New) is a second item on
// each redelivery: append. Its twin keyed by the SQS message's id, with a
// fresh value only as another attribute, is quiet (field trial, wave 40:
// eztoll H1).
func TestFreshPutItem(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "freshput/freshput.go", "append", []int{23}, "a DynamoDB PutItem (dynamodb.Client.PutItem) keyed by an id made afresh with uuid.New")
}

// TestDecodeInHelper: a Sarama claim that returns the error of a helper
// which returns its decode's failure stops on a message that does not
// decode, as if it decoded itself (poison); a helper that skips such a
// message is quiet (field trial, wave 40: go-taskflow H2).
func TestDecodeInHelper(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "decodehelper/decodehelper.go", "poison", []int{31}, "returns from the receive loop when h.process fails on json.Unmarshal (line 40)")
}

// TestErrorQueueDestination: an SQS send to an error queue named in the
// configuration (cfg.ErrorQueueURL) is a dead letter, not an effect a
// redelivery repeats; the forward to the next queue is one (field trial,
// wave 41: wecredit's AwsErrorQueueUrl).
func TestErrorQueueDestination(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "errqueue/errqueue.go", "effect", []int{36}, "an AWS call (sqs.Client.SendMessage)")
}

// TestWatermillLoopNackForever: a Watermill subscription loop without a
// router that nacks every failure, with no count of attempts, redelivers a
// message that can never succeed without end (poison); its twin that reads
// an attempts header and gives up is not reported there (field trial, wave
// 41: go42 H2).
func TestWatermillLoopNackForever(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "wmloop/wmloop.go", "poison", []int{27}, "nacks the message when db.ExecContext fails (line 26), with no count of its attempts and no dead-letter")
}

// TestReceiveHelperInBreakerCallback: a one-shot SQS receive helper in
// another package, called from a function literal handed to a circuit
// breaker, stands for the ticker loop of the function around the literal:
// that loop is the consumer, the delete through the queue package's
// wrapper is its ack, and a failed HTTP call only logged before it is
// errack's; CloudWatch metrics flushed from the loop are no effect (field
// trial, wave 43: Messanger).
func TestReceiveHelperInBreakerCallback(t *testing.T) {
	rep := programReport(t, false)
	var names []string
	for _, c := range rep.Consumers {
		if strings.Contains(c.File, "/breakerpoll/") {
			names = append(names, c.File[strings.LastIndex(c.File, "/")+1:]+" "+c.Name)
		}
	}
	require.Equal(t, []string{"breakerpoll.go breakerpoll.Worker.Run", "breakerpoll.go breakerpoll.Worker.RunEarly", "breakerpoll.go breakerpoll.Worker.RunDeferred"}, names)
	// The deferred literal that deletes on every return acks a failed
	// post; the one that deletes only on a recovered panic does not
	// (field trial, wave 47: fyredocs).
	require.Equal(t, []int{80, 125}, findingLines(rep, "breakerpoll/breakerpoll.go", "errack"))
	errs := findingsIn(rep, "breakerpoll/breakerpoll.go", "errack")
	require.Contains(t, errs[0].Message, "acks with w.Q.Delete (which acks the message) even when http.Post failed (line 77)")
	require.Contains(t, errs[1].Message, "defers a function literal (which acks the message), so the message is acked on every return")
	requireFindingsAt(t, rep, "breakerpoll/breakerpoll.go", "effect", []int{77, 128, 140}, "an HTTP request (http.Post)")
	// The wrapper's delete before the post is an early ack (field trial,
	// wave 46: video-transcoder).
	requireFindingsAt(t, rep, "breakerpoll/breakerpoll.go", "earlyack", []int{95}, "acks with w.Q.Delete (which acks the message) before the work (an HTTP request (http.Post) at line 98)")
}

// TestRedisTakeThroughOwnQueue: a loop that pops through the code's own
// queue interface, whose Redis implementation takes with BRPOP, is a Redis
// queue consumer even though another consumer's walk reaches it through
// the channel implementation; the BRPOP is reported as the ack before the
// work, and the loop is at most once. Its twin's BLMOVE into a processing
// list, removed after the write, is not (field trial, wave 43: go-store's
// image worker).
func TestRedisTakeThroughOwnQueue(t *testing.T) {
	rep := programReport(t, false)
	var loops []string
	for _, c := range rep.Consumers {
		if strings.Contains(c.File, "/redispop/") && c.Kind == KindRedisQueue {
			loops = append(loops, c.Name)
			if c.Name == "redispop.Worker.Loop" {
				require.Len(t, c.Acks, 1)
				require.Contains(t, c.Acks[0].What, "takes and removes the message with Redis BRPOP")
			}
		}
	}
	require.Equal(t, []string{"redispop.Worker.Loop", "redispop.ReliableWorker.Loop"}, loops)
	requireFindingsAt(t, rep, "redispop/queue/queue.go", "earlyack", []int{27, 43}, "")
	require.Contains(t, findingsIn(rep, "redispop/queue/queue.go", "earlyack")[0].Message, "takes the message with Redis BRPOP, which removes it as it returns it, before the work of Redis queue loop redispop.Worker.Loop")
}

// TestCQRSHandlerAsInterfaceMethod: a CQRS handler given as a method
// value of an interface (`cqrs.NewEventHandler(name, ob.OnBookingMade)`)
// makes the module's methods that implement it consumers, with their
// findings (field trial, wave 47: tickets' read models).
func TestCQRSHandlerAsInterfaceMethod(t *testing.T) {
	rep := programReport(t, false)
	c := consumerIn(t, rep, "cqrsiface/readmodel/readmodel.go")
	require.Equal(t, KindCQRS, c.Kind)
	require.Equal(t, "Bookings.OnBookingMade", c.Name)
	requireFindingsAt(t, rep, "cqrsiface/readmodel/readmodel.go", "append", []int{18}, "an INSERT without ON CONFLICT (sql.DB.ExecContext) on the consumer path of Watermill CQRS handler OnBookingMade")
}

// TestStatusGuardBareReturn: checkact's other order with a status test
// that leaves by a bare return (an SQS message left undeleted), a GORM
// Save and a publish behind an interface (wave 50, video_transcoding H1);
// its twin that publishes before the Save is quiet. A GORM Save as a
// statement drops its error before the ack (H6).
func TestStatusGuardBareReturn(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "transcode/transcode.go", "checkact", []int{70}, "writes the record that a redelivery is skipped on (line 66) before the call of u.Queue.PublishJob")
	requireFindingsAt(t, rep, "transcode/transcode.go", "errack", []int{134}, "the error of w.DB.Save is dropped unread, and amqp091.Delivery.Ack acks the message (line 135)")
}

// TestFranzAutoCommit: a franz-go poll loop whose client keeps the default
// auto-commit commits past a failure it only logs (wave 54, JL's rules
// evaluator), and the map names that auto-commit as the loop's ack. A safe
// twin in the same package whose own client turns the auto-commit off is
// judged by that client, and hides nothing (a new user's report).
func TestFranzAutoCommit(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "kgoauto/kgoauto.go", "errack", []int{32}, "the auto-commit of franz-go (on by default, it commits every 5 s what the polls returned) commits its offset all the same")
	c := consumerNamed(t, rep, "Evaluator.Run")
	require.NotEmpty(t, c.Acks, "%+v", c)
	require.Contains(t, c.Acks[0].What, "franz-go's auto-commit")
	safe := consumerNamed(t, rep, "Evaluator.RunSafe")
	require.NotEmpty(t, safe.Acks, "%+v", safe)
	require.Contains(t, safe.Acks[0].What, "kgo.Client.CommitRecords")
}

// TestGoCDKInterface: a loop that receives through the application's own
// interface over Go CDK's subscription (a Receive returning
// *pubsub.Message) is a Go CDK consumer, and its acks are read as the
// client's (field trial, wave 54: qid's trigger loop, acked before its
// work).
func TestGoCDKInterface(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "cdkiface/cdkiface.go", "earlyack", []int{27}, "acks with pubsub.Message.Ack before the work")
	requireFindingsAt(t, rep, "cdkiface/cdkiface.go", "errack", []int{44}, "acks with pubsub.Message.Ack even when db.ExecContext failed")
	var names []string
	for _, c := range rep.Consumers {
		if strings.Contains(c.File, "/cdkiface/") {
			require.Equal(t, KindGoCDK, c.Kind, "%+v", c)
			names = append(names, c.Name)
		}
	}
	require.ElementsMatch(t, []string{"Triggers", "Records"}, names)
}

// TestRetryForever: a message's work retried in place until it succeeds,
// by a helper of the package (reported at the consumer's call) or by a
// loop of the consumer's own (reported at the loop), stops the consumer on
// a message that can never succeed; a counted retry, one that returns the
// error after some attempts, and a wait for the database before the
// receive loop are quiet (field trial, wave 59: devpool's withRetry).
func TestRetryForever(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "retryloop/retryloop.go", "poison", []int{72, 86}, "without a bound on the consumer path of kafka-go reader loop")
	fs := findingsIn(rep, "retryloop/retryloop.go", "poison")
	require.Contains(t, fs[0].Message, "withRetry retries the work it is given")
	require.Contains(t, fs[1].Message, "retries c.post without a bound")
}

// TestKgoHandedClient: a franz-go loop whose client is made in another
// package of the module (one that imports the loop's package) on the
// default auto-commit, and polled through the loop's own interface, runs
// on that auto-commit: a poll skipped on a fetch error and a failed write
// only logged are errack findings, and the map names the auto-commit as
// the ack (field trial, wave 59: rtsa_webgpu's training consumer).
func TestKgoHandedClient(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "kgohanded/consumer/consumer.go", "errack", []int{33, 38}, "auto-commit")
	c := consumerNamed(t, rep, "Trainer.Run")
	require.Equal(t, KindFranz, c.Kind)
	require.NotEmpty(t, c.Acks, "%+v", c)
	require.Contains(t, c.Acks[0].What, "franz-go's auto-commit")
}

// TestWrappedClients: entry points reached through the code's own
// interface over a NATS JetStreamContext (wave 60: auraedu's eventbus) and
// through an SQS wrapper library's one-message Receive and its Delete
// (wave 60: GeoNet/fdsn over GeoNet/kit) are consumers of those brokers,
// and their acks after a failure only logged are errack's.
func TestWrappedClients(t *testing.T) {
	rep := programReport(t, false)
	requireFindingsAt(t, rep, "natsiface/natsiface.go", "errack", []int{25}, "acks with nats.Msg.Ack even when db.Exec failed (line 22)")
	require.Equal(t, KindNATS, consumerNamed(t, rep, "natsiface.Invoices.func1").Kind)
	requireFindingsAt(t, rep, "kitloop/kitloop.go", "errack", []int{25}, "acks with sqswrap.SQS.Delete even when db.ExecContext failed (line 22)")
	c := consumerNamed(t, rep, "Holdings")
	require.Equal(t, KindSQS, c.Kind)
	require.Contains(t, c.Acks[0].What, "sqswrap.SQS.Delete")
}
