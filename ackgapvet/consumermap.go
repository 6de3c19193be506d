package ackgapvet

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"io"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// Consumer is one entry point of the consumer map ([Report].Consumers),
// filled by the whole-program mode: where the consumer starts, where it
// acknowledges, what it reaches, and what backs it against a duplicate.
type Consumer struct {
	// Kind is the entry point's kind (KindWatermill, KindSarama, ...).
	Kind string `json:"kind"`
	// Name is the entry function's name, or "pkg.F.func1" for a literal.
	Name string `json:"name"`
	// File (relative to the working directory when below it, as in
	// [Finding], slash-separated) and Line (1-based) are where the entry
	// function starts.
	File string `json:"file"`
	Line int    `json:"line"`
	// Acks are where it acknowledges, in the order the walk meets them; for
	// handlers the framework acks after a nil return, and the step says so.
	Acks []Step `json:"acks"`
	// Effects are the external effects it reaches (HTTP, gRPC, email, AWS
	// calls, publishes), each with its path and blast radius.
	Effects []Step `json:"effects"`
	// Writes are the database writes it reaches.
	Writes []Step `json:"writes"`
	// Handlers are the functions one call of a function value on its walk
	// dispatches to, when there are two or more (a receive loop shared by
	// several consumers, each with its handler): each is a consumer of its
	// own behind this entry point. Empty otherwise.
	Handlers []Step `json:"handlers,omitempty"`
	// Dedupe says what backs the consumer against a duplicate: "ackgap
	// inbox", "insert … ON CONFLICT" (an insert that skips a duplicate
	// key), "Watermill Deduplicator (in memory)", or "none found".
	Dedupe string `json:"dedupe"`
	// BlastRadius is the highest severity among its effects and writes
	// ([SeverityOf] on the effect and the names on its path, an outbox row
	// included) and the findings in the functions it reaches; "" when it
	// has none of them. A finding on the line of an effect or write has
	// that step's severity, or the step the finding's when that is higher:
	// the map and the findings say one blast radius.
	BlastRadius Severity `json:"blast_radius,omitempty"`
	// Functions is the number of the module's functions it reaches.
	Functions int `json:"functions"`
	// Findings counts the report's findings inside the functions it
	// reaches.
	Findings int `json:"findings"`

	spans []span
	// handlerSpans are the functions below each of Handlers (a function
	// two handlers reach counts under the first the walk met it through).
	handlerSpans []handlerSpan
	// takes is set on a Redis queue loop that takes its messages by
	// removing them (BRPOP, LPOP, ZPOPMIN), and on a RabbitMQ loop whose
	// Consume has autoAck true: it is at most once, like core NATS (see
	// dropAtMostOnce).
	takes bool
	// loop is set on a receive loop that calls the broker's receive
	// itself (see receiveLoop).
	loop bool
}

// Step is one place on a consumer's path.
type Step struct {
	// What describes it: "an HTTP request (http.Client.Do)", ...
	What string `json:"what"`
	// File and Line locate it (File as in [Consumer]).
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Path is the chain of functions from the entry point to the function
	// that makes it, the entry point first.
	Path []string `json:"path,omitempty"`
	// Severity is the blast radius of an effect or write.
	Severity Severity `json:"severity,omitempty"`
	// AfterAck is set on an effect or write reached after the consumer
	// acknowledged in the entry function: a crash between them loses it.
	AfterAck bool `json:"after_ack,omitempty"`
	// Key is what an HTTP effect's Idempotency-Key header is set from in
	// its function, and what that key is stable across (see keyNote); ""
	// when no header is set there.
	Key string `json:"key,omitempty"`
	// Async is set on an effect or write reached through a go statement or
	// a channel send: it runs beside the consumer, and the ack does not
	// wait for it unless the code waits (a WaitGroup, a reply channel).
	Async bool `json:"async,omitempty"`
}

// receiveLoop reports whether the entry function of rw takes messages from
// the broker itself: a Sarama ConsumeClaim or Messages() loop, or a function that calls a
// receive, poll or fetch (see receives), as opposed to a handler value that
// a loop calls.
func receiveLoop(rw *rootWalk) bool {
	if rw.root.lifted || rw.root.Kind == KindSarama || rw.root.Kind == KindSaramaPartition || rw.root.Kind == KindSaramaCluster {
		return true
	}
	if rw.entry == nil {
		return false
	}
	for _, b := range rw.entry.Blocks {
		for _, ins := range b.Instrs {
			call, ok := ins.(ssa.CallInstruction)
			if !ok {
				continue
			}
			cc := call.Common()
			fn := cc.Method
			if callee := cc.StaticCallee(); callee != nil {
				fn, _ = callee.Object().(*types.Func)
			}
			if fn != nil && receives(fn) {
				return true
			}
		}
	}
	return false
}

