// Package ackgapvet is a static checker for Go consumers of Kafka, SQS and
// Watermill: it finds the code that a redelivered message would hurt, before
// a duplicate does.
//
// [ConsumersAnalyzer] finds the entry points: Watermill handlers (AddHandler,
// AddConsumerHandler, AddNoPublisherHandler) and ackgap's router and batch
// handlers, Watermill CQRS handlers (cqrs.NewEventHandler,
// NewCommandHandler, NewGroupEventHandler, and the Handle method of a type
// passed to a processor's AddHandlers), handlers returned by a factory of
// the same package (AddHandler(..., makeHandler(store))), Sarama
// ConsumeClaim methods, franz-go PollFetches/PollRecords loops,
// segmentio/kafka-go ReadMessage/FetchMessage loops, confluent-kafka-go
// Poll/ReadMessage loops, SQS ReceiveMessage loops of aws-sdk-go-v2 and v1
// (a wrapper that receives once is resolved to the functions that call it
// in a loop), aws-lambda-go handlers taking events.SQSEvent,
// events.KinesisEvent or events.KafkaEvent (MSK), and functions declared by
// name ([Config].Entries, the -entry flag). It follows uses of functions
// from them within the package, and exports a [Summary] fact (first
// external effect, first database write) for every function, so a call into
// another package is judged by what that package's function does. The
// standard library and the libraries the checks classify directly (brokers,
// drivers, AWS, gRPC, OpenTelemetry, ackgap, the SDKs of [KnownSDKs]) are
// not followed inside: their internals are not the application's effects.
//
// A handler declared in another package than its AddHandler call: facts
// flow only from a package to its importers, so the registering package
// cannot mark it. Instead a function is a handler in its own package when
// its signature is exactly a Watermill handler's (func(*message.Message)
// error, func(*message.Message) ([]*message.Message, error)) or an ackgap
// handler's (func(context.Context, *sql.Tx or pgx.Tx, *message.Message or
// []*message.Message) error) and it is exported, or when a function value is
// returned or assigned as such a type or a Watermill/ackgap ...HandlerFunc
// type. An exported function of that shape that is no handler is taken for
// one; a handler of another shape registered from another package through an
// adapter is not found (declare it with [Config].Entries).
//
// Effects are classified by known packages: [KnownSDKs] maps SDKs to a
// class (payments, email, SMS, notifications, storage, publishes) that names
// the effect and sets its blast radius; [ConfigFile] at the module root adds
// entry points and overrides the classes ([Config]).
//
// The checks, each its own analyzer (see [Analyzers]):
//
//   - effect: HTTP, gRPC, SMTP, mutating AWS calls and publishes on a consumer
//     path or inside an open transaction; record them in the outbox. Writes
//     by key (S3 PutObject, DynamoDB PutItem/BatchWriteItem/DeleteItem),
//     publishes into the transaction (watermill-sql, or any publisher made
//     from the transaction) and calls that carry an idempotency key not
//     made afresh are not reported; oapi-codegen clients' calls are effects.
//   - pooltx: a write through *sql.DB, *sql.Conn or *pgxpool.Pool where a
//     transaction is in scope; use the transaction (suggested fix).
//   - earlyack: an offset mark/commit (confluent-kafka-go's CommitMessage and
//     StoreOffsets too), DeleteMessage (SDK v2 and v1) or msg.Ack() before
//     the work in the same block, and Watermill's InstantAck.
//   - autocommit: kafka-go ReadMessage with a GroupID before work; franz-go
//     consumer groups without kgo.DisableAutoCommit; confluent-kafka-go
//     consumers whose ConfigMap leaves "enable.auto.commit" on. (Sarama's
//     auto-commit commits only marked offsets, so its risk is earlyack's.)
//   - checkact: SELECT for an id then INSERT of it into the same table
//     without ON CONFLICT; Watermill's Deduplicator as the only guard.
//   - idemkey: POST/PUT/PATCH without an Idempotency-Key header (a helper
//     taking the request counts as setting one); SET n = n + ... with no
//     dedupe insert in the same function, outside ackgap handlers.
//   - transition: an ackgap TransitionResult read (PendingTransition.Result)
//     and dropped; an unread ApplyTransition is safe (a refusal fails the
//     commit).
//   - httpclient: http.DefaultClient, http.Get/Post, http.Client without
//     Timeout on consumer paths.
//   - bgcontext: context.Background/TODO where the message's context is in
//     scope: a ctx parameter, Sarama's sess.Context(), a Watermill handler's
//     msg.Context() (suggested fix).
//   - sleep: time.Sleep in handlers (not between polls of a receive loop).
//   - visibility: a literal SQS VisibilityTimeout under six times the longest
//     literal context.WithTimeout on a consumer path.
//   - lambdabatch: a Lambda SQS, Kinesis, DynamoDB Streams or Kafka handler
//     returning an error from inside its Records loop instead of a partial
//     batch response (events.SQSEventResponse, KinesisEventResponse,
//     DynamoDBEventResponse).
//   - errack: an ack on the path where the work failed: the error only
//     logged and the message marked, committed or deleted after, an error
//     branch that acks, a handler that returns nil (or a Lambda record left
//     out of BatchItemFailures) when a write or effect failed.
//   - commitorder: Kafka offsets committed out of order by goroutines that
//     share one reader, client or claim, or by a goroutine per message.
//   - multitx: two calls, one after the other on a consumer path, that each
//     commit a database transaction (directly or through a helper): a
//     failure of the second leaves the message half-applied.
//   - poison: a message that can never succeed redelivered without end: a
//     Watermill router without a poison queue (or one inside Retry), a
//     consumer that ends the process on a message's failure (log.Fatal,
//     os.Exit, panic), a receive loop that returns when a message does not
//     decode.
//
// Every finding carries a [Severity] from the names around it (see
// [DefaultSeverityPatterns], [SetSeverityPatterns], [SeverityEnv]). A
// finding is suppressed by //ackgapvet:ignore <check> <reason> on its line or
// the line above; the reason is required.
//
// Run it with cmd/ackgapvet (standalone: text, JSON, SARIF; or as go vet's
// -vettool), or from Go with [Run] and [WriteText], [WriteJSON],
// [WriteSARIF]:
//
//	rep, err := ackgapvet.Run(&ackgapvet.RunConfig{Patterns: []string{"./..."}})
//	if err != nil { ... }
//	err = ackgapvet.WriteSARIF(os.Stdout, rep)
//
// SARIF output has URIs relative to [Report].Root (the git top level, else
// the module's directory) under uriBaseId [SRCROOT], tool.driver.version
// ([Version]), partialFingerprints that do not depend on line numbers, and a
// helpUri per check into docs/ackgapvet.md ([DocsURL]).
//
// Two modes. [Run] (and the command) default to the whole-program mode: the
// checked packages from source, their dependencies from export data, SSA
// for the module's bodies and a VTA call graph, so a consumer is followed
// through interface calls, function values and fields, closures, goroutines,
// channel hand-offs to workers, factories and handlers declared in other
// packages; every function reached is checked as part of the consumer and a
// finding names the path. It also fills [Report].Consumers, the consumer map
// ([WriteMap], [WriteMapMarkdown]), and narrows a report to what a change
// touches ([RunConfig].DiffBase). [RunConfig].PerPackage, go vet -vettool
// and golangci-lint run the analyzers one package at a time with facts:
// faster, not through interfaces, function values, goroutines or channels.
//
// In the per-package mode, factories and receive wrappers are resolved
// within their package. confluent-kafka-go's autocommit is judged from a
// ConfigMap literal written in the package.
package ackgapvet
