package ackgapvet

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"
)

// More root kinds, found by [Consumers.moreRoots].
const (
	// KindCQRS is a Watermill CQRS handler: the function given to
	// cqrs.NewEventHandler, NewCommandHandler or NewGroupEventHandler, or
	// the Handle method of a type registered with a processor's
	// AddHandlers (or any other cqrs call, such as the old NewFacade).
	KindCQRS = "Watermill CQRS handler"
	// KindConfluent is a function that calls confluent-kafka-go's
	// (*kafka.Consumer).Poll or ReadMessage in a loop.
	KindConfluent = "confluent-kafka-go poll loop"
	// KindKq is the Consume method of a go-queue kq.ConsumeHandler given
	// to kq.MustNewQueue or NewQueue (go-zero's Kafka queue), or a function
	// given to kq.WithHandle. kq commits each message after Consume
	// returns, and by default (KqConf.ForceCommit, default true; older
	// versions always) also when it returned an error.
	KindKq = "go-queue kq handler"
	// KindSaramaPartition is a loop over a Sarama PartitionConsumer's
	// Messages(): a partition consumer without a consumer group, whose
	// offsets are stored only if the code stores them.
	KindSaramaPartition = "Sarama partition consumer"
	// KindSaramaCluster is a loop over a bsm/sarama-cluster Consumer's
	// (or PartitionConsumer's) Messages(): a consumer group whose offsets
	// are committed when MarkOffset has marked them.
	KindSaramaCluster = "sarama-cluster consumer loop"
	// KindWatermillSub is a function that ranges over (or receives from)
	// the channel of *message.Message a Watermill Subscriber's Subscribe
	// returns, without a Router: each message is acked or nacked by the
	// loop itself (msg.Ack(), msg.Nack()).
	KindWatermillSub = "Watermill subscription loop"
	// KindKinesisScan is the function given to harlow/kinesis-consumer's
	// (*Consumer).Scan or ScanShard: the library calls it once per record
	// and checkpoints the record when it returns nil; an error stops the
	// scan, and consumer.ErrSkipCheckpoint goes on without the checkpoint.
	KindKinesisScan = "kinesis-consumer Scan callback"
	// KindKinesisPoll is a function that calls Kinesis GetRecords (aws-sdk-go
	// v1 or v2) in a loop: a shard reader of its own, which checkpoints
	// (if at all) where the application stores its sequence numbers.
	KindKinesisPoll = "Kinesis GetRecords loop"
	// KindStreamsPoll is a function that calls DynamoDB Streams
	// GetRecords (aws-sdk-go-v2's dynamodbstreams, or v1's) in a loop: a
	// shard reader of its own, like KindKinesisPoll; nothing is
	// checkpointed unless the application stores its sequence numbers, and
	// a stream keeps records for 24 hours (field trial, wave 35:
	// pismo-eval C2).
	KindStreamsPoll = "DynamoDB Streams GetRecords loop"
	// KindKCL is the ProcessRecords method of a vmware-go-kcl (v1 or v2)
	// IRecordProcessor: the worker calls it with a batch of one shard's
	// records and checkpoints only where the processor calls
	// Checkpointer.Checkpoint; records after the last checkpoint are given
	// again to the shard's next lease holder.
	KindKCL = "KCL record processor"
	// KindGoCDK is a function that calls Go CDK's (gocloud.dev/pubsub)
	// (*Subscription).Receive in a loop (or the loops that call a wrapper
	// receiving once): one client over SQS, Kafka, Google Pub/Sub, Azure
	// Service Bus, NATS and RabbitMQ, whose (*Message).Ack is the ack.
	KindGoCDK = "Go CDK pubsub receive loop"
	// KindPubSub is the function given to Google Cloud Pub/Sub's
	// Receive (cloud.google.com/go/pubsub's (*Subscription).Receive, v2's
	// (*Subscriber).Receive): the client calls it once per message, in
	// several goroutines, and redelivers a message the callback does not
	// Ack once its ack deadline passes (Nack redelivers at once). The
	// message's Ack is the ack (field trial, wave 38: cdnjs/tools).
	KindPubSub = "Google Pub/Sub Receive callback"
	// KindMsgChan is a function that ranges over (or receives from) a
	// receive-only channel a library returns whose messages ack themselves:
	// the element type, declared outside the checked package, has an
	// Ack() or Done() method (no parameters but variadic options; or
	// RabbitMQ's Delivery.Ack(multiple bool)) and carries the payload (a
	// method or field giving []byte), as nytimes/gizmo's SubscriberMessage
	// (Message, Done) and amqp091-go's Delivery (Body, Ack) do. The loop
	// acks each message with that method.
	KindMsgChan = "message channel loop"
	// KindSQSLib is a handler the code gives to an SQS consumer library
	// of another module (a package that imports the AWS SDK's SQS
	// client: ca-risken/go-sqs-poller, Wattpad/sqsconsumer, ...): a
	// function value whose last result is an error, or the one method of
	// an interface the library takes. The library's loop receives, calls
	// it and deletes the message when it returns nil: the loop is not in
	// the checked code, the handler is (field trial, waves 26 and 27).
	KindSQSLib = "SQS handler run by a library"
	// KindAsynq is a hibiken/asynq task handler: the function given to
	// (*asynq.ServeMux).HandleFunc or converted to asynq.HandlerFunc, or
	// the ProcessTask method of a value given as an asynq.Handler
	// (ServeMux.Handle, Server.Run or Start). asynq marks the task done
	// when the handler returns nil; an error (or a recovered panic) retries
	// it with backoff (MaxRetry 25 by default) and then archives it, and a
	// task whose worker dies, or that outruns its timeout (30 minutes by
	// default), runs again (field trial, wave 39: Zircon, go-zero-douyin).
	KindAsynq = "asynq task handler"
	// KindNSQ is a go-nsq message handler: the function converted to
	// nsq.HandlerFunc, or the HandleMessage method of a value given as an
	// nsq.Handler (Consumer.AddHandler, AddConcurrentHandlers). go-nsq
	// finishes the message when the handler returns nil; an error requeues
	// it with a backoff, and past MaxAttempts (5 by default) go-nsq gives
	// it up: the message is finished and only logged (go-nsq consumer.go,
	// handlerLoop; field trial, wave 53: goim's transfer and persist
	// consumers).
	KindNSQ = "go-nsq handler"
	// KindNATS is the callback given to a JetStream subscription:
	// JetStreamContext.Subscribe or QueueSubscribe (acked after the
	// callback returns unless nats.ManualAck() is given; msg.Ack() then
	// acks, and an unacked message comes back after AckWait, 30 seconds by
	// default), or jetstream.Consumer's Consume (msg.Ack()).
	KindNATS = "NATS JetStream callback"
	// KindNATSCore is the callback given to core NATS's Conn.Subscribe or
	// QueueSubscribe: no ack and no redelivery (at most once: a message in
	// flight when the process stops, or whose work fails, is lost) (field
	// trial, wave 39: programme-lv/tester).
	KindNATSCore = "core NATS subscription callback"
	// KindNATSPull is a function that pulls JetStream messages in a loop:
	// (*nats.Subscription).Fetch or NextMsg, jetstream.Consumer's Fetch,
	// FetchNoWait or FetchBytes, or MessagesContext.Next; each message acks
	// itself with msg.Ack() (field trial, wave 39: programme-lv/tester).
	KindNATSPull = "NATS JetStream pull loop"
	// KindRedisQueue is a function that takes messages from Redis in a
	// loop with go-redis: a stream read by a consumer group (XREADGROUP,
	// acked by XACK; an entry never acked stays pending for XCLAIM), or a
	// list used as a reliable queue (BLMOVE or BRPOPLPUSH into a processing
	// list, acked by LREM) or as a plain one (BLPOP, BRPOP: the pop itself
	// removes the message, so a crash before the work loses it) (field
	// trial, wave 39: heimdall's syncer).
	KindRedisQueue = "Redis queue loop"
	// KindRedisPubSub is a function that ranges over a go-redis PubSub's
	// Channel() (or calls its ReceiveMessage in a loop). Redis Pub/Sub has
	// no ack and keeps nothing: a message sent while the subscriber is
	// down, or whose work fails, is gone (field trial, wave 39: heimdall's
	// data plane).
	KindRedisPubSub = "Redis Pub/Sub loop"
	// KindEntry is a function declared an entry point by name (the
	// -entry flag, [RunConfig].Entries or the entries of [ConfigFile]).
	KindEntry = "declared entry point"
)

