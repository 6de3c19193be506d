// Package billingsim runs the billing consumer of examples/billing (its
// handler is package examples/billing/orders) under injected faults, and
// checks that it stays correct. It is what the demo's command
// (examples/billing) and the benchmarks' soak (benchmarks -soak) share,
// so that neither copies the other:
//
//   - [RunDemo] and [Options]: one in-process run: a store (SQLite or
//     PostgreSQL), a broker (GoChannel, Kafka or SQS), one router instance
//     per partition running orders.Handler, outbox relays against a
//     payment provider and a mailer on loopback, and the fault injection
//     around them: the duplicate plan (sequential copies, a crash between
//     commit and ack, concurrent copies), the tally of inbox outcomes, a
//     router instance crashed in the ack gap and replaced, a relay killed
//     mid-effect, lost provider replies. It returns a [Summary], whose
//     Check says whether every order moved once and was charged once.
//   - [Soak] and [RunSoakChild]: the same pipeline as real processes
//     (consumers and relays) that the soak kills with SIGKILL and restarts
//     for a duration, reporting their resources at start and end and the
//     invariants at the end.
//
// The package is internal: its API serves the demo and the benchmarks,
// and changes with them.
package billingsim