// span is the source range of one function a consumer reaches.
type span struct {
	file       string
	start, end int
}

// handlerSpan is a function below one of a shared loop's handlers: the
// handler's index in Consumer.Handlers.
type handlerSpan struct {
	span
	handler int
}

// consumerMap builds the map from the walks.
func (w *wholeProgram) consumerMap() []Consumer {
	var out []Consumer
	for _, rw := range w.walks {
		out = append(out, w.describe(rw))
	}
	// An entry that acknowledges nothing itself and that another consumer
	// reaches is part of that consumer's path, not a consumer: a closure
	// of an application's handler type (a filter, a processor) that a
	// receive loop calls. A receive loop is never pruned: it takes
	// messages from the broker itself, and a call graph that reaches it
	// from another consumer (through a closure both are wired with) does not
	// make it part of that consumer, nor is an entry point the user
	// declared (-entry, "entries"): asked for, it is listed.
	all := slices.Clone(out)
	out = slices.DeleteFunc(out, func(c Consumer) bool {
		if len(c.Acks) > 0 || len(c.spans) == 0 || c.loop || c.Kind == KindEntry {
			return false
		}
		for i := range all {
			d := &all[i]
			if d.File != c.File || d.Line != c.Line { // not itself, nor another instance of its generic function
				if d.reaches(c.spans[0].file, c.spans[0].start) {
					return true
				}
			}
		}
		return false
	})
	slices.SortFunc(out, func(a, b Consumer) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func (w *wholeProgram) describe(rw *rootWalk) Consumer {
	fset := w.prog.Fset
	rel := func(p token.Position) string { return relPath(p.Filename) }
	start := fset.Position(rw.root.Node.Pos())
	c := Consumer{Kind: rw.root.Kind, Name: rw.root.Name, File: rel(start), Line: start.Line, Acks: []Step{}, Effects: []Step{}, Writes: []Step{}, Dedupe: "none found", loop: receiveLoop(rw)}
	if recv := rw.entry.Signature.Recv(); recv != nil && !strings.Contains(c.Name, ".") {
		c.Name = typeName(recv.Type()) + "." + c.Name // Sarama's ConsumeClaim: whose
	}
	switch c.Kind {
	case KindAckgap:
		c.Dedupe = "ackgap inbox"
		c.Acks = append(c.Acks, Step{What: "ackgap acks after the handler's transaction commits"})
	case KindWatermill, KindCQRS:
		c.Acks = append(c.Acks, Step{What: "the Watermill router acks after the handler returns nil"})
	case KindKq:
		c.Acks = append(c.Acks, Step{What: "go-queue kq commits after Consume returns, after an error too unless KqConf.ForceCommit is false"})
	case KindLambda:
		c.Acks = append(c.Acks, Step{What: "Lambda deletes the batch's messages when the handler returns nil (with a partial batch response: all but the failures listed)"})
	case KindLambdaKinesis, KindLambdaDynamoDB:
		c.Acks = append(c.Acks, Step{What: "Lambda moves the shard's position past the batch when the handler returns nil (with a partial batch response: up to the first failure listed); an error retries the whole batch"})
	case KindLambdaKafka:
		c.Acks = append(c.Acks, Step{What: "Lambda commits the batch's offsets when the handler returns nil; an error retries the whole batch"})
	case KindKinesisScan:
		c.Acks = append(c.Acks, Step{What: "kinesis-consumer checkpoints the record when the callback returns nil"})
	case KindSQSLib:
		c.Acks = append(c.Acks, Step{What: "the library deletes the message when the handler returns nil (its receive loop is not in the checked code)"})
	case KindRedisPubSub:
		c.Acks = append(c.Acks, Step{What: "Redis Pub/Sub has no ack and keeps nothing: a message sent while the subscriber is down, or whose work fails, is never delivered again"})
	case KindAsynq:
		c.Acks = append(c.Acks, Step{What: "asynq marks the task done when the handler returns nil; an error retries it (MaxRetry 25 by default), and a task whose worker dies or that outruns its timeout (30 minutes by default) runs again"})
	case KindNSQ:
		c.Acks = append(c.Acks, Step{What: "go-nsq finishes the message when the handler returns nil; an error requeues it with a backoff, and past MaxAttempts (5 by default) go-nsq gives it up: finished, only logged"})
	case KindFranz:
		if w.kgoAutoCommitAt(rw.entry) {
			c.Acks = append(c.Acks, Step{What: "franz-go's auto-commit (on by default) commits every 5 s what the polls returned, whatever the work did"})
		}
	}
	// acksIn holds, per function on the walk, the earliest position in its
	// body that acks (the ack, or a call that leads to one), not on a
	// branch that leaves.
	acksIn := map[*ssa.Function]token.Pos{}
	type found struct {
		step Step
		fn   *ssa.Function // the function that makes it
		at   token.Pos     // the call's position in fn
		g    *ssa.Function // the goroutine it runs in (nil: the consumer's own)
	}
	// goroutine returns the function that started the goroutine fn runs
	// in on the walk: the first async function above it (nil for the
	// consumer's own goroutine).
	goroutine := func(fn *ssa.Function) *ssa.Function {
		var g *ssa.Function
		for f := fn; f != nil && rw.async[f]; f = rw.parent[f] {
			g = f
		}
		return g
	}
	ackGoroutines := map[*ssa.Function]bool{}
	ackAt := map[token.Pos]bool{}
	var effects, writes []found
	for _, fn := range rw.order {
		if !w.inApp(fn) || isWrapper(fn) {
			continue
		}
		src := fn
		if o := fn.Origin(); o != nil {
			src = o
		}
		body := funcBody(src.Syntax())
		p := w.info[src.Pkg.Pkg]
		if body == nil || p == nil {
			continue
		}
		c.Functions++
		s, e := fset.Position(src.Syntax().Pos()), fset.Position(src.Syntax().End())
		c.spans = append(c.spans, span{s.Filename, s.Line, e.Line})
		path := rw.path(fn)
		key := idemKeyIn(p.TypesInfo, body)
		dead := deadSpans(body)
		ast.Inspect(body, func(n ast.Node) bool {
			if n != nil && inSpans(dead, n.Pos()) {
				return false // after a return: never runs
			}
			switch n := n.(type) {
			case *ast.FuncLit:
				return false // its own function, walked if reached
			case *ast.Ident:
				if obj := p.TypesInfo.Uses[n]; obj != nil && obj.Pkg() != nil && strings.HasPrefix(pkgPath(obj.Pkg()), pathWatermill) && (obj.Name() == "NewDeduplicator" || obj.Name() == "Deduplicator") {
					if c.Dedupe == "none found" {
						c.Dedupe = "Watermill Deduplicator (in memory)"
					}
				}
			case *ast.CallExpr:
				pos := fset.Position(n.Pos())
				step := Step{File: rel(pos), Line: pos.Line, Path: path, Async: rw.async[fn]}
				if amqpAutoAckArg(p.TypesInfo, n) {
					// The broker acks each delivery as it sends it.
					c.takes = true
					step.What = "RabbitMQ acks each delivery as it sends it (Consume with autoAck true: at most once)"
					step.Async = false
					c.Acks = append(c.Acks, step)
					return true
				}
				if cmd := destructiveTake(p.TypesInfo, n); cmd != "" && rw.root.Kind == KindRedisQueue {
					// The take is the ack: nothing is left to redeliver.
					c.takes = true
					step.What = "takes and removes the message with Redis " + strings.ToUpper(cmd) + " (the take is the ack: at most once)"
					step.Async = false
					c.Acks = append(c.Acks, step)
					return true
				}
				if a := ackOf(p.TypesInfo, n); a != "" && !ackAt[n.Pos()] {
					ackAt[n.Pos()] = true // rdb.XAck(...).Err(): one ack, read through its reply
					step.What = "acks with " + a
					step.Async = false
					ackGoroutines[goroutine(fn)] = true
					c.Acks = append(c.Acks, step)
					// An ack on a branch that leaves (an error path that acks
					// and returns) is not before what follows the branch.
					// It is before what follows it in its function, and
					// before what follows the call that leads to it in
					// each function above.
					at := n.Pos()
					for f := fn; f != nil && !onLeavingBranch(funcBody(f.Syntax()), at); at, f = rw.via[f], rw.parent[f] {
						if deferredAt(funcBody(f.Syntax()), at) {
							continue // a deferred ack runs when f returns: after all of f's work
						}
						if a, ok := acksIn[f]; !ok || at < a {
							acksIn[f] = at
						}
					}
					return true
				}
				if d := cmp.Or(effectOf(p.TypesInfo, n), outboxOf(p.TypesInfo, n)); d != "" {
					step.What = d
					step.Severity = stepSeverity(path, d, constStrings(p.TypesInfo, n))
					if strings.HasPrefix(d, "an HTTP request") {
						step.Key = key
					}
					effects = append(effects, found{step, fn, n.Pos(), goroutine(fn)})
				} else if d := cmp.Or(dbWriteOf(p.TypesInfo, n), keyedWriteDesc(p.TypesInfo, n)); d != "" {
					step.What = d
					words := constStrings(p.TypesInfo, n)
					if sql := strings.ToUpper(sqlText(p.TypesInfo, n)); dedupeInsert(sql) || strings.Contains(sql, "INSERT IGNORE") {
						for i, w := range words {
							words[i] = sqlLiteral.ReplaceAllString(w, "''") // a dedupe record's values: the consumer's name ('payments') is no payment
						}
					}
					step.Severity = stepSeverity(path, d, words)
					writes = append(writes, found{step, fn, n.Pos(), goroutine(fn)})
				}
				if outboxOf(p.TypesInfo, n) != "" && c.Dedupe == "none found" {
					// AddOutbox and ApplyTransition run only in the inbox's
					// transaction (ErrNoTransaction elsewhere).
					c.Dedupe = "ackgap inbox (its outbox calls need the inbox's transaction)"
				}
				if sql := strings.ToUpper(sqlText(p.TypesInfo, n)); dedupeInsert(sql) || strings.Contains(sql, "INSERT IGNORE") {
					if c.Dedupe == "none found" {
						c.Dedupe = "insert … ON CONFLICT at " + step.File + ":" + fmt.Sprint(step.Line)
					}
				}
			}
			return true
		})
		if c.Dedupe == "none found" && recordsEvent(p.TypesInfo, src.Syntax()) {
			// What the checks take for a dedupe record (a create whose
			// duplicate-key failure is read as "seen", a Redis claim):
			// the map says the same (a new user's report).
			c.Dedupe = "a dedupe record in " + shortName(src) + " at " + rel(s) + ":" + fmt.Sprint(s.Line)
		}
	}
	// A step in the goroutine that also acks is not beside the ack: the
	// ack waits for it there (a goroutine per message that deletes its
	// own message after the work).
	// Nor is one whose goroutine's starter waits for its goroutines (a
	// WaitGroup's or an errgroup's Wait: a Lambda handler's fan-out over
	// its records returns after them).
	for i := range effects {
		if g := effects[i].g; g != nil && (ackGoroutines[g] || w.waitsForGoroutines(rw.parent[g])) {
			effects[i].step.Async = false
		}
	}
	for i := range writes {
		if g := writes[i].g; g != nil && (ackGoroutines[g] || w.waitsForGoroutines(rw.parent[g])) {
			writes[i].step.Async = false
		}
	}
	// afterAckOn reports whether a step at position at in fn comes after
	// an ack: in fn before it, or in a function above it on the walk
	// before the call that leads down to it (a worker's job that deletes
	// its message first, then runs the action).
	afterAckOn := func(fn *ssa.Function, at token.Pos) bool {
		for f := fn; f != nil; at, f = rw.via[f], rw.parent[f] {
			if a, ok := acksIn[f]; ok && a < at {
				return true
			}
		}
		return false
	}
	for _, f := range effects {
		f.step.AfterAck = afterAckOn(f.fn, f.at)
		c.Effects = append(c.Effects, f.step)
		c.BlastRadius = maxSeverity(c.BlastRadius, f.step.Severity)
	}
	for _, f := range writes {
		f.step.AfterAck = afterAckOn(f.fn, f.at)
		c.Writes = append(c.Writes, f.step)
		c.BlastRadius = maxSeverity(c.BlastRadius, f.step.Severity)
	}
	var handlerFns []*ssa.Function
	c.Handlers, handlerFns = w.handlers(rw)
	if len(handlerFns) > 0 {
		index := map[*ssa.Function]int{}
		for i, h := range handlerFns {
			index[h] = i
		}
		for _, fn := range rw.order {
			src := fn
			if o := fn.Origin(); o != nil {
				src = o
			}
			if src.Syntax() == nil {
				continue
			}
			for f := fn; f != nil; f = rw.parent[f] {
				if i, ok := index[f]; ok {
					s, e := fset.Position(src.Syntax().Pos()), fset.Position(src.Syntax().End())
					c.handlerSpans = append(c.handlerSpans, handlerSpan{span{s.Filename, s.Line, e.Line}, i})
					break
				}
			}
		}
	}
	switch {
	case c.Kind == KindNATSCore:
		// A core message's Ack or Nak answers nothing (nats.ErrMsgNoReply).
		c.Acks = []Step{{What: "core NATS has no ack and no redelivery (at most once): a message in flight when the process stops, or whose work fails, is lost (msg.Ack and msg.Nak on it do nothing)"}}
	case c.Kind == KindNATS && len(c.Acks) == 0:
		c.Acks = append(c.Acks, Step{What: "no msg.Ack(): a JetStream subscription without nats.ManualAck() acks after the callback returns, whatever it did; a jetstream.Consumer's Consume acks nothing, so the message comes back after AckWait (30 s by default)"})
	}
	return c
}

// handlers returns the module's functions that one call of a function
// value in the entry function (or a literal in it) reaches in turn, two or
// more of them: a receive loop shared by several consumers, each with its
// own handler (a `handler func(ctx, kafka.Message) error` field set per
// topic), is one entry point of the map, and these are the consumers a
// reviewer owns behind it. A callback the entry defines itself (a closure
// handed to a transaction helper) is part of the loop, not a handler; a
// call through an interface (a repository with two implementations) is not
// a dispatch, and a call deeper down (a helper's callback) is not either.
func (w *wholeProgram) handlers(rw *rootWalk) ([]Step, []*ssa.Function) {
	type site struct {
		parent *ssa.Function
		pos    token.Pos
	}
	top := func(f *ssa.Function) *ssa.Function {
		for f.Parent() != nil {
			f = f.Parent()
		}
		return f
	}
	entry := top(rw.entry)
	targets := map[site][]*ssa.Function{}
	var sites []site
	for _, fn := range rw.order {
		p := rw.parent[fn]
		if p == nil || !w.inApp(fn) || isWrapper(fn) || rw.async[fn] || top(fn) == entry {
			continue
		}
		k := site{p, rw.via[fn]}
		if isWrapper(p) && rw.parent[p] != nil { // a bound method value (s.Customers): its call site is the wrapper's
			k = site{rw.parent[p], rw.via[p]}
		}
		if top(k.parent) != entry {
			continue
		}
		if targets[k] == nil {
			sites = append(sites, k)
		}
		targets[k] = append(targets[k], fn)
	}
	var out []Step
	var fns []*ssa.Function
	for _, k := range sites {
		if len(targets[k]) < 2 || !funcValueCall(k.parent, k.pos) {
			continue
		}
		for _, fn := range targets[k] {
			if genericBody(fn) && slices.ContainsFunc(targets[k], func(g *ssa.Function) bool { return g.Origin() == fn }) {
				continue // its instances are listed, each with its type arguments
			}
			pos := w.prog.Fset.Position(fn.Pos())
			out = append(out, Step{What: "handler " + shortName(fn), File: relPath(pos.Filename), Line: pos.Line, Path: rw.path(fn)})
			fns = append(fns, fn)
		}
	}
	return out, fns
}

// genericBody reports whether fn is the body of a generic function as
// written (with its type parameters), or a closure in one, rather than an
// instance of it.
func genericBody(fn *ssa.Function) bool {
	for f := fn; f != nil; f = f.Parent() {
		if f.Origin() != nil {
			return false
		}
		if f.TypeParams().Len() > 0 {
			return true
		}
	}
	return false
}

// funcValueCall reports whether fn calls a function value (not a static
// callee, not an interface method) at pos.
func funcValueCall(fn *ssa.Function, pos token.Pos) bool {
	for _, b := range fn.Blocks {
		for _, in := range b.Instrs {
			if call, ok := in.(ssa.CallInstruction); ok && call.Pos() == pos {
				cc := call.Common()
				return !cc.IsInvoke() && cc.StaticCallee() == nil
			}
		}
	}
	return false
}

// deferredAt reports whether pos is inside a defer statement of body (its
// call, or the function literal it defers), outside nested literals.
func deferredAt(body *ast.BlockStmt, pos token.Pos) bool {
	if body == nil {
		return false // a function without syntax on the walk (a library's, a synthetic wrapper)
	}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || found {
			return false
		}
		if d, ok := n.(*ast.DeferStmt); ok && d.Pos() <= pos && pos < d.End() {
			found = true
		}
		return !found
	})
	return found
}