// Import paths of the entry points added here.
const (
	pathCQRS       = pathWatermill + "/components/cqrs"
	pathConfluent  = "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	pathConfluent1 = "github.com/confluentinc/confluent-kafka-go/kafka"
	pathSQSv1      = "github.com/aws/aws-sdk-go/service/sqs"
	pathAWSv1Svc   = "github.com/aws/aws-sdk-go/service/"
	pathKinesisCon = "github.com/harlow/kinesis-consumer"
	pathLambdaPkg  = "github.com/aws/aws-lambda-go/lambda"
	pathKinesisV2  = "github.com/aws/aws-sdk-go-v2/service/kinesis"
	pathStreamsV2  = "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	pathGoCDK      = "gocloud.dev/pubsub"
	pathPubSub     = "cloud.google.com/go/pubsub"
	pathKCL        = "github.com/vmware/vmware-go-kcl/clientlibrary/interfaces"
	pathKCL2       = "github.com/vmware/vmware-go-kcl-v2/clientlibrary/interfaces"
)

// isKCL matches vmware-go-kcl's interfaces package, v1 and v2.
func isKCL(p string) bool { return p == pathKCL || p == pathKCL2 }

// kclProcessRecords reports whether fn is a ProcessRecords method taking a
// vmware-go-kcl *ProcessRecordsInput: an IRecordProcessor's, which the
// KCL worker calls per batch of a shard's records.
func kclProcessRecords(fn *types.Func) bool {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil || fn.Name() != "ProcessRecords" || sig.Params().Len() != 1 {
		return false
	}
	p, ok := sig.Params().At(0).Type().(*types.Pointer)
	return ok && (isNamed(p.Elem(), pathKCL, "ProcessRecordsInput") || isNamed(p.Elem(), pathKCL2, "ProcessRecordsInput"))
}

// isConfluent matches confluent-kafka-go's kafka package, v1 and v2.
func isConfluent(p string) bool { return p == pathConfluent || p == pathConfluent1 }

