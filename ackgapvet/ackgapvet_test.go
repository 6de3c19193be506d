package ackgapvet_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/ackgap/ackgap/ackgapvet"
)

func TestEffect(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "effect")
}

// TestAppend: rows appended by a consumer with no dedupe record (SQL, GORM,
// ent) are reported; conflict clauses, upserts and a dedupe record on the
// consumer's path are not.
func TestAppend(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.AppendAnalyzer, "appendrow", "appendlist", "appendlistq")
}

// TestPoison: a Watermill router with no poison queue, and one whose poison
// queue runs inside Retry; the right order, a router handed to another
// function and a dead-letter middleware of the app's own are clean.
func TestPoison(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.PoisonAnalyzer, "poison", "poisonapp", "poisonstore", "poisonloop", "poisonnak")
}

// TestLambdaWrappedEvent: a Lambda handler whose event type wraps
// events.SQSEvent (one function serving several sources) is an SQS handler;
// one taking events.DynamoDBEvent is a DynamoDB Streams handler.
func TestLambdaWrappedEvent(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "lambdawrap", "lambdarecords")
}

func TestPoolTx(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), ackgapvet.PoolTxAnalyzer, "pooltx")
}

func TestEarlyAck(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EarlyAckAnalyzer, "earlyack", "earlyackvendor")
}

// TestKafkaClientBehindInterface: an application's interface over a
// franz-go client acks and publishes as the client does.
func TestKafkaClientBehindInterface(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EarlyAckAnalyzer, "kgoappiface")
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "kgoappifacepub")
}

func TestAutoCommit(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.AutoCommitAnalyzer, "autocommit", "autocommitok", "autocommitfranz", "autocommitgreedy", "autocommitassign", "autocommitnogroup", "autocommitownoffset", "autocommitsaramapart", "autocommitsaramapartok")
}

func TestCheckAct(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.CheckActAnalyzer, "checkact", "checkactok")
}

func TestIdemKey(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.IdemKeyAnalyzer, "idemkey")
}

func TestTransition(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.TransitionAnalyzer, "transition")
}

func TestHTTPClient(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.HTTPClientAnalyzer, "httpclient")
}

// TestFranzThroughInterface: a poll loop written against the application's
// interface over *kgo.Client is a franz-go poll loop (its work makes the
// auto-commit finding).
func TestFranzThroughInterface(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.AutoCommitAnalyzer, "kgoiface")
}

// TestWatermillKafkaNoGroup: a watermill-kafka subscriber without a
// consumer group commits nothing; a watermill-redisstream one reads in
// fan-out mode and acks nothing (wave 49, event-driven-go).
func TestWatermillKafkaNoGroup(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.AutoCommitAnalyzer, "wmkafka", "wmredis")
}

func TestBgContext(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), ackgapvet.ContextAnalyzer, "bgcontext")
}

func TestSleep(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.SleepAnalyzer, "sleep", "sleepwrapped")
}

func TestVisibility(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.VisibilityAnalyzer, "visibility", "kgorebalance", "kgorebalanceok", "visibilitywait", "visibilitywaitok")
}

func TestCommitOrder(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.CommitOrderAnalyzer, "commitorder")
}

func TestLambdaBatch(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.LambdaBatchAnalyzer, "lambdabatch")
}

// TestKeyed: an effect that carries the message's idempotency key is not
// reported, a publish over the transaction is an outbox write, and a
// generated HTTP API client's calls are effects (reads are not).
func TestKeyed(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "keyed")
}

func TestErrAck(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.ErrAckAnalyzer, "errack", "kgoappifaceskip", "errlog", "errackfranzpoll", "errackfranzpollcommit")
}

func TestSeverityPatterns(t *testing.T) {
	require.Equal(t, ackgapvet.SeverityCritical, ackgapvet.SeverityOf("handle", "chargeCard"))
	require.Equal(t, ackgapvet.SeverityHigh, ackgapvet.SeverityOf("sendEmail"))
	require.Equal(t, ackgapvet.SeverityLow, ackgapvet.SeverityOf("refreshCache"))
	require.Equal(t, ackgapvet.SeverityMedium, ackgapvet.SeverityOf("handle"))

	require.ErrorContains(t, ackgapvet.SetSeverityPatterns("urgent=x"), "want <critical|high|medium|low>=<regexp>")
	require.ErrorContains(t, ackgapvet.SetSeverityPatterns("low=("), "low:")
	require.Equal(t, ackgapvet.SeverityLow, ackgapvet.SeverityOf("refreshCache"), "a bad spec changes nothing")

	require.NoError(t, ackgapvet.SetSeverityPatterns("critical=cache;low=charge"))
	t.Cleanup(func() { require.NoError(t, ackgapvet.SetSeverityPatterns("")) })
	require.Equal(t, ackgapvet.SeverityCritical, ackgapvet.SeverityOf("refreshCache"))
	require.Equal(t, ackgapvet.SeverityLow, ackgapvet.SeverityOf("chargeCard"))
}

