// Package console is ackgap's web console: an [http.Handler] that shows,
// on a few server-rendered pages, what each consumer applied, what the
// outbox still owes, which rows are dead and why, and (in a process that
// runs the router) how close each message came to a redelivery.
//
// Mount it in a consumer process as you would net/http/pprof:
//
//	rec := console.NewRecorder()
//	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rec.Reader()))
//	tel, _ := telemetry.New(&telemetry.Config{MeterProvider: mp})
//	// ... routers with tel.Middleware(destination, system) in Middlewares ...
//	h, err := console.New(store, &console.Config{Prefix: "/ackgap", Recorder: rec})
//	mux.Handle("/ackgap/", h)
//
// or run it from the command line when only the database is at hand:
//
//	ackgap console --dsn postgres://... --listen 127.0.0.1:8080
//
// # Pages
//
//   - Overview (Prefix + "/"): per consumer, its inbox rows, rows applied
//     per minute over the last hour, and (with a [Recorder]) duplicates
//     skipped and deliveries dead-lettered since the process started; the
//     outbox backlog by kind and state and the age of the oldest due row;
//     of the pending rows, those held (never tried, not due yet: written
//     held for outbox direct dispatch, or delayed) and those waiting out a
//     retry backoff, with when the first hold ends.
//   - Outbox (Prefix + "/outbox"): rows filtered by state (or "held"), kind
//     and idempotency key prefix, a page at a time; one row with its attempts,
//     last error and the traceparent of the consumer span whose
//     transaction wrote it; redrive one dead row, or every dead row of a
//     filter; delete the done rows of a filter older than an age.
//   - Event (Prefix + "/event?id=..."): which consumers applied an event id,
//     when, and the outbox rows its deliveries wrote.
//   - Live (Prefix + "/live", with a [Recorder]): histograms of the ack gap
//     and the lease headroom per broker, drawn as SVG on the server, the
//     share of negative headroom (a duplicate is coming) in red; and, when
//     this process's Kafka subscribers publish on the Recorder's
//     MeterProvider (kafkabroker.SubscriberConfig.MeterProvider), a table
//     of the partitions they hold, per consumer group, topic and partition:
//     committed offset, watermark, the acked records not yet committed,
//     in flight, buffered, lag, replays skipped and regressions (in red).
//     Without them the page shows no table.
//
// Pages are html/template with their stylesheet and a tiny auto-refresh
// script embedded (no CDN, no build step); every page reads without
// JavaScript.
//
// # Safe by default
//
// The console is read-only unless [Config.Token] is set. Every write
// (redrive, prune) then needs a session opened with the token (the login page, or
// an "Authorization: Bearer" header for scripts), a CSRF token bound to
// that session in the form, and a same-origin request
// ([http.CrossOriginProtection]); it is logged with who (remote address
// and session) and what. After 10 wrong tokens in a minute (from any
// address), token checks go one at a time, one a second: a wrong token is
// refused (429), the right one is accepted after its wait, so guesses
// cannot lock the operators out, behind a proxy either. Payloads are hidden unless [Config.ShowPayloads].
// Every query runs under [Config.QueryTimeout], every list is capped at
// [Config.PageSize] rows, a bulk write at [BulkMax] rows per click,
// and the overview's counts are cached for [Config.StatsTTL], so that the
// console cannot load the database however many browsers watch it.
package console