// confluentConsumerMethod reports whether fn is a method of
// confluent-kafka-go's *kafka.Consumer, or of an application's interface
// that wraps one (a method whose parameters or results are confluent
// types: `Poll(timeoutMs int) kafka.Event`, `CommitOffsets([]kafka.TopicPartition)`),
// so that a loop written against the wrapper is read as the client's.
func confluentConsumerMethod(fn *types.Func) bool {
	if isConfluent(funcPath(fn)) && recvName(fn) == "Consumer" {
		return true
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil || !types.IsInterface(sig.Recv().Type()) {
		return false
	}
	for _, tup := range []*types.Tuple{sig.Params(), sig.Results()} {
		for v := range tup.Variables() {
			t := v.Type()
			for {
				if p, ok := t.(*types.Pointer); ok {
					t = p.Elem()
				} else if sl, ok := t.(*types.Slice); ok {
					t = sl.Elem()
				} else {
					break
				}
			}
			if n, ok := types.Unalias(t).(*types.Named); ok && n.Obj().Pkg() != nil && isConfluent(pkgPath(n.Obj().Pkg())) {
				return true
			}
		}
	}
	return false
}

// isAWSv1Client reports whether fn is a method of an aws-sdk-go v1 service
// client (sqs.SQS, sns.SNS, ...) or of its interface (sqsiface.SQSAPI), and
// returns the service's package name ("sqs").
func isAWSv1Client(fn *types.Func) (svc string, ok bool) {
	path, recv := funcPath(fn), recvName(fn)
	rest, found := strings.CutPrefix(path, pathAWSv1Svc)
	if !found || recv == "" {
		return "", false
	}
	svc, iface, _ := strings.Cut(rest, "/")
	switch {
	case iface == "" && strings.EqualFold(recv, svc):
		return svc, true
	case iface == svc+"iface" && strings.EqualFold(recv, svc+"API"):
		return svc, true
	}
	return "", false
}

// sqsOp returns the SQS operation fn performs ("ReceiveMessage",
// "DeleteMessage", ...), or "": a method of aws-sdk-go-v2's *sqs.Client, of
// aws-sdk-go v1's *sqs.SQS or sqsiface.SQSAPI (WithContext and Request
// forms included), or any other function or method, an application's own
// interface over the client included, whose name starts with the operation
// and that takes the SDK's *sqs.<Operation>Input (v1 or v2). Code on
// aws-sdk-go-v2 commonly declares such an interface to stub the client in
// tests (the SDK ships none); the call is the SDK call behind it.
func sqsOp(fn *types.Func) string {
	if fn == nil {
		return ""
	}
	path, recv := funcPath(fn), recvName(fn)
	if path == pathSQS && recv == "Client" {
		return fn.Name()
	}
	if svc, ok := isAWSv1Client(fn); ok {
		if svc == "sqs" {
			return awsV1Op(fn.Name())
		}
		return ""
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok {
		return ""
	}
	for i := range sig.Params().Len() {
		ptr, ok := types.Unalias(sig.Params().At(i).Type()).(*types.Pointer)
		if !ok {
			continue
		}
		named, ok := types.Unalias(ptr.Elem()).(*types.Named)
		if !ok || named.Obj().Pkg() == nil {
			continue
		}
		if p := pkgPath(named.Obj().Pkg()); p != pathSQS && p != pathSQSv1 {
			continue
		}
		op, ok := strings.CutSuffix(named.Obj().Name(), "Input")
		if ok && strings.HasPrefix(fn.Name(), op) {
			return op
		}
	}
	if op := sqsWrapperOp(fn, sig); op != "" {
		return op
	}
	// The application's own delete given the SDK's message (a provider
	// type's DeleteMessage(msg *sqs.Message)): the ack.
	if name := fn.Name(); strings.HasPrefix(name, "DeleteMessage") {
		for i := range sig.Params().Len() {
			t := types.Unalias(sig.Params().At(i).Type())
			if sl, ok := t.(*types.Slice); ok {
				t = sl.Elem()
			}
			if isNamed(t, pathSQSv1, "Message") || isNamed(t, pathSQS+"/types", "Message") {
				if strings.Contains(name, "Batch") {
					return "DeleteMessageBatch"
				}
				return "DeleteMessage"
			}
		}
	}
	return ""
}

// sqsWrapperOp names the SQS operation a method of an SQS client wrapper
// stands for: a method of a type declared in a package outside the AWS
// SDK that imports the SDK's SQS client directly (GeoNet/kit's aws/sqs,
// field trial wave 60: `Delete(url, receiptHandle)`): Delete or
// DeleteMessage given the queue URL and a receipt handle as strings is
// DeleteMessage. "" otherwise. (A wrapper's receive is an entry point only
// in another repository's package: see wrapperReceive.)
func sqsWrapperOp(fn *types.Func, sig *types.Signature) string {
	if !sqsWrapperMethod(fn, sig) || fn.Name() != "Delete" && fn.Name() != "DeleteMessage" {
		return ""
	}
	strs := 0
	for v := range sig.Params().Variables() {
		if b, ok := v.Type().Underlying().(*types.Basic); ok && b.Kind() == types.String {
			strs++
		}
	}
	if strs >= 2 {
		return "DeleteMessage"
	}
	return ""
}

// sqsWrapperMethod reports whether fn is a method of a concrete type
// declared in a package outside the AWS SDK that imports the SDK's SQS
// client (v1 or v2) directly.
func sqsWrapperMethod(fn *types.Func, sig *types.Signature) bool {
	if sig.Recv() == nil || fn.Pkg() == nil || strings.HasPrefix(fn.Pkg().Path(), "github.com/aws/") || types.IsInterface(sig.Recv().Type()) {
		return false
	}
	for _, imp := range fn.Pkg().Imports() {
		if imp.Path() == pathSQS || imp.Path() == pathSQSv1 {
			return true
		}
	}
	return false
}

// wrapperReceive reports whether fn is the receive of an SQS client
// wrapper library of another repository than the checked package's (see
// sqsWrapperMethod): a method named Receive... that returns a value
// besides its error (GeoNet/kit's `ReceiveWithContext(ctx, url, vis)
// (Raw, error)`, field trial wave 60). A loop calling it is an SQS
// receive loop. The code's own wrappers are followed into instead.
func (c *Consumers) wrapperReceive(fn *types.Func) bool {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || !strings.HasPrefix(fn.Name(), "Receive") || !sqsWrapperMethod(fn, sig) || sameRepo(fn.Pkg().Path(), c.pass.Pkg.Path()) {
		return false
	}
	return sig.Results().Len() >= 2 && isError(sig.Results().At(sig.Results().Len()-1).Type())
}

// kinesisGetRecords reports whether fn is Kinesis GetRecords: a method of
// aws-sdk-go-v2's *kinesis.Client, or of aws-sdk-go v1's *kinesis.Kinesis
// or kinesisiface.KinesisAPI (WithContext and Request forms included); or
// DynamoDB Streams GetRecords on either SDK (see streamsGetRecords).
func kinesisGetRecords(fn *types.Func) bool {
	if streamsGetRecords(fn) {
		return true
	}
	if funcPath(fn) == pathKinesisV2 && recvName(fn) == "Client" {
		return fn.Name() == "GetRecords"
	}
	if svc, ok := isAWSv1Client(fn); ok {
		return svc == "kinesis" && awsV1Op(fn.Name()) == "GetRecords"
	}
	// The application's (or a library's) own interface over the client,
	// kept for tests: GetRecords(ctx, *kinesis.GetRecordsInput, ...).
	sig, ok := fn.Type().(*types.Signature)
	if !ok || awsV1Op(fn.Name()) != "GetRecords" {
		return false
	}
	for i := range sig.Params().Len() {
		if p, ok := types.Unalias(sig.Params().At(i).Type()).(*types.Pointer); ok &&
			(isNamed(p.Elem(), pathKinesisV2, "GetRecordsInput") || isNamed(p.Elem(), pathAWSv1Svc+"kinesis", "GetRecordsInput")) {
			return true
		}
	}
	return false
}

// streamsGetRecords reports whether fn is DynamoDB Streams GetRecords: a
// method of aws-sdk-go-v2's *dynamodbstreams.Client, or of aws-sdk-go v1's
// *dynamodbstreams.DynamoDBStreams (WithContext and Request forms
// included).
func streamsGetRecords(fn *types.Func) bool {
	if funcPath(fn) == pathStreamsV2 && recvName(fn) == "Client" {
		return fn.Name() == "GetRecords"
	}
	svc, ok := isAWSv1Client(fn)
	return ok && svc == "dynamodbstreams" && awsV1Op(fn.Name()) == "GetRecords"
}

// kafkaGoReaderMethod reports whether fn is ReadMessage or FetchMessage of
// a kafka-go *kafka.Reader, or of the application's own interface over one
// (a method of that name returning kafka.Message, kept for tests).
func kafkaGoReaderMethod(fn *types.Func) bool {
	name := fn.Name()
	if name != "ReadMessage" && name != "FetchMessage" {
		return false
	}
	if funcPath(fn) == pathKafkaGo {
		return recvName(fn) == "Reader"
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil || !types.IsInterface(sig.Recv().Type()) {
		return false
	}
	for i := range sig.Results().Len() {
		if isNamed(sig.Results().At(i).Type(), pathKafkaGo, "Message") {
			return true
		}
	}
	return false
}

// goCDKReceive reports whether fn is Go CDK's (*pubsub.Subscription).Receive
// or a Receive method of an application's interface that returns its
// *pubsub.Message (`type Subscriber interface { Receive(ctx)
// (*pubsub.Message, error) }`, so a loop written against the interface is
// read as the client's: field trial, wave 54, qid).
func goCDKReceive(fn *types.Func) bool {
	if fn.Name() != "Receive" {
		return false
	}
	if funcPath(fn) == pathGoCDK {
		return recvName(fn) == "Subscription"
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil || !types.IsInterface(sig.Recv().Type()) {
		return false
	}
	for v := range sig.Results().Variables() {
		if p, ok := v.Type().(*types.Pointer); ok && isNamed(p.Elem(), pathGoCDK, "Message") {
			return true
		}
	}
	return false
}

// asynqMiddleware reports whether e is a function literal that passes the
// task on to an asynq.Handler's ProcessTask: a middleware's wrapper
// (`mux.Use(func(h asynq.Handler) asynq.Handler { return
// asynq.HandlerFunc(func(ctx, t) error { ...; return h.ProcessTask(ctx, t)
// }) })`), no consumer of its own (field trial, wave 58: gqueue's
// AsynqLogger listed beside the task handlers).
func asynqMiddleware(info *types.Info, e ast.Expr) bool {
	lit, ok := ast.Unparen(e).(*ast.FuncLit)
	if !ok {
		return false
	}
	found := false
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "ProcessTask" && isNamed(info.TypeOf(sel.X), pathAsynq, "Handler") {
				found = true
			}
		}
		return !found
	})
	return found
}

// awsV1Op strips the v1 SDK's WithContext and Request suffixes from an
// operation name: PublishWithContext and PublishRequest are Publish.
func awsV1Op(name string) string {
	name = strings.TrimSuffix(name, "WithContext")
	return strings.TrimSuffix(name, "Request")
}

// moreRoots finds the entry points that findRoots leaves to this file, for
// one node of its walk: Watermill CQRS handlers, confluent-kafka-go and
// aws-sdk-go v1 SQS receive loops, exported functions with a handler's exact
// signature, functions stored or returned as a handler type, and entry
// points declared by name.
func (c *Consumers) moreRoots(n ast.Node, stack []ast.Node, addRoot func(kind, name string, n ast.Node), rootOfExpr func(kind string, e ast.Expr)) {
	info := c.pass.TypesInfo
	switch n := n.(type) {
	case *ast.FuncDecl:
		fn, _ := info.Defs[n.Name].(*types.Func)
		if fn == nil {
			return
		}
		if activeConfig().entries[entryKey(fn)] {
			addRoot(KindEntry, rootName(fn), n)
		}
		if kind := handlerSigKind(fn.Type()); kind != "" && exportedFunc(fn) {
			addRoot(kind, rootName(fn), n)
		}
		if kclProcessRecords(fn) {
			addRoot(KindKCL, rootName(fn), n)
		}
		c.storedHandlers(n.Type, n.Body, rootOfExpr)
	case *ast.FuncLit:
		c.storedHandlers(n.Type, n.Body, rootOfExpr)
	case *ast.RangeStmt:
		// for msg := range messages, messages from Subscribe.
		if isWatermillMsgChan(info.TypeOf(n.X)) {
			c.receiveRoot(KindWatermillSub, stack, addRoot)
		} else if isRedisMsgChan(info.TypeOf(n.X)) {
			c.receiveRoot(KindRedisPubSub, stack, addRoot)
		} else if c.isAckableMsgChan(info.TypeOf(n.X)) {
			c.receiveRoot(KindMsgChan, stack, addRoot)
		}
	case *ast.UnaryExpr:
		// msg := <-messages (in a for or select loop).
		if n.Op == token.ARROW && isWatermillMsgChan(info.TypeOf(n.X)) {
			c.receiveRoot(KindWatermillSub, stack, addRoot)
		} else if n.Op == token.ARROW && isRedisMsgChan(info.TypeOf(n.X)) {
			c.receiveRoot(KindRedisPubSub, stack, addRoot)
		} else if n.Op == token.ARROW && c.isAckableMsgChan(info.TypeOf(n.X)) {
			c.receiveRoot(KindMsgChan, stack, addRoot)
		}
	case *ast.CallExpr:
		if tv, ok := info.Types[n.Fun]; ok && tv.IsType() && isNamed(tv.Type, pathAsynq, "HandlerFunc") && len(n.Args) == 1 {
			if !asynqMiddleware(info, n.Args[0]) {
				rootOfExpr(KindAsynq, n.Args[0]) // asynq.HandlerFunc(f)
			}
			return
		}
		if tv, ok := info.Types[n.Fun]; ok && tv.IsType() && isNamed(tv.Type, pathNSQ, "HandlerFunc") && len(n.Args) == 1 {
			rootOfExpr(KindNSQ, n.Args[0]) // nsq.HandlerFunc(f)
			return
		}
		fn := callee(info, n)
		if fn == nil {
			return
		}
		path, recv, name := funcPath(fn), recvName(fn), fn.Name()
		switch {
		case path == pathAsynq && recv == "ServeMux" && name == "HandleFunc" && len(n.Args) == 2:
			rootOfExpr(KindAsynq, n.Args[1])
		case (isNATS(path) || abstractMethod(fn)) && (name == "Subscribe" || name == "QueueSubscribe" || name == "Consume"):
			// The client's method, or the same method of the code's own
			// interface over it (field trial, wave 60: auraedu's
			// eventbus.JetStreamContext); only an argument of a NATS
			// handler's type makes a root.
			kind := KindNATS
			if recv == "Conn" || !isNATS(path) && !natsSubOpts(fn) {
				kind = KindNATSCore
			}
			for _, a := range n.Args {
				if isNATSHandler(info.TypeOf(a)) {
					rootOfExpr(kind, a)
				}
			}
		case isNATS(path) && natsPull[recv+"."+name]:
			if c.pullsInLoop(stack) {
				c.receiveRoot(KindNATSPull, stack, addRoot)
			}
		case isGoRedis(path) && redisReceive[name]:
			c.receiveRoot(KindRedisQueue, stack, addRoot)
		case isGoRedis(path) && recv == "PubSub" && name == "ReceiveMessage":
			c.receiveRoot(KindRedisPubSub, stack, addRoot)
		case path == pathCQRS:
			if strings.HasPrefix(name, "New") && strings.HasSuffix(name, "Handler") {
				for _, a := range n.Args {
					if _, ok := types.Unalias(info.TypeOf(a)).(*types.Signature); ok {
						rootOfExpr(KindCQRS, a)
					}
				}
			}
			for _, a := range n.Args {
				c.cqrsHandleMethods(a, addRoot)
			}
		case path == pathLambdaPkg && strings.HasPrefix(name, "Start") && len(n.Args) > 0:
			// lambda.Start(handler) whose event is the application's own
			// type holding a batch's records (Records []events.SQSMessage):
			// one handler for a batch and a direct invocation.
			if sig, ok := types.Unalias(info.TypeOf(n.Args[0])).Underlying().(*types.Signature); ok {
				if k := recordsParamKind(sig); k != "" {
					rootOfExpr(k, n.Args[0])
				}
			}
		case (path == "github.com/zeromicro/go-queue/kq" || path == "github.com/tal-tech/go-queue/kq") && recv == "" && name == "WithHandle" && len(n.Args) == 1:
			// kq.MustNewQueue(c, kq.WithHandle(func(ctx, k, v string) error {...})):
			// the function is the queue's Consume (field trial wave 36,
			// smart-reserve C1).
			rootOfExpr(KindKq, n.Args[0])
		case path == pathKinesisCon && recv == "Consumer" && (name == "Scan" || name == "ScanShard"):
			for _, a := range n.Args {
				if _, ok := types.Unalias(info.TypeOf(a)).Underlying().(*types.Signature); ok {
					rootOfExpr(KindKinesisScan, a)
				}
			}
		case (name == "Poll" || name == "ReadMessage") && confluentConsumerMethod(fn):
			c.receiveRoot(KindConfluent, stack, addRoot)
		case isSaramaPath(path) && path != pathSaramaCluster && recv == "PartitionConsumer" && name == "Messages":
			c.receiveRoot(KindSaramaPartition, stack, addRoot)
		case path == pathSaramaCluster && (recv == "Consumer" || recv == "PartitionConsumer") && name == "Messages":
			c.receiveRoot(KindSaramaCluster, stack, addRoot)
		case streamsGetRecords(fn):
			c.receiveRoot(KindStreamsPoll, stack, addRoot)
		case kinesisGetRecords(fn):
			c.receiveRoot(KindKinesisPoll, stack, addRoot)
		case isPubSub(path) && (recv == "Subscription" || recv == "Subscriber") && name == "Receive" && len(n.Args) == 2:
			rootOfExpr(KindPubSub, n.Args[1])
		case goCDKReceive(fn):
			c.receiveRoot(KindGoCDK, stack, addRoot)
		case path == pathGoLambda && recv == "" && name == "Start" && len(n.Args) == 1 && c.decapsSQS():
			// m-mizutani/golambda: Start(callback) runs lambda.Start; the
			// callback reads SQS records with Event.DecapSQSBody.
			rootOfExpr(KindLambda, n.Args[0])
		default:
			if sqsOp(fn) == "ReceiveMessage" || c.wrapperReceive(fn) {
				c.receiveRoot(KindSQS, stack, addRoot)
			}
		}
		c.callbackRoots(fn, n, addRoot)
		c.sqsLibraryRoots(fn, n, addRoot, rootOfExpr)
	}
}

// sqsLibraryRoots makes entry points of the handlers call (a call of fn)
// gives to an SQS consumer library (see KindSQSLib): fn's package is of
// another repository than the checked package, not the AWS SDK's own, and
// imports the SDK's SQS client (v1 or v2). An argument whose parameter is
// a function type with an error as its last result is a root; so is, for
// a parameter that is an interface of one method with an error as its
// last result, that method of the argument's concrete types.
func (c *Consumers) sqsLibraryRoots(fn *types.Func, call *ast.CallExpr, addRoot func(kind, name string, n ast.Node), rootOfExpr func(kind string, e ast.Expr)) {
	p := fn.Pkg()
	if p == nil || p == c.pass.Pkg || sameRepo(p.Path(), c.pass.Pkg.Path()) || strings.HasPrefix(p.Path(), "github.com/aws/") || !importsSQS(p) {
		return
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok {
		return
	}
	errLast := func(s *types.Signature) bool {
		return s.Params().Len() > 0 && s.Results().Len() > 0 && isError(s.Results().At(s.Results().Len()-1).Type())
	}
	for i, a := range call.Args {
		pt := paramType(sig, i)
		if pt == nil {
			continue
		}
		switch u := pt.Underlying().(type) {
		case *types.Signature:
			if errLast(u) {
				rootOfExpr(KindSQSLib, a)
			}
		case *types.Interface:
			if u.NumMethods() != 1 {
				continue
			}
			im := u.Method(0)
			if s, ok := im.Type().(*types.Signature); !ok || !errLast(s) {
				continue
			}
			for _, t := range c.concreteTypes(a) {
				obj, _, _ := types.LookupFieldOrMethod(t, true, c.pass.Pkg, im.Name())
				m, ok := obj.(*types.Func)
				if !ok || m.Pkg() == nil || sameRepo(m.Pkg().Path(), p.Path()) {
					continue
				}
				if d := c.decls[m.Origin()]; d != nil {
					addRoot(KindSQSLib, rootName(m), d)
				} else {
					c.remotes = append(c.remotes, remote{kind: KindSQSLib, fn: m.Origin()})
				}
			}
		}
	}
}

// importsSQS reports whether p imports the AWS SDK's SQS client (v1 or v2,
// its types and interfaces included), itself or through a package of its
// own repository (a library's middleware package over its consumer).
func importsSQS(p *types.Package) bool {
	direct := func(p *types.Package) bool {
		for _, imp := range p.Imports() {
			if strings.HasPrefix(imp.Path(), "github.com/aws/aws-sdk-go/service/sqs") || strings.HasPrefix(imp.Path(), pathSQS) {
				return true
			}
		}
		return false
	}
	if direct(p) {
		return true
	}
	for _, imp := range p.Imports() {
		if sameRepo(imp.Path(), p.Path()) && direct(imp) {
			return true
		}
	}
	return false
}

// sameRepo reports whether import paths a and b are in one repository:
// the same host, owner and name for a code host (github.com/o/r/...),
// the same first two elements otherwise.
func sameRepo(a, b string) bool {
	pa, pb := strings.Split(a, "/"), strings.Split(b, "/")
	n := 2
	switch pa[0] {
	case "github.com", "gitlab.com", "bitbucket.org":
		n = 3
	}
	if len(pa) < n || len(pb) < n {
		return a == b
	}
	return slices.Equal(pa[:n], pb[:n])
}

// libraryCallbacks are interfaces of consumer libraries whose method the
// library calls once per message: a value given to a library function as
// one of them makes that method of the value's type an entry point.
var libraryCallbacks = []struct{ path, iface, method, kind string }{
	{"github.com/zeromicro/go-queue/kq", "ConsumeHandler", "Consume", KindKq},
	{"github.com/tal-tech/go-queue/kq", "ConsumeHandler", "Consume", KindKq},
	{pathAsynq, "Handler", "ProcessTask", KindAsynq},
	{pathNSQ, "Handler", "HandleMessage", KindNSQ},
}

// pathNSQ is go-nsq, NSQ's client.
const pathNSQ = "github.com/nsqio/go-nsq"

// callbackRoots makes entry points of the callback methods of values passed
// to call (a call of fn) as one of [libraryCallbacks]: the method of this
// package's type is a root here, another package's is followed as a remote
// entry point by the whole-program mode, and so is a value made by a
// constructor of another package that returns the interface
// (msgtransfer.NewMsgReadTransfer(svc) returning kq.ConsumeHandler).
func (c *Consumers) callbackRoots(fn *types.Func, call *ast.CallExpr, addRoot func(kind, name string, n ast.Node)) {
	sig, ok := fn.Type().(*types.Signature)
	if !ok {
		return
	}
	for i, a := range call.Args {
		pt := paramType(sig, i)
		if pt == nil {
			continue
		}
		for _, lc := range libraryCallbacks {
			if !isNamed(pt, lc.path, lc.iface) {
				continue
			}
			if call, ok := ast.Unparen(a).(*ast.CallExpr); ok && types.IsInterface(c.pass.TypesInfo.TypeOf(a)) {
				if f := callee(c.pass.TypesInfo, call); f != nil && f.Pkg() != c.pass.Pkg {
					c.remotes = append(c.remotes, remote{kind: lc.kind, fn: f, method: lc.method})
					continue
				}
			}
			for _, t := range c.concreteTypes(a) {
				obj, _, _ := types.LookupFieldOrMethod(t, true, c.pass.Pkg, lc.method)
				m, ok := obj.(*types.Func)
				if !ok || m.Pkg() != nil && m.Pkg().Path() == lc.path {
					continue // the library's own (asynq's ServeMux, HandlerFunc)
				}
				if d := c.decls[m.Origin()]; d != nil {
					addRoot(lc.kind, rootName(m), d)
				} else {
					c.remotes = append(c.remotes, remote{kind: lc.kind, fn: m.Origin()})
				}
			}
		}
	}
}

// concreteTypes returns the concrete types e may hold: its own type, or,
// when that is an interface and e calls a constructor of this package
// (logic.NewConsumer(svc) returning kq.ConsumeHandler), the types of the
// values the constructor returns.
func (c *Consumers) concreteTypes(e ast.Expr) []types.Type {
	info := c.pass.TypesInfo
	t := info.TypeOf(e)
	if t == nil {
		return nil
	}
	if !types.IsInterface(t) {
		return []types.Type{t}
	}
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return nil
	}
	fn := callee(info, call)
	if fn == nil || c.decls[fn] == nil || c.decls[fn].Body == nil {
		return nil
	}
	var out []types.Type
	ast.Inspect(c.decls[fn].Body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if ret, ok := n.(*ast.ReturnStmt); ok && len(ret.Results) > 0 {
			if rt := info.TypeOf(ret.Results[0]); rt != nil && !types.IsInterface(rt) {
				out = append(out, rt)
			}
		}
		return true
	})
	return out
}