// watermillUUIDKey says why a key taken from a Watermill message's UUID
// is accepted and what it does not cover. The UUID is set by the
// publisher and travels with the message (watermill-kafka's
// _watermill_message_uuid header, watermill-aws's SQS attribute), so
// every redelivery of one published message carries the same one: the
// receiver dedupes redeliveries, which is what idemkey and effect judge.
// It is a message id, not an event id: a second publish of the same event
// (a producer's retry, a relay that crashed before marking its row) is a
// new message with a new UUID, and a record from a producer that is not
// Watermill has none (Message.UUID "can be empty"), so all such messages
// share the empty key.
const watermillUUIDKey = "Watermill's message id, the same on every redelivery of this message, so the receiver dedupes redeliveries; a second publish of the event is a new message with a new id, and a message not published by Watermill has an empty one: key on the event id to dedupe events"

// idemKeyIn returns what body sets an Idempotency-Key (or other
// idempotency or deduplication) header from, with what the key is stable
// across when that is known (see watermillUUIDKey); "" when it sets none.
func idemKeyIn(info *types.Info, body *ast.BlockStmt) string {
	key := ""
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || key != "" {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 {
			return true
		}
		fn := callee(info, call)
		if fn == nil || funcPath(fn) != "net/http" || recvName(fn) != "Header" || fn.Name() != "Set" && fn.Name() != "Add" {
			return true
		}
		if name := stringValue(info, call.Args[0]); idemKeyName.MatchString(name) {
			key = types.ExprString(call.Args[1])
			if watermillUUID(info, call.Args[1]) {
				key += ": " + watermillUUIDKey
			}
		}
		return key == ""
	})
	return key
}