func TestAnalyzersValid(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range ackgapvet.Analyzers() {
		require.NotEmpty(t, a.Doc, a.Name)
		require.False(t, seen[a.Name], "duplicate name %s", a.Name)
		seen[a.Name] = true
	}
}

func TestCQRS(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "cqrsapp")
}

// TestLibraryCallbacks: go-queue kq handlers (a type given to
// kq.MustNewQueue) and Sarama partition consumer loops are entry points.
func TestLibraryCallbacks(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "kqapp", "saramapart", "kinesispoll", "kafkagoiface", "dynamostreams")
}

// TestSaramaCluster: a bsm/sarama-cluster Messages() loop is an entry
// point, and its MarkOffset an ack.
func TestSaramaCluster(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EarlyAckAnalyzer, "saramacluster")
}

// TestNSQHandlers: a go-nsq handler (a function converted to
// nsq.HandlerFunc, a type's HandleMessage given to AddConcurrentHandlers)
// is an entry point whose nil return finishes the message (wave 53, goim).
func TestNSQHandlers(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.ErrAckAnalyzer, "nsqapp")
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "nsqpush")
}

// TestKqCommitsOnError: a kq Consume that returns a failed update's error
// loses the message (kq commits it anyway).
func TestKqCommitsOnError(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.ErrAckAnalyzer, "kqerr")
}

func TestFactory(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "factory")
}

// TestHandlerInOtherPackage: handlers declared in one package and
// registered in another are entry points where they are declared.
func TestHandlerInOtherPackage(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "example.com/handlers", "crosspkg")
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EarlyAckAnalyzer, "example.com/ackfirst")
}

func TestConfluent(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.AutoCommitAnalyzer, "confluent", "confluenthandler", "confluentfield")
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EarlyAckAnalyzer, "confluentack")
}

// TestSQSv1: aws-sdk-go v1 receive loops, found through a wrapper that
// receives once, a v2 loop written against the application's own
// interface over the client, and a wrapper whose caller has no loop (a
// ticker elsewhere calls it): the caller is the consumer.
func TestSQSv1(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EarlyAckAnalyzer, "sqsv1", "sqsiface", "sqstick")
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "sqsv1effect")
}

// TestKnownSDKs: calls into known SDKs are effects by class (payment is
// critical, email high), reads and constructors are not, and what the SDK
// does inside is not followed.
func TestKnownSDKs(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "knownsdk", "knownsdkname")
	for prefix, class := range ackgapvet.KnownSDKs {
		require.Contains(t, []string{ackgapvet.ClassPayment, ackgapvet.ClassEmail, ackgapvet.ClassSMS,
			ackgapvet.ClassNotification, ackgapvet.ClassStorage, ackgapvet.ClassPublish, ackgapvet.ClassKubernetes, ackgapvet.ClassHTTP, ackgapvet.ClassSearch}, class, prefix)
		require.NoError(t, ackgapvet.SetConfig(&ackgapvet.Config{Effects: map[string]string{prefix: class}}), prefix)
	}
	require.NoError(t, ackgapvet.SetConfig(nil))
}

// TestEntries: functions declared by name (Config.Entries) are entry points.
func TestEntries(t *testing.T) {
	require.NoError(t, ackgapvet.SetConfig(&ackgapvet.Config{Entries: []string{"entries.Worker.Loop", "entries.sweep"}}))
	t.Cleanup(func() { require.NoError(t, ackgapvet.SetConfig(nil)) })
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "entries")
}

// TestMultiTx: a message's path that commits two transactions one after
// the other (through helpers, inline with pgx, gorm's Transaction then a
// store in another package) is reported at the second; one transaction then
// an autocommit read, alternative branches, a transaction only on the
// failure path and a transaction per item in a loop are not.
func TestMultiTx(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.MultiTxAnalyzer, "multitx")
}

// TestGoCDK: a Go CDK pubsub receive loop is an entry point whose
// msg.Ack() is the ack (wave 15, outpost).
func TestGoCDK(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.ErrAckAnalyzer, "gocdk")
}

// TestKCLRecordProcessor: a vmware-go-kcl ProcessRecords is an entry
// point whose Checkpoint is the ack: checkpointing past a record whose
// write failed loses it (wave 14, baker).
func TestKCLRecordProcessor(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.ErrAckAnalyzer, "kclack")
}

// TestKinesisScan: harlow/kinesis-consumer's Scan callback is an entry
// point that acks on nil (errack) and stops the scan on an error (poison).
func TestKinesisScan(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.PoisonAnalyzer, "kinesisscan")
	analysistest.Run(t, analysistest.TestData(), ackgapvet.ErrAckAnalyzer, "kinesisscanack")
}