// rootName is a root's name for messages and severity: Func, or Type.Method.
func rootName(fn *types.Func) string {
	if r := recvName(fn); r != "" {
		return r + "." + fn.Name()
	}
	return fn.Name()
}

// exportedFunc reports whether another package can call fn: an exported
// function, or an exported method of an exported type.
func exportedFunc(fn *types.Func) bool {
	if !fn.Exported() {
		return false
	}
	r := recvName(fn)
	return r == "" || ast.IsExported(r)
}

// handlerSigKind returns KindWatermill for a signature that is exactly a
// Watermill handler's (func(*message.Message) ([]*message.Message, error) or
// func(*message.Message) error), KindAckgap for an ackgap handler's
// (func(context.Context, tx, *message.Message) error, or with
// []*message.Message for a batch handler, tx a *sql.Tx or pgx.Tx), "" for
// anything else. A method's receiver does not count.
func handlerSigKind(t types.Type) string {
	sig, ok := types.Unalias(t).(*types.Signature)
	if !ok || sig.TypeParams().Len() > 0 {
		return ""
	}
	ps, rs := sig.Params(), sig.Results()
	if rs.Len() == 0 || !isError(rs.At(rs.Len()-1).Type()) {
		return ""
	}
	switch {
	case ps.Len() == 1 && isWatermillMsg(ps.At(0).Type()):
		if rs.Len() == 1 {
			return KindWatermill
		}
		if sl, ok := rs.At(0).Type().(*types.Slice); ok && rs.Len() == 2 && isWatermillMsg(sl.Elem()) {
			return KindWatermill
		}
	case ps.Len() == 3 && rs.Len() == 1 && isNamed(ps.At(0).Type(), "context", "Context") && isTxType(ps.At(1).Type()):
		m := ps.At(2).Type()
		if sl, ok := m.(*types.Slice); ok {
			m = sl.Elem()
		}
		if isWatermillMsg(m) {
			return KindAckgap
		}
	}
	return ""
}