// watermillUUID reports whether e is a Watermill message's UUID field
// (msg.UUID), alone or in a string built from it.
func watermillUUID(info *types.Info, e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || found {
			return !found
		}
		if v, ok := info.Uses[sel.Sel].(*types.Var); ok && v.IsField() && v.Name() == "UUID" {
			if t := info.TypeOf(sel.X); t != nil && isNamed(t, pathWatermill+"/message", "Message") {
				found = true
			}
		}
		return !found
	})
	return found
}

// stepSeverity is the blast radius of an effect or write on a consumer's
// path: [SeverityOf] on the functions of the path (package and type
// included: a PaymentMq's Consume is a payment), the step's description
// and the call's constant strings (a URL, a topic, an outbox row's kind).
func stepSeverity(path []string, what string, consts []string) Severity {
	return SeverityOf(append(append(slices.Clone(path), what), consts...)...)
}

// onLeavingBranch reports whether pos lies in a block of body (not body
// itself) that ends by leaving: a return, continue, break or panic. What
// follows such a block runs only when the block did not.
func onLeavingBranch(body *ast.BlockStmt, pos token.Pos) bool {
	if body == nil {
		return false
	}
	var inner *ast.BlockStmt
	ast.Inspect(body, func(n ast.Node) bool {
		if n == nil || pos < n.Pos() || pos >= n.End() {
			return false
		}
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if b, ok := n.(*ast.BlockStmt); ok && b != body {
			inner = b
		}
		return true
	})
	return inner != nil && (terminates(inner) || endsInContinue(inner) || endsInBreak(inner))
}

