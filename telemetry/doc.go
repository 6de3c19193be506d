// Package telemetry traces every message through receive, handler,
// commit, ack and broker confirmation with OpenTelemetry, and measures
// the ack gap (commit -> broker confirmed) and the lease headroom (lease
// deadline - broker confirmed).
//
// It takes providers, never a tracer: a TracerProvider, a MeterProvider
// and a propagator ([Config]; nil means the OpenTelemetry globals). It
// imports the OpenTelemetry API only, never the SDK, and no broker
// adapter or store. Its instrumentation scope is [ScopeName]; it uses
// semantic conventions v1.41.0 (go.opentelemetry.io/otel/semconv/v1.41.0)
// and no other version.
//
//	tel, err := telemetry.New(&telemetry.Config{
//		TracerProvider: tp, MeterProvider: mp, Propagator: propagation.TraceContext{},
//	})
//	defer tel.Close()
//	mw, err := tel.Middleware("", telemetry.SystemKafka)
//	r, err := router.New(store, &router.Config{
//		DeadLetter:  pub,
//		Middlewares: []message.HandlerMiddleware{mw}, // outermost: the one hook
//	})
//
// # Spans
//
// One consumer span per delivery of a message to the handler chain, named
// "process <destination>", with messaging.system, messaging.operation.type
// and .name ("process"), messaging.destination.name,
// messaging.consumer.group.name, messaging.message.id,
// messaging.message.body.size and, for Kafka,
// messaging.destination.partition.id and messaging.kafka.offset (semconv
// v1.41.0), plus ackgap's own attributes: ackgap.event_id,
// ackgap.consumer, ackgap.outcome (applied, duplicate, failed, rejected,
// dead_lettered), ackgap.attempts, ackgap.delivery_attempt (when the
// broker counts deliveries), ackgap.broker_confirmation, ackgap.ack_gap,
// ackgap.lease_headroom and ackgap.lease_expired (see the Attr constants).
//
// The span's events are, in order: received, handler_start (per attempt),
// commit, ack (or nack), broker_confirmed. Each carries the time it
// happened, as recorded by the middleware, the inbox (ackgap.InboxReport)
// or the broker adapter, so the span shows the ack gap as it was. A
// duplicate has no handler_start and no commit; a failed handler has
// status Error, error.type and a nack, no ack. A message that the router
// dead-lettered has outcome dead_lettered, status Error and error.type set
// to the dead-letter reason. The span ends at the broker's confirmation
// (or the ack, nack or abandonment when there is none).
//
// The producer's trace context is read from the message metadata with
// the propagator (W3C traceparent, which the Kafka and SQS adapters carry
// as headers and message attributes) and becomes a link, not the parent:
// a message is processed later than it was sent, sometimes many times.
// [Telemetry.Inject] writes it on the producer side. The link is added
// after the span started, so samplers do not see it.
//
// A recorded span's own traceparent goes into the message context
// (ackgap.WithTraceParent) and the inbox keeps it with the inbox row
// (migration 003). A later copy of the event, skipped as a duplicate, gets
// a second link, with AttrLinkKind = LinkFirstDelivery, to the span of the
// delivery that applied it: the redelivery after an expired lease or a
// crash in the ack gap leads to the work it repeats.
//
// # From the consumer to the effect
//
// An outbox row written behind the middleware (ackgap.AddOutbox,
// ackgap.ApplyTransition) keeps the consumer span's traceparent in
// its headers. [Telemetry.OutboxEffect] wraps a relay effect: each call is
// a client (HTTP) or producer (publish) span linked to that consumer span,
// and the request or message it sends carries the effect span's own trace
// context. Producer -> consumer -> effect is one chain of links.
//
// # Ack and broker confirmation
//
// The router acks after the middleware returned, and the broker confirms
// later still. Adapters that fill ackgap's confirmation hook (an
// ackgap.Delivery in the message context with Confirmation
// ackgap.ConfirmationReported: brokers/kafkabroker, where the
// confirmation is the return of the offset commit carrying the message)
// report the ack and the confirmation, and the span ends in the adapter's
// callback with no goroutine of this package's. For others the middleware
// watches msg.Acked() and msg.Nacked() on a goroutine of its own, which
// ends with the ack, the nack, the end of the message's context or
// [Telemetry.Close]. With ackgap.ConfirmationAtAck (brokers/gochannelbroker:
// an in-process broker, the ack is final) the confirmation is the ack;
// without the hook the span says ackgap.broker_confirmation "unobserved"
// and the ack gap is measured to the ack. An SQS adapter fills the hook
// with the return of DeleteMessage and the visibility deadline as
// ackgap.Delivery.LeaseDeadline (or Settlement.LeaseDeadline once
// extended), which gives the lease headroom.
//
// # Metrics
//
// messaging.process.duration (semconv, s), ackgap.ack_gap (s),
// ackgap.lease_headroom (s, signed), ackgap.outcomes,
// ackgap.duplicates_skipped and ackgap.acks_unconfirmed ({message}), and,
// with Config.OutboxStats, the gauges ackgap.outbox.backlog ({row}) and
// ackgap.outbox.oldest_pending_age (s). See the Metric constants for
// their attributes: messaging system, destination and consumer group,
// ackgap consumer, outcome, error.type and confirmation, never an event
// id, message id, partition or offset.
//
// # Cost
//
// When neither the tracer records nor any instrument is enabled (no SDK
// installed, or the noop providers), a message costs the tracer's Start
// and a few checks: the middleware passes the message on without a state
// of its own and starts no goroutine (BenchmarkRouterChain).
package telemetry