// isWatermillMsg reports whether t is *message.Message of Watermill.
func isWatermillMsg(t types.Type) bool {
	p, ok := t.(*types.Pointer)
	return ok && isNamed(p.Elem(), pathWatermill+"/message", "Message")
}

func isError(t types.Type) bool { return types.Identical(t, types.Universe.Lookup("error").Type()) }

// storedKind is the root kind of a function value stored or returned as
// type t: a handler type ([Consumers.handlerKind]) or a function type that
// is exactly a handler's signature ([handlerSigKind]).
func (c *Consumers) storedKind(t types.Type) string {
	if t == nil {
		return ""
	}
	if kind := c.handlerKind(t); kind != "" {
		return kind
	}
	if _, named := types.Unalias(t).(*types.Named); named {
		return ""
	}
	return handlerSigKind(t)
}

// storedHandlers makes roots of the function values that a function body
// returns as a handler type (a factory: return func(msg *message.Message)
// error {...}) or assigns to a variable or field of one. Nested function
// literals are visited on their own. A middleware, which is given the next
// handler and returns one that wraps it (`func(next message.HandlerFunc)
// message.HandlerFunc`), returns no consumer of its own: the handlers it
// wraps are (field trial, wave 47: tickets' four router middlewares
// listed as consumers).
func (c *Consumers) storedHandlers(ft *ast.FuncType, body *ast.BlockStmt, rootOfExpr func(kind string, e ast.Expr)) {
	if body == nil {
		return
	}
	info := c.pass.TypesInfo
	var results []types.Type
	if ft.Results != nil {
		for _, f := range ft.Results.List {
			for range max(1, len(f.Names)) {
				results = append(results, info.TypeOf(f.Type))
			}
		}
	}
	if ft.Params != nil {
		for _, f := range ft.Params.List {
			if k := c.storedKind(info.TypeOf(f.Type)); k != "" && slices.ContainsFunc(results, func(t types.Type) bool { return c.storedKind(t) == k }) {
				results = nil // a middleware: given a handler, returns one of the same kind
			}
		}
	}
	ast.Inspect(body, func(m ast.Node) bool {
		switch m := m.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			if len(m.Results) != len(results) {
				return true
			}
			for i, e := range m.Results {
				if kind := c.storedKind(results[i]); kind != "" {
					rootOfExpr(kind, e)
				}
			}
		case *ast.AssignStmt:
			if len(m.Lhs) != len(m.Rhs) {
				return true
			}
			for i, l := range m.Lhs {
				if kind := c.storedKind(info.TypeOf(l)); kind != "" {
					rootOfExpr(kind, m.Rhs[i])
				}
			}
		}
		return true
	})
}