// maxSeverity returns the higher of two severities ("" is lowest).
func maxSeverity(a, b Severity) Severity {
	rank := map[Severity]int{"": 0, SeverityLow: 1, SeverityMedium: 2, SeverityHigh: 3, SeverityCritical: 4}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// countFindings sets each consumer's Findings from the report's findings
// that fall inside the functions it reaches (abs is the finding's absolute
// path), and raises its BlastRadius to the highest of their severities.
func (rep *Report) countFindings() {
	for i := range rep.Consumers {
		c := &rep.Consumers[i]
		for _, f := range rep.Findings {
			if c.reaches(f.abs, f.Line) {
				c.Findings++
				c.BlastRadius = maxSeverity(c.BlastRadius, f.Severity)
			}
		}
	}
}

// autoCommitAcks adds, to each consumer whose only ack is an offset
// auto-commit (no commit or delete call on its walk), an ack step at the
// autocommit finding it reaches: the map says where such a consumer
// acknowledges, as it does for the others (kafka-go's ReadMessage with a
// GroupID commits as it returns; librdkafka and franz-go commit on a
// timer).
func autoCommitAcks(fs []Finding, consumers []Consumer) {
	for j := range consumers {
		c := &consumers[j]
		if len(c.Acks) > 0 {
			continue
		}
		for _, f := range fs {
			if f.Check != "autocommit" || !c.reaches(f.abs, f.Line) {
				continue
			}
			what := "the offsets are committed automatically, on a timer, whether the work is done or not"
			if strings.HasPrefix(f.Message, neverCommitsPrefix) {
				what = "nothing: the consumer group never commits an offset (see the autocommit finding)"
			} else if strings.Contains(f.Message, commitsNoOffset) {
				what = "nothing: no consumer group, no offset is committed (see the autocommit finding)"
			} else if strings.HasPrefix(f.Message, readCommits) {
				what = "kafka-go's ReadMessage commits the offset as it returns (a reader with a GroupID), before the work"
			}
			c.Acks = append(c.Acks, Step{What: what, File: f.File, Line: f.Line})
			break
		}
	}
}

// alignSeverity gives a finding and the effects and writes on its line
// (of the consumers that reach it) one severity, the highest among them:
// a step's path names what the finding's function alone may not (the
// type a method belongs to, the caller that charges), and a finding names
// what the step's call may not (the URL given to http.NewRequest). The
// map's blast radius and the findings then agree (see countFindings).
func alignSeverity(fs []Finding, consumers []Consumer) {
	for i := range fs {
		f := &fs[i]
		var at []*Step
		sev := f.Severity
		for j := range consumers {
			c := &consumers[j]
			if !c.reaches(f.abs, f.Line) {
				continue
			}
			for _, steps := range [][]Step{c.Effects, c.Writes} {
				for k := range steps {
					if steps[k].File == f.File && steps[k].Line == f.Line {
						at = append(at, &steps[k])
						sev = maxSeverity(sev, steps[k].Severity)
					}
				}
			}
		}
		if len(at) == 0 {
			continue
		}
		f.Severity = sev
		for _, s := range at {
			s.Severity = sev
		}
	}
	for j := range consumers {
		c := &consumers[j]
		for _, s := range append(slices.Clone(c.Effects), c.Writes...) {
			c.BlastRadius = maxSeverity(c.BlastRadius, s.Severity)
		}
	}
}

// reaches reports whether the line of the file (absolute path) lies in a
// function the consumer reaches.
// handlerAt returns the index in Handlers of the handler below which the
// line lies, or -1 (no handlers, or the loop's own code).
func (c *Consumer) handlerAt(file string, line int) int {
	for _, h := range c.handlerSpans {
		if h.file == file && line >= h.start && line <= h.end {
			return h.handler
		}
	}
	return -1
}

func (c *Consumer) reaches(file string, line int) bool {
	for _, s := range c.spans {
		if s.file == file && line >= s.start && line <= s.end {
			return true
		}
	}
	return false
}

// WriteMap writes the consumer map as a text table: one block per consumer
// with its entry point, acks, effects, writes, dedupe and blast radius.
func WriteMap(w io.Writer, rep *Report) error {
	var b strings.Builder
	if len(rep.Consumers) == 0 {
		b.WriteString("no consumers found\n")
	}
	for _, c := range rep.Consumers {
		fmt.Fprintf(&b, "%s:%d: %s %s\n", c.File, c.Line, c.Kind, c.Name)
		radius := string(c.BlastRadius)
		if radius == "" {
			radius = "none"
		}
		fmt.Fprintf(&b, "  reaches %s; blast radius %s; dedupe: %s; findings: %d\n", plural(c.Functions, "function"), radius, c.Dedupe, c.Findings)
		for _, h := range c.Handlers {
			fmt.Fprintf(&b, "  handler %s%s\n", strings.TrimPrefix(h.What, "handler "), at(h))
		}
		for _, a := range c.Acks {
			fmt.Fprintf(&b, "  ack     %s%s\n", a.What, at(a))
		}
		for _, e := range c.Effects {
			fmt.Fprintf(&b, "  effect  [%s] %s%s%s\n", e.Severity, e.What, at(e), afterAck(e))
			if len(e.Path) > 1 {
				fmt.Fprintf(&b, "          via %s\n", pathString(e.Path))
			}
			if e.Key != "" {
				fmt.Fprintf(&b, "          Idempotency-Key %s\n", e.Key)
			}
		}
		for _, e := range c.Writes {
			fmt.Fprintf(&b, "  write   [%s] %s%s%s\n", e.Severity, e.What, at(e), afterAck(e))
			if len(e.Path) > 1 {
				fmt.Fprintf(&b, "          via %s\n", pathString(e.Path))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMapMarkdown writes the consumer map as a Markdown table, one row per
// consumer, for a review or a pull request.
func WriteMapMarkdown(w io.Writer, rep *Report) error {
	var b strings.Builder
	b.WriteString("| consumer | kind | acks | effects | writes | dedupe | blast radius | findings |\n|---|---|---|---|---|---|---|---:|\n")
	for _, c := range rep.Consumers {
		var handlers string
		for _, h := range c.Handlers {
			handlers += fmt.Sprintf("<br>%s%s", h.What, at(h))
		}
		fmt.Fprintf(&b, "| `%s` (%s:%d)%s | %s | %s | %s | %s | %s | %s | %d |\n", c.Name, c.File, c.Line, handlers, c.Kind,
			steps(c.Acks), steps(c.Effects), steps(c.Writes), c.Dedupe, cmp.Or(string(c.BlastRadius), "none"), c.Findings)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// plural renders n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func steps(ss []Step) string {
	if len(ss) == 0 {
		return "—"
	}
	var parts []string
	for _, s := range ss {
		p := s.What + at(s) + afterAck(s)
		if len(s.Path) > 1 {
			p += " via " + pathString(s.Path)
		}
		if s.Key != "" {
			p += "; Idempotency-Key " + s.Key
		}
		parts = append(parts, strings.ReplaceAll(p, "|", "\\|"))
	}
	return strings.Join(parts, "<br>")
}

func at(s Step) string {
	if s.File == "" {
		return ""
	}
	return fmt.Sprintf(" at %s:%d", s.File, s.Line)
}

func afterAck(s Step) string {
	var out string
	if s.Async {
		out += " (in another goroutine: the ack may not wait for it)"
	}
	if s.AfterAck {
		out += " (AFTER the ack: a crash in between loses it)"
	}
	return out
}

// WriteMarkdown writes the findings as a Markdown list, for a review or a
// pull-request comment, followed by the consumer map's table when the
// whole-program mode filled it.
func WriteMarkdown(w io.Writer, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### ackgapvet: %d findings\n\n", len(rep.Findings))
	for _, f := range rep.Findings {
		fmt.Fprintf(&b, "- **%s** `%s:%d` %s (`%s`)\n", f.Severity, f.File, f.Line, f.Message, f.Check)
	}
	if len(rep.Consumers) > 0 {
		b.WriteString("\n### Consumers\n\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(rep.Consumers) == 0 {
		return nil
	}
	return WriteMapMarkdown(w, rep)
}

// sqlLiteral matches a quoted string value in SQL text.
var sqlLiteral = regexp.MustCompile(`'[^']*'`)

// waitsForGoroutines reports whether fn's own body (not its function
// literals) waits for the goroutines it starts: a call of
// sync.WaitGroup's or errgroup.Group's Wait.
func (w *wholeProgram) waitsForGoroutines(fn *ssa.Function) bool {
	if fn == nil {
		return false
	}
	if o := fn.Origin(); o != nil {
		fn = o
	}
	p := w.pkgInfo(fn)
	body := funcBody(fn.Syntax())
	if p == nil || p.TypesInfo == nil || body == nil {
		return false
	}
	found := false
	inspectOwn(body, func(n ast.Node) {
		if call, ok := n.(*ast.CallExpr); ok && !found {
			if cf := callee(p.TypesInfo, call); cf != nil && cf.Name() == "Wait" {
				path, recv := funcPath(cf), recvName(cf)
				found = path == "sync" && recv == "WaitGroup" || path == "golang.org/x/sync/errgroup" && recv == "Group"
			}
		}
	})
	return found
}