// factoryRoots makes roots of what a call of a package-local factory
// returns: AddHandler(..., makeHandler(store)) registers the func literal or
// function that makeHandler returns. A factory returning another factory's
// call is followed three levels deep.
func (c *Consumers) factoryRoots(kind string, e ast.Expr, addRoot func(kind, name string, n ast.Node)) {
	c.factoryRootsDepth(kind, e, addRoot, 3)
}

func (c *Consumers) factoryRootsDepth(kind string, e ast.Expr, addRoot func(kind, name string, n ast.Node), depth int) {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || depth == 0 {
		return
	}
	fn := callee(c.pass.TypesInfo, call)
	if fn == nil {
		return
	}
	decl := c.decls[fn.Origin()]
	if decl == nil {
		return
	}
	ast.Inspect(decl.Body, func(m ast.Node) bool {
		switch m := m.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			for _, r := range m.Results {
				if t := c.pass.TypesInfo.TypeOf(r); t == nil || !isSignature(t) {
					continue
				}
				switch r := ast.Unparen(r).(type) {
				case *ast.FuncLit:
					addRoot(kind, "func literal returned by "+fn.Name(), r)
				case *ast.CallExpr:
					c.factoryRootsDepth(kind, r, addRoot, depth-1)
				default:
					if f := usedFunc(c.pass, r); f != nil && c.decls[f] != nil {
						addRoot(kind, rootName(f), c.decls[f])
					}
				}
			}
		}
		return true
	})
}

// cqrsHandleMethods makes roots of the Handle methods of this package's
// types whose values appear in a cqrs call's argument (processor.AddHandlers(
// &OrderPlacedHandler{...}), a FacadeConfig's EventHandlers): a Handle method
// taking a context.Context first.
func (c *Consumers) cqrsHandleMethods(arg ast.Expr, addRoot func(kind, name string, n ast.Node)) {
	info := c.pass.TypesInfo
	ast.Inspect(arg, func(m ast.Node) bool {
		e, ok := m.(ast.Expr)
		if !ok {
			return true
		}
		t := info.TypeOf(e)
		if t == nil {
			return true
		}
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		named, ok := types.Unalias(t).(*types.Named)
		if !ok || named.Obj().Pkg() != c.pass.Pkg {
			return true
		}
		obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(named), false, c.pass.Pkg, "Handle")
		h, ok := obj.(*types.Func)
		if !ok || c.decls[h.Origin()] == nil {
			return true
		}
		sig := h.Type().(*types.Signature)
		if sig.Params().Len() == 0 || !isNamed(sig.Params().At(0).Type(), "context", "Context") {
			return true
		}
		addRoot(KindCQRS, rootName(h), c.decls[h.Origin()])
		return true
	})
}

// receiveRoot makes a receive loop's function a root. A receive call inside
// a for or range loop makes its enclosing function the root. A declared
// function that receives once (a wrapper returning the messages) is not the
// loop: the functions of this package that call it in a loop are, through up
// to three levels of wrappers; when no caller in the package loops, its
// direct callers in the package are (they take the messages it returns;
// the loop is elsewhere, a ticker calling them through an interface), and
// with no caller in the package the wrapper itself is the root.
func (c *Consumers) receiveRoot(kind string, stack []ast.Node, addRoot func(kind, name string, n ast.Node)) {
	fnNode, looped := enclosingLoop(stack)
	if fnNode == nil {
		return
	}
	name := "func literal"
	if fd, ok := fnNode.(*ast.FuncDecl); ok {
		name = fd.Name.Name
		if looped && collectsBatch(c.pass.TypesInfo, fd) {
			looped = false // its loop gathers one batch: the caller's loop is the consumer's
		}
		if !looped {
			if fn, ok := c.pass.TypesInfo.Defs[fd.Name].(*types.Func); ok {
				callers := c.loopCallers(fn, 3)
				if len(callers) == 0 {
					// No loop here (the loop is a ticker in another
					// package): the functions that take the messages
					// from the wrapper are the consumers.
					callers = c.directCallers(fn)
				}
				if len(callers) > 0 {
					for _, n := range callers {
						addRoot(kind, funcNodeName(n), n)
					}
					return
				}
				// No caller here: the loop may be in another package.
				addRoot(kind, name, fnNode)
				for _, r := range c.Roots {
					if r.Node == fnNode {
						r.wrapper = true
					}
				}
				return
			}
		}
	}
	addRoot(kind, name, fnNode)
}

// collectsBatch reports whether fd polls in a loop only to gather one
// batch it returns: its first result is a slice, and it acks nothing (a
// fetchBatch that polls until MaxPollRecords or a deadline). The loop that
// calls it, hands the batch to the work and commits is the consumer's
// (field trial, wave 21: Finvibe's fetchBatch under runGroup; waves 23 and
// 24: a batch gathered through the code's own fetch wrapper in another
// package, webhook-delivery's fetchBatchMessages under Worker.Run).
func collectsBatch(info *types.Info, fd *ast.FuncDecl) bool {
	if fd.Body == nil || fd.Type.Results == nil || len(fd.Type.Results.List) == 0 {
		return false
	}
	t := info.TypeOf(fd.Type.Results.List[0].Type)
	if t == nil {
		return false
	}
	if _, ok := t.Underlying().(*types.Slice); !ok {
		return false
	}
	acks := false
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && ackOf(info, call) != "" {
			acks = true
		}
		return !acks
	})
	return !acks
}

// enclosingLoop returns the innermost function around the end of stack and
// whether a for or range statement inside that function encloses it. A
// function literal called in place, or one with no loop around the
// receive that no go statement starts (act := func() error { m, err =
// r.FetchMessage(ctx); return err }; retry.Do(ctx, act)), is part of the
// function around it.
func enclosingLoop(stack []ast.Node) (ast.Node, bool) {
	looped := false
	for i := len(stack) - 1; i >= 0; i-- {
		switch stack[i].(type) {
		case *ast.ForStmt, *ast.RangeStmt:
			looped = true
		case *ast.FuncLit:
			if calledInPlace(stack, i) || !looped && !startedByGo(stack, i) {
				// Called in place, or a literal that receives once handed
				// to the code's own helper (a retry wrapper): the function
				// around it takes the message.
				continue
			}
			return stack[i], looped
		case *ast.FuncDecl:
			return stack[i], looped
		}
	}
	return nil, false
}

// startedByGo reports whether the function literal stack[i] is the
// function of a go statement (go func() {...}()) or is given to one.
func startedByGo(stack []ast.Node, i int) bool {
	for j := i - 1; j >= 0 && j >= i-2; j-- {
		if _, ok := stack[j].(*ast.GoStmt); ok {
			return true
		}
	}
	return false
}

// calledInPlace reports whether the function literal stack[i] is called
// where it is written (func() kgo.Fetches { ctx, cancel :=
// context.WithTimeout(...); defer cancel(); return cl.PollFetches(ctx) }()):
// a scope for a defer, part of the function around it, whose loop, work
// and ack are the consumer's. A literal started by a go statement is not.
func calledInPlace(stack []ast.Node, i int) bool {
	if i == 0 {
		return false
	}
	call, ok := stack[i-1].(*ast.CallExpr)
	if !ok || ast.Unparen(call.Fun) != stack[i] {
		return false
	}
	_, started := stack[max(i-2, 0)].(*ast.GoStmt) // go func() {...}(): a goroutine of its own
	return !started
}

func funcNodeName(n ast.Node) string {
	if fd, ok := n.(*ast.FuncDecl); ok {
		return fd.Name.Name
	}
	return "func literal"
}

// directCallers returns the functions of this package that call fn.
func (c *Consumers) directCallers(fn *types.Func) []ast.Node {
	var out []ast.Node
	inspectStack(c.pass.Files, func(n ast.Node, stack []ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if cf := callee(c.pass.TypesInfo, call); cf != nil && cf.Origin() == fn {
				if encl, _ := enclosingLoop(stack); encl != nil && !slices.Contains(out, encl) {
					out = append(out, encl)
				}
			}
		}
		return true
	})
	return out
}

// loopCallers returns the functions of this package that call fn inside a
// loop, directly or through callers that do not loop (depth levels).
func (c *Consumers) loopCallers(fn *types.Func, depth int) []ast.Node {
	if depth == 0 {
		return nil
	}
	var out []ast.Node
	inspectStack(c.pass.Files, func(n ast.Node, stack []ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if cf := callee(c.pass.TypesInfo, call); cf == nil || cf.Origin() != fn {
			return true
		}
		encl, looped := enclosingLoop(stack)
		switch {
		case encl == nil:
		case looped:
			out = append(out, encl)
		default:
			if fd, ok := encl.(*ast.FuncDecl); ok {
				if up, ok := c.pass.TypesInfo.Defs[fd.Name].(*types.Func); ok && up != fn {
					out = append(out, c.loopCallers(up, depth-1)...)
				}
			}
		}
		return true
	})
	return out
}

// entryKey is how [Config].Entries names fn: pkgpath.Func or
// pkgpath.Type.Method.
func entryKey(fn *types.Func) string {
	return funcPath(fn) + "." + rootName(fn)
}

func isSignature(t types.Type) bool {
	_, ok := t.Underlying().(*types.Signature)
	return ok
}

// isWatermillMsgChan reports whether t is a receive-only channel of
// Watermill's *message.Message (what Subscriber.Subscribe returns).
func isWatermillMsgChan(t types.Type) bool {
	if t == nil {
		return false
	}
	ch, ok := t.Underlying().(*types.Chan)
	if !ok || ch.Dir() != types.RecvOnly {
		// Subscribe returns a receive-only channel; a channel the module
		// makes itself is a hand-off to its own workers.
		return false
	}
	p, ok := ch.Elem().(*types.Pointer)
	return ok && isNamed(p.Elem(), pathWatermill+"/message", "Message")
}

// isPubSub matches Google Cloud Pub/Sub's client packages: v1, whose
// Message is an alias of cloud.google.com/go/internal/pubsub's, and v2.
func isPubSub(path string) bool {
	return path == pathPubSub || path == pathPubSub+"/v2" || path == "cloud.google.com/go/internal/pubsub" || path == pathPubSub+"/v2/internal/pubsub"
}

// pathGoLambda is m-mizutani/golambda, a wrapper of aws-lambda-go whose
// callback takes a golambda.Event and decodes its records itself.
const pathGoLambda = "github.com/m-mizutani/golambda"

// decapsSQS reports whether the package reads SQS records from a golambda
// event (Event.DecapSQSBody or DecapSNSonSQSMessage): its golambda.Start
// callbacks are then Lambda SQS handlers (a callback for an API Gateway
// or a Step Functions event decodes nothing of the kind).
func (c *Consumers) decapsSQS() bool {
	info := c.pass.TypesInfo
	for _, f := range c.pass.Files {
		found := false
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && !found {
				if fn := callee(info, call); fn != nil && funcPath(fn) == pathGoLambda && recvName(fn) == "Event" && (fn.Name() == "DecapSQSBody" || fn.Name() == "DecapSNSonSQSMessage") {
					found = true
				}
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// isAckableMsgChan reports whether t is a receive-only channel (what a
// library's subscribe call returns) of messages that ack themselves (see
// [KindMsgChan]), their type declared outside the checked package.
func (c *Consumers) isAckableMsgChan(t types.Type) bool {
	if t == nil {
		return false
	}
	ch, ok := t.Underlying().(*types.Chan)
	if !ok || ch.Dir() != types.RecvOnly {
		return false
	}
	elem := ch.Elem()
	if p, ok := elem.(*types.Pointer); ok {
		elem = p.Elem()
	}
	named, ok := types.Unalias(elem).(*types.Named)
	if !ok || named.Obj().Pkg() == nil || named.Obj().Pkg() == c.pass.Pkg {
		return false
	}
	return selfAckMethod(ch.Elem()) != nil && carriesPayload(ch.Elem())
}

// selfAckMethod returns the Ack or Done method of a message type t (or
// *t): no parameters but variadic options, no result or an error; nil if
// t has none.
func selfAckMethod(t types.Type) *types.Func {
	ms := types.NewMethodSet(t)
	if _, isPtr := t.(*types.Pointer); !isPtr && !types.IsInterface(t) {
		ms = types.NewMethodSet(types.NewPointer(t))
	}
	for _, name := range []string{"Ack", "Done"} {
		sel := lookupMethod(ms, name)
		if sel == nil {
			continue
		}
		fn := sel.Obj().(*types.Func)
		sig := fn.Type().(*types.Signature)
		params := sig.Params().Len()
		if sig.Variadic() {
			params--
		}
		res := sig.Results()
		if params == 1 && name == "Ack" && isAMQP(funcPath(fn)) && types.Identical(sig.Params().At(0).Type(), types.Typ[types.Bool]) {
			params = 0 // RabbitMQ's Delivery.Ack(multiple bool)
		}
		if params == 0 && (res.Len() == 0 || res.Len() == 1 && types.Identical(res.At(0).Type(), types.Universe.Lookup("error").Type())) {
			return fn
		}
	}
	return nil
}

// pullsInLoop reports whether the receive at the end of stack is in a
// loop, or in a function whose callers (up to three levels) call it in
// one: a single Next for a request's reply (a key lookup) is no consumer
// (field trial, wave 40: MVP's VerifyToken).
func (c *Consumers) pullsInLoop(stack []ast.Node) bool {
	fnNode, looped := enclosingLoop(stack)
	if looped {
		return true
	}
	fd, ok := fnNode.(*ast.FuncDecl)
	if !ok {
		return false
	}
	fn, ok := c.pass.TypesInfo.Defs[fd.Name].(*types.Func)
	return ok && len(c.loopCallers(fn, 3)) > 0
}

// Import paths of nats.go and its jetstream package.
const (
	pathNATS      = "github.com/nats-io/nats.go"
	pathJetStream = pathNATS + "/jetstream"
)

// isNATS matches nats.go and its jetstream package.
func isNATS(path string) bool { return path == pathNATS || path == pathJetStream }

// natsSubOpts reports whether fn's last parameter is JetStream's
// subscription options (...nats.SubOpt): an interface's Subscribe over a
// JetStreamContext rather than a core connection.
func natsSubOpts(fn *types.Func) bool {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || !sig.Variadic() {
		return false
	}
	last, ok := sig.Params().At(sig.Params().Len() - 1).Type().(*types.Slice)
	return ok && isNamed(last.Elem(), pathNATS, "SubOpt")
}

// isNATSMsg reports whether t is a NATS message: *nats.Msg or
// jetstream.Msg.
func isNATSMsg(t types.Type) bool {
	return isNamed(t, pathNATS, "Msg") || isNamed(t, pathJetStream, "Msg")
}

// isNATSHandler reports whether t is a nats.go message callback:
// nats.MsgHandler, jetstream.MessageHandler, or a function of one
// *nats.Msg or jetstream.Msg.
func isNATSHandler(t types.Type) bool {
	if t == nil {
		return false
	}
	sig, ok := t.Underlying().(*types.Signature)
	if !ok || sig.Params().Len() != 1 {
		return false
	}
	return isNATSMsg(sig.Params().At(0).Type())
}

// natsPull names the receiver and method of the nats.go calls that pull
// JetStream messages (see KindNATSPull).
var natsPull = map[string]bool{
	"Subscription.Fetch": true, "Subscription.FetchBatch": true, "Subscription.NextMsg": true, "Subscription.NextMsgWithContext": true,
	"Consumer.Fetch": true, "Consumer.FetchNoWait": true, "Consumer.FetchBytes": true, "Consumer.Next": true, "MessagesContext.Next": true,
}

// isGoRedis matches go-redis (v9 at github.com/redis/go-redis, and the
// earlier github.com/go-redis/redis versions).
func isGoRedis(path string) bool {
	return strings.HasPrefix(path, "github.com/redis/go-redis/") || strings.HasPrefix(path, "github.com/go-redis/redis")
}

// redisReceive names the go-redis commands that take a message off a
// stream or a list (see KindRedisQueue).
var redisReceive = map[string]bool{"XReadGroup": true, "BLMove": true, "BRPopLPush": true, "BLPop": true, "BRPop": true}

// redisTakes are the go-redis commands that remove what they return: a
// list or sorted set used as a queue this way has no ack (Redis docs,
// LMOVE: "Pattern: Reliable queue").
var redisTakes = map[string]bool{"BLPop": true, "BRPop": true, "LPop": true, "RPop": true, "LPopCount": true, "RPopCount": true, "BLMPop": true, "LMPop": true,
	"ZPopMin": true, "ZPopMax": true, "BZPopMin": true, "BZPopMax": true, "BZMPop": true, "ZMPop": true}

// destructiveTake returns the go-redis command call makes when it takes
// a message off a list or sorted set by removing it (see redisTakes),
// "" otherwise.
func destructiveTake(info *types.Info, call *ast.CallExpr) string {
	fn := callee(info, call)
	if fn == nil || !isGoRedis(funcPath(fn)) || !redisTakes[fn.Name()] {
		return ""
	}
	return fn.Name()
}

// isRedisMsgChan reports whether t is a channel of go-redis Pub/Sub
// messages (PubSub.Channel()).
func isRedisMsgChan(t types.Type) bool {
	if t == nil {
		return false
	}
	ch, ok := t.Underlying().(*types.Chan)
	if !ok {
		return false
	}
	p, ok := ch.Elem().(*types.Pointer)
	if !ok {
		return false
	}
	n, ok := types.Unalias(p.Elem()).(*types.Named)
	return ok && n.Obj().Name() == "Message" && n.Obj().Pkg() != nil && isGoRedis(n.Obj().Pkg().Path())
}

// isAMQP matches the RabbitMQ clients whose Delivery acks itself with
// Ack(multiple bool): rabbitmq/amqp091-go and its predecessor
// streadway/amqp (field trial, wave 39: micro-todoList).
func isAMQP(path string) bool {
	return path == "github.com/rabbitmq/amqp091-go" || path == "github.com/streadway/amqp"
}

// isAMQPDelivery reports whether t is a RabbitMQ Delivery (see isAMQP).
func isAMQPDelivery(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Name() == "Delivery" && n.Obj().Pkg() != nil && isAMQP(pkgPath(n.Obj().Pkg()))
}

// carriesPayload reports whether a message type t (or *t) gives its body:
// a method with no parameters returning []byte, or a []byte field.
func carriesPayload(t types.Type) bool {
	bytes := types.NewSlice(types.Typ[types.Byte])
	ms := types.NewMethodSet(t)
	if _, isPtr := t.(*types.Pointer); !isPtr && !types.IsInterface(t) {
		ms = types.NewMethodSet(types.NewPointer(t))
	}
	for sel := range ms.Methods() {
		sig := sel.Obj().Type().(*types.Signature)
		if sig.Params().Len() == 0 && sig.Results().Len() >= 1 && types.Identical(sig.Results().At(0).Type(), bytes) {
			return true
		}
	}
	u := t
	if p, ok := u.(*types.Pointer); ok {
		u = p.Elem()
	}
	if st, ok := u.Underlying().(*types.Struct); ok {
		for f := range st.Fields() {
			if types.Identical(f.Type(), bytes) {
				return true
			}
		}
	}
	return false
}

// recordsParamKind is the root kind of a handler signature one of whose
// parameters is a struct (or a pointer to one) with a field holding a
// Lambda batch's records ([]events.SQSMessage, KinesisEventRecord,
// DynamoDBEventRecord; see batchRecords), "" otherwise.
func recordsParamKind(sig *types.Signature) string {
	for i := range sig.Params().Len() {
		t := sig.Params().At(i).Type()
		if p, ok := t.Underlying().(*types.Pointer); ok {
			t = p.Elem()
		}
		st, ok := t.Underlying().(*types.Struct)
		if !ok {
			continue
		}
		for j := range st.NumFields() {
			switch batchRecords(st.Field(j).Type()) {
			case "SQS":
				return KindLambda
			case "Kinesis":
				return KindLambdaKinesis
			case "DynamoDB Streams":
				return KindLambdaDynamoDB
			}
		}
	}
	return ""
}
