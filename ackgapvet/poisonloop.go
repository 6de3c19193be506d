package ackgapvet

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ast/astutil"
)

// poisonConsumers reports, outside Watermill's router, the two ways one
// message that can never succeed stops a consumer for good: the process
// ends on its failure (log.Fatal, os.Exit, panic, a logger's Fatal), and a
// receive loop returns when the message does not decode. Either way the
// message is not acked, so it is the first one back after the restart (a
// Kafka partition resumes at its committed offset; an SQS message returns
// after its visibility timeout; Lambda retries the batch), and it stops
// the consumer again.
func poisonConsumers(pass *analysis.Pass, c *Consumers, r *reporter) {
	info := pass.TypesInfo
	walk(pass, c, callNode, func(n ast.Node, s *site) {
		call := n.(*ast.CallExpr)
		if s.Root == nil {
			return
		}
		exit := exitCall(info, call)
		if exit == "" || exit == "panic" && handlerRecovers(s.Root.Kind) || beforeLoop(pass, s, call) {
			return
		}
		if fd, ok := s.Inner().(*ast.FuncDecl); ok && mustName.MatchString(fd.Name.Name) && s.Inner() != s.Root.Node {
			// MustNewCoinFromString panics by contract: whether that is
			// a message's failure depends on what its caller gives it,
			// constants as often as not (field trial, wave 60: astra's
			// MustNewCoinFromString("aastra", "0")).
			return
		}
		path := enclosingPath(pass, call)
		failing := failureBranch(pass, path, call)
		if failing == nil {
			return
		}
		name := lastName(failing.Fun)
		if fn := callee(info, failing); tidyCall.MatchString(name) || fn != nil && (receives(fn) || ackOf(info, failing) != "") {
			return // the broker's failure or a tidy-up's, not the message's
		}
		if takesNoMessage(info, failing, s.Inner()) {
			return // a dependency's outage (ends the process until it is back), not a message that always fails
		}
		if isLambda(s.Root.Kind) && s.Inner() == s.Root.Node && !carriesMessage(info, failing) && !mentions(info, failing, derivedFrom(info, funcBody(s.Root.Node).List, nil)) {
			// A Lambda handler's set-up (a DSN from the environment, a
			// connection) given nothing of the event: a dependency's
			// failure, not the batch's (field trial, wave 49:
			// abi-sql-view-generator's sf.DSN and sql.Open).
			return
		}
		if !slices.Contains(s.Funcs, s.Root.Node) && !(decodeName.MatchString(name) && readsParam(info, failing, s.Funcs)) {
			// Below the entry point only a decode of what the function
			// was given is surely per message: a helper reached from the
			// loop's set-up (a config, a connection) may also end the
			// process on its failure, once, at start.
			return
		}
		line := pass.Fset.Position(failing.Pos()).Line
		r.report(call, SeverityOf(s.names()...), fmt.Sprintf(
			"%s on a message's failure (%s, line %d) %s ends the process: a message that always fails (a payload that does not decode, a permanent error) %s; handle the failure without ending the process: retry what is transient, and dead-letter (or record and skip) what can never succeed",
			exit, types.ExprString(failing.Fun), line, s.where(), afterExit(s.Root.Kind)))
	})
	for _, root := range c.Roots {
		decodeReturns(pass, c, r, root)
		if root.Kind == KindWatermillSub || root.Kind == KindMsgChan {
			nackForever(pass, c, r, root)
		}
		if root.Kind == KindMsgChan {
			deliveryLoopReturns(pass, r, root)
		}
		if root.Kind == KindNATS || root.Kind == KindNATSPull {
			nakUnlimited(pass, c, r, root)
		}
	}
}

// mustName matches the names of functions that panic on failure by
// convention (regexp.MustCompile, MustParse, mustLoad).
var mustName = regexp.MustCompile(`^[Mm]ust[A-Z_]`)

// requeues reports whether call (of fn) puts a RabbitMQ delivery back at
// the head of its queue: Delivery.Nack(multiple, true) or Reject(true),
// the requeue flag a constant true (field trial, wave 42: zjMall's cart
// sync, Qos(1)).
func requeues(info *types.Info, fn *types.Func, call *ast.CallExpr) bool {
	if !isAMQP(funcPath(fn)) || recvName(fn) != "Delivery" || len(call.Args) == 0 {
		return false
	}
	if fn.Name() != "Nack" && fn.Name() != "Reject" {
		return false
	}
	tv, ok := info.Types[call.Args[len(call.Args)-1]]
	return ok && tv.Value != nil && tv.Value.String() == "true"
}

// attemptName matches the names (and metadata keys) that count a
// message's attempts or deliveries (retries, attempt, redelivered,
// NumDelivered, maxRetries).
var attemptName = regexp.MustCompile(`(?i)retr|attempt|deliver|count`)

// nackForever reports, in a Watermill subscription loop without a router
// (KindWatermillSub) or a loop over RabbitMQ deliveries (KindMsgChan), a
// failure branch that nacks the message (a Watermill Nack; a RabbitMQ
// Nack or Reject that requeues) with no count of its attempts and no send
// elsewhere: it is delivered again at once, and a message that can never
// succeed comes back without end (Kafka holds its partition behind it;
// RabbitMQ requeues it at the head) (field trial, wave 41: go42's Kafka,
// NATS and AMQP loops; wave 42: zjMall). A router's handlers are judged
// by its PoisonQueue middleware instead.
func nackForever(pass *analysis.Pass, c *Consumers, r *reporter, root *Root) {
	info := pass.TypesInfo
	var bodies []*ast.BlockStmt // the loops over the subscription's channel
	ast.Inspect(funcBody(root.Node), func(n ast.Node) bool {
		switch l := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.RangeStmt:
			if isWatermillMsgChan(info.TypeOf(l.X)) || c.isAckableMsgChan(info.TypeOf(l.X)) {
				bodies = append(bodies, l.Body)
				return false
			}
		case *ast.ForStmt:
			receives := false
			ast.Inspect(l.Body, func(m ast.Node) bool {
				if u, ok := m.(*ast.UnaryExpr); ok && u.Op == token.ARROW && (isWatermillMsgChan(info.TypeOf(u.X)) || c.isAckableMsgChan(info.TypeOf(u.X))) {
					receives = true
				}
				return !receives
			})
			if receives {
				bodies = append(bodies, l.Body)
				return false
			}
		}
		return true
	})
	for _, body := range bodies {
		counts := false
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				counts = attemptName.MatchString(n.Name)
			case *ast.BasicLit: // m.Metadata["attempts"]
				counts = n.Kind == token.STRING && attemptName.MatchString(n.Value)
			}
			return !counts
		})
		if counts {
			continue
		}
		eachErrBranch(info, body, func(ifs *ast.IfStmt, failing *ast.CallExpr) bool {
			var nack *ast.CallExpr
			sends := false
			ast.Inspect(ifs.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				fn := callee(info, call)
				switch {
				case fn == nil:
				case strings.HasPrefix(funcPath(fn), pathWatermill) && recvName(fn) == "Message" && fn.Name() == "Nack",
					requeues(info, fn, call):
					nack = call
				case strings.HasPrefix(fn.Name(), "Publish") || strings.HasPrefix(fn.Name(), "Send"):
					sends = true
				}
				return true
			})
			if nack == nil || sends || decodeName.MatchString(lastName(failing.Fun)) {
				return true
			}
			r.report(nack, SeverityOf(root.Name), fmt.Sprintf(
				"nacks the message when %s fails (line %d), with no count of its attempts and no dead-letter: it is delivered again at once, so a message that can never succeed comes back without end and the messages behind it wait (Kafka holds its partition; RabbitMQ requeues it at the head of the queue); count the attempts (a header, or the broker's redelivery count) and dead-letter the message after a few (a Watermill Router with middleware.Retry and middleware.PoisonQueue; a RabbitMQ dead-letter exchange with Nack(false, false))",
				types.ExprString(failing.Fun), pass.Fset.Position(failing.Pos()).Line))
			return true
		})
	}
}

// takesNoMessage reports whether call is given nothing from the message:
// every argument is a context or a constant, and the call is a package's
// function or a method reached from the enclosing method's receiver
// (c.elastic.ActiveSeason(ctx)). Its failure is a dependency's (field
// trial wave 34, Internship: an Elasticsearch lookup before the work),
// not one a message makes every time.
func takesNoMessage(info *types.Info, call *ast.CallExpr, inner ast.Node) bool {
	for _, a := range call.Args {
		if tv, ok := info.Types[a]; ok && tv.Value != nil {
			continue
		}
		if t := info.TypeOf(a); t != nil && isNamed(t, "context", "Context") {
			continue
		}
		return false
	}
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		_, isFunc := info.Uses[f].(*types.Func)
		return isFunc
	case *ast.SelectorExpr:
		base := baseObj(info, f.X)
		if _, isPkg := base.(*types.PkgName); isPkg {
			return true
		}
		d, ok := inner.(*ast.FuncDecl)
		if !ok || d.Recv == nil || len(d.Recv.List) == 0 || len(d.Recv.List[0].Names) == 0 {
			return false
		}
		return base != nil && base == info.Defs[d.Recv.List[0].Names[0]]
	}
	return false
}

// beforeLoop reports whether call lies in a receive loop's own function
// (or a closure in it) but outside the loops that take messages: set-up
// before them (a goroutine started first included) and clean-up after.
func beforeLoop(pass *analysis.Pass, s *site, call *ast.CallExpr) bool {
	if !slices.Contains(s.Funcs, s.Root.Node) {
		return false
	}
	for _, f := range s.Funcs {
		if lit, ok := f.(*ast.FuncLit); ok && takesMessages(pass.TypesInfo, lit.Body) {
			return false // a worker started first, fed by the loop
		}
	}
	return outsideLoops(pass, s.Root, call)
}

// takesMessages reports whether body ranges over or receives from a
// channel of values (not a signal channel of struct{}, such as
// ctx.Done()): a worker fed by the receive loop.
func takesMessages(info *types.Info, body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		var x ast.Expr
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.RangeStmt:
			x = n.X
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				x = n.X
			}
		}
		if x != nil {
			if ch, ok := types.Unalias(info.TypeOf(x)).Underlying().(*types.Chan); ok {
				if st, empty := ch.Elem().Underlying().(*types.Struct); !empty || st.NumFields() > 0 {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// decodeReturns reports, in a receive loop's own function (a poll or
// receive loop, a Sarama ConsumeClaim), a return from the loop when a
// message does not decode.
func decodeReturns(pass *analysis.Pass, c *Consumers, r *reporter, root *Root) {
	stops := loopStops(root.Kind)
	if stops == "" {
		return
	}
	info := pass.TypesInfo
	var bodies []*ast.BlockStmt
	for _, loop := range messageLoops(pass, root) {
		switch l := loop.(type) {
		case *ast.ForStmt:
			bodies = append(bodies, l.Body)
		case *ast.RangeStmt:
			bodies = append(bodies, l.Body)
		}
	}
	if root.Kind == KindKinesisScan {
		bodies = append(bodies, funcBody(root.Node)) // the library's loop calls it per record
	}
	for _, body := range bodies {
		eachErrBranch(info, body, func(ifs *ast.IfStmt, failing *ast.CallExpr) bool {
			when := types.ExprString(failing.Fun) + " fails"
			if !decodeName.MatchString(lastName(failing.Fun)) {
				// A helper of this package that decodes what it is
				// given and returns the decode's error (field trial,
				// wave 40: go-taskflow's processMessage below
				// ConsumeClaim).
				d := c.returnsDecodeError(callee(info, failing))
				if d == nil {
					return true
				}
				when += " on " + types.ExprString(d.Fun)
				failing = d
			}
			for _, b := range ifs.Body.List {
				if ret, ok := b.(*ast.ReturnStmt); ok {
					what, fix := "returns from the receive loop", "log it and ack it (or send it to a dead-letter topic or queue), then go on with the next message"
					if root.Kind == KindKinesisScan {
						what, fix = "returns an error from the Scan callback", "log it and return nil (or send it to a dead-letter stream first)"
					}
					r.report(ret, SeverityOf(root.Name, types.ExprString(failing.Fun)), fmt.Sprintf(
						"%s when %s (line %d): a message that does not decode never will, so %s; %s",
						what, when, pass.Fset.Position(failing.Pos()).Line, stops, fix))
				}
			}
			return true
		})
	}
}

// nakUnlimited reports, in a JetStream callback or pull loop, a failure
// branch that Naks the message at once (Nak, not NakWithDelay) with no
// count of its attempts, when the consumer configs in the root's function
// (or, if it has none, in the package) set no MaxDeliver: the server's
// default is unlimited (-1), so a message that can never succeed is
// delivered again at once without end (field trial, wave 50:
// cic-custodial's dispatch worker). Not reported when no config is in the
// code (the consumer may be made elsewhere, with a limit).
func nakUnlimited(pass *analysis.Pass, c *Consumers, r *reporter, root *Root) {
	info := pass.TypesInfo
	type config struct {
		found, limited, backoff bool
		max                     int64 // MaxDeliver when a constant, else 0
	}
	configs := func(n ast.Node) (c config) {
		ast.Inspect(n, func(m ast.Node) bool {
			lit, ok := m.(*ast.CompositeLit)
			if !ok {
				return true
			}
			named, ok := types.Unalias(info.TypeOf(lit)).(*types.Named)
			if !ok || named.Obj().Name() != "ConsumerConfig" || named.Obj().Pkg() == nil || !isNATS(pkgPath(named.Obj().Pkg())) {
				return true
			}
			c.found = true
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				switch types.ExprString(kv.Key) {
				case "MaxDeliver":
					c.limited = true
					if tv := info.Types[kv.Value]; tv.Value != nil {
						c.max, _ = constant.Int64Val(tv.Value)
					}
				case "BackOff":
					c.backoff = true
				}
			}
			return true
		})
		return c
	}
	body := funcBody(root.Node)
	cfg := configs(body)
	if !cfg.found {
		for _, f := range pass.Files {
			fc := configs(f)
			cfg.found, cfg.limited, cfg.backoff = cfg.found || fc.found, cfg.limited || fc.limited, cfg.backoff || fc.backoff
			if fc.max > cfg.max {
				cfg.max = fc.max
			}
		}
	}
	// A MaxDeliver with no BackOff, spent by Naks with no delay: a
	// transient failure (a database restart) uses every delivery within
	// milliseconds, and the server then drops the message (field trial,
	// wave 59: Project-BYTZ's MaxDeliver 3).
	burnt := cfg.limited && !cfg.backoff && cfg.max > 0
	if !cfg.found || cfg.limited && !burnt {
		return
	}
	// The callback's own body, and the package's functions it hands the
	// message to (`func(msg jetstream.Msg) { c.handleMessage(ctx, msg) }`).
	bodies := []*ast.BlockStmt{body}
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if fn := callee(info, call); fn != nil && c.decls[fn.Origin()] != nil && slices.ContainsFunc(call.Args, func(a ast.Expr) bool { return isNATSMsg(info.TypeOf(a)) }) {
			bodies = append(bodies, c.decls[fn.Origin()].Body)
		}
		return true
	})
	for _, body := range bodies {
		nakAtOnce(pass, r, root, body, cfg.max, burnt)
	}
}

// nakAtOnce reports, in body, a Nak with no delay in a failure branch
// when nothing in body counts the message's attempts: with burnt, against
// a MaxDeliver of max with no BackOff; otherwise against no MaxDeliver.
func nakAtOnce(pass *analysis.Pass, r *reporter, root *Root, body *ast.BlockStmt, max int64, burnt bool) {
	info := pass.TypesInfo
	if body == nil {
		return
	}
	counts := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if named, ok := types.Unalias(info.TypeOf(n)).(*types.Named); ok && named.Obj().Name() == "ConsumerConfig" {
				return false // its MaxDeliver field counts nothing
			}
		case *ast.Ident:
			counts = counts || attemptName.MatchString(n.Name)
		case *ast.SelectorExpr:
			counts = counts || attemptName.MatchString(n.Sel.Name) // md.NumDelivered
		}
		return !counts
	})
	if counts {
		return
	}
	eachErrBranch(info, body, func(ifs *ast.IfStmt, failing *ast.CallExpr) bool {
		if ackOf(info, failing) != "" {
			return true
		}
		ast.Inspect(ifs.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn := callee(info, call)
			if fn == nil || !isNATS(funcPath(fn)) || fn.Name() != "Nak" {
				return true
			}
			line := pass.Fset.Position(failing.Pos()).Line
			if burnt {
				r.report(call, SeverityOf(root.Name), fmt.Sprintf(
					"naks the message at once when %s fails (line %d), with no count of its attempts, and this package's JetStream consumer config sets MaxDeliver %d with no BackOff: a transient failure (a restart of the database, a timeout) spends every delivery within milliseconds, and the server then stops delivering the message (no dead-letter: JetStream only publishes an advisory), so it is lost; Nak with a delay (NakWithDelay, or a BackOff in the config), and dead-letter or record the message on its last delivery (Metadata().NumDelivered)",
					types.ExprString(failing.Fun), line, max))
				return true
			}
			r.report(call, SeverityOf(root.Name), fmt.Sprintf(
				"naks the message when %s fails (line %d), with no count of its attempts, and this package's JetStream consumer config sets no MaxDeliver (unlimited by default): a message that can never succeed is delivered again at once, without end; set MaxDeliver (with a BackOff, or NakWithDelay), and dead-letter or record the message on its last delivery (Metadata().NumDelivered)",
				types.ExprString(failing.Fun), line))
			return true
		})
		return true
	})
}

// deliveryLoopReturns reports, in a loop over RabbitMQ deliveries (a
// range over Consume's channel in the entry point's own function), a
// failure branch of the message's work that returns from the function:
// the loop stops consuming for good while the process lives on, and the
// unacked delivery stays on the channel until it closes (field trial,
// wave 50: video_transcoding's workers, five goroutines that each exit
// on their first failed job). The failure of an ack, a receive or a
// tidy-up is the channel's, not the message's: not reported.
func deliveryLoopReturns(pass *analysis.Pass, r *reporter, root *Root) {
	info := pass.TypesInfo
	inspectOwn(funcBody(root.Node), func(n ast.Node) {
		loop, ok := n.(*ast.RangeStmt)
		if !ok {
			return
		}
		ch, ok := types.Unalias(info.TypeOf(loop.X)).Underlying().(*types.Chan)
		if !ok || !isAMQPDelivery(ch.Elem()) {
			return
		}
		eachErrBranch(info, loop.Body, func(ifs *ast.IfStmt, failing *ast.CallExpr) bool {
			if fn := callee(info, failing); tidyCall.MatchString(lastName(failing.Fun)) || ackOf(info, failing) != "" || fn != nil && receives(fn) {
				return true
			}
			for _, b := range ifs.Body.List {
				if ret, ok := b.(*ast.ReturnStmt); ok {
					r.report(ret, SeverityOf(root.Name, types.ExprString(failing.Fun)), fmt.Sprintf(
						"returns from the loop over RabbitMQ deliveries when %s fails (line %d): the loop stops consuming for good while the process lives on, and the unacked delivery stays on the channel until it closes, so every later message waits for a restart; Nack the delivery (to a dead-letter exchange, or requeued for a transient failure) and go on with the next one",
						types.ExprString(failing.Fun), pass.Fset.Position(failing.Pos()).Line))
				}
			}
			return true
		})
	})
}

// eachErrBranch calls f for each error branch in body's blocks (see
// errBranch: `if err := work(); err != nil {...}`, or the assignment then
// the if), function literals left out, until f returns false.
func eachErrBranch(info *types.Info, body *ast.BlockStmt, f func(ifs *ast.IfStmt, failing *ast.CallExpr) bool) {
	more := true
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || !more {
			return false
		}
		blk, ok := stmtBlock(n)
		if !ok {
			return true
		}
		for i, st := range blk.List {
			var prev ast.Stmt
			if i > 0 {
				prev = blk.List[i-1]
			}
			if ifs, failing := errBranch(info, st, prev); ifs != nil && more {
				more = f(ifs, failing)
			}
		}
		return more
	})
}

// returnsDecodeError returns, for a function declared in this package, the
// decode call (see decodeName) whose failure it returns as its own error
// (`if err := json.Unmarshal(msg.Value, &t); err != nil { return err }`,
// or wrapped), reading a parameter; nil for any other function.
func (c *Consumers) returnsDecodeError(fn *types.Func) *ast.CallExpr {
	if fn == nil || c.decls[fn] == nil || c.decls[fn].Body == nil {
		return nil
	}
	info := c.pass.TypesInfo
	d := c.decls[fn]
	var found *ast.CallExpr
	eachErrBranch(info, d.Body, func(ifs *ast.IfStmt, failing *ast.CallExpr) bool {
		if decodeName.MatchString(lastName(failing.Fun)) && readsParam(info, failing, []ast.Node{d}) && returnsErrorValue(ifs.Body) {
			found = failing
		}
		return found == nil
	})
	return found
}

// decodeName matches a call that reads a message's payload: its failure is
// the message's and is permanent.
var decodeName = regexp.MustCompile(`(?i)unmarshal|decode|parse|valid|atoi|FromString`)

// tidyCall matches calls that tidy up after the work (their failure is not
// the message's).
var tidyCall = regexp.MustCompile(`^(Close|Flush|Rollback|Release|Shutdown|Stop|Sync)$`)

// exitCall names a call that ends the process or unwinds the goroutine:
// the builtin panic, os.Exit, the log package's Fatal and Panic functions,
// and a logger's Fatal methods (zap, logrus, zerolog, klog, an
// application's own logger); "" for any other call. testing's Fatal is
// not one.
func exitCall(info *types.Info, call *ast.CallExpr) string {
	if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
		if b, ok := info.Uses[id].(*types.Builtin); ok && b.Name() == "panic" {
			return "panic"
		}
	}
	fn := callee(info, call)
	if fn == nil {
		return ""
	}
	path, name := funcPath(fn), fn.Name()
	switch {
	case path == "os" && name == "Exit":
		return "os.Exit"
	case path == "testing" || path == "log/slog":
		return ""
	case path == "log" && (strings.HasPrefix(name, "Fatal") || strings.HasPrefix(name, "Panic")):
		return "log." + name
	case fatalMethod.MatchString(name):
		return types.ExprString(call.Fun)
	}
	return ""
}

// fatalMethod matches the Fatal functions and methods of logging packages
// (zap's Fatal and Fatalw, logrus's Fatalf, zerolog's Fatal, klog's Fatalf).
var fatalMethod = regexp.MustCompile(`^Fatal(f|ln|w)?$`)

// handlerRecovers reports whether a root kind's caller recovers a panic in
// it: Watermill's router with its Recoverer middleware, ackgap's router,
// asynq's processor (a panic is the task's error: it is retried).
func handlerRecovers(kind string) bool {
	return kind == KindWatermill || kind == KindCQRS || kind == KindAckgap || kind == KindAsynq
}

// offsetNotCommitted is why a Kafka loop's message comes back after the
// process ends or the loop stops on it; mergeAtMostOnce drops the finding
// for a loop that committed it as it read it.
const offsetNotCommitted = "(its offset was not committed)"

// afterExit says what happens after the process ends on one message, by
// the kind of consumer.
func afterExit(kind string) string {
	switch kind {
	case KindSQS:
		return "ends it again each time it is received, and every message in flight with it is received again after its visibility timeout, until the queue's redrive policy moves it to a dead-letter queue (without one, until it expires)"
	case KindLambda:
		return "fails the invocation each time: Lambda delivers the whole batch again, the processed records included"
	case KindLambdaKinesis, KindLambdaDynamoDB, KindLambdaKafka:
		return "fails the invocation each time: Lambda retries the whole batch in place, the processed records included, by default until the record expires, and its shard or partition makes no progress"
	case KindKinesisScan:
		return "is read again first after the restart (it was not checkpointed) and ends it again: the consumer crash-loops and its shard makes no progress"
	case KindNATSCore:
		return "is not delivered again (core NATS has no redelivery), but every message of every subscription in flight in the process is lost with it, and each such message ends the process again"
	case KindNATS, KindNATSPull:
		return "is delivered again after AckWait once the process is back and ends it again, until the consumer's MaxDeliver is spent: the consumer crash-loops"
	case KindAsynq:
		return "is run again once its lease expires and ends it again, each time, until its retries are spent and asynq archives it"
	case KindNSQ:
		return "is delivered again by nsqd once its message timeout (60 s by default) passes and ends it again, each time, until go-nsq gives it up past MaxAttempts"
	case KindWatermill, KindCQRS, KindAckgap, KindWatermillSub:
		return "is delivered again after the restart and ends it again: every handler of the process stops with it, for good"
	}
	return "is fetched again first after the restart " + offsetNotCommitted + " and ends it again: the consumer crash-loops and its partition makes no progress"
}

// loopStops says what a receive loop's return on one message does, by the
// kind of loop; "" for roots that are not receive loops.
func loopStops(kind string) string {
	switch kind {
	case KindSarama:
		return "the claim returns, Sarama ends the session, and the next Consume starts the partition from the same message: the group rebalances without end and the partition makes no progress"
	case KindSQS:
		return "the loop stops receiving at it: every later message waits, and after a restart the message comes back and stops the loop again, until the queue's redrive policy dead-letters it"
	case KindKinesisScan:
		return "Scan stops at it, and after a restart resumes from the last checkpoint, before it, and stops again: the shard makes no progress (a durable checkpoint store), or the records in between are skipped (the default in-memory store starts at LATEST)"
	case KindFranz, KindKafkaGo, KindConfluent, KindSaramaPartition, KindSaramaCluster, KindKinesisPoll, KindStreamsPoll:
		return "the loop stops consuming at it, and after a restart it is fetched first again " + offsetNotCommitted + " and stops the loop again: the partition makes no progress"
	}
	return ""
}

// messageLoops returns the loops of a receive loop's own function (not of
// closures in it) that take messages: a for statement that calls the
// client's receive, poll or fetch, or that reads a Messages() channel
// (Sarama's claim and partition consumer).
func messageLoops(pass *analysis.Pass, root *Root) []ast.Node {
	body := funcBody(root.Node)
	if body == nil {
		return nil
	}
	var loops []ast.Node
	ast.Inspect(body, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ForStmt, *ast.RangeStmt:
			if r, ok := n.(*ast.RangeStmt); ok && deliveryChan(pass.TypesInfo.TypeOf(r.X)) {
				// for d := range msgs: RabbitMQ deliveries, a Watermill
				// subscription's or a Redis Pub/Sub channel's messages
				// (field trial, wave 52: bakery-go's Consume before it).
				loops = append(loops, n)
				return false
			}
			found := false
			ast.Inspect(n, func(m ast.Node) bool {
				if c, ok := m.(*ast.CallExpr); ok {
					if fn := callee(pass.TypesInfo, c); fn != nil && (receives(fn) || fn.Name() == "Messages" || receivesBelow(pass, fn, 3)) || receiveSite(pass, c) {
						found = true
					}
				}
				return !found
			})
			if found {
				loops = append(loops, n)
				return false
			}
		}
		return true
	})
	return loops
}

// deliveryChan reports whether t is a channel of a broker's messages: a
// RabbitMQ Delivery's, a Watermill subscription's or a Redis Pub/Sub
// subscription's.
func deliveryChan(t types.Type) bool {
	if t == nil {
		return false
	}
	ch, ok := t.Underlying().(*types.Chan)
	return ok && isAMQPDelivery(ch.Elem()) || isWatermillMsgChan(t) || isRedisMsgChan(t)
}

// receiveSite reports whether, in the whole-program mode, the walk
// reaches a receive below call: a loop in main that calls another
// package's wrapper of the receive once per turn (field trial, wave 33:
// video-api's ProcessMessages, whose set-up's log.Fatal in main was taken
// for a message's).
func receiveSite(pass *analysis.Pass, call *ast.CallExpr) bool {
	v, ok := programs.Load(pass.Pkg)
	return ok && v.(*programReach).receiveSites[call.Lparen]
}

// receivesBelow reports whether fn, a function of pass's package, makes a
// receive call (see receives) in its body or in the package's functions
// it calls, through depth levels: a loop that calls such a wrapper once
// per turn (for { processSQS(ctx, ...) }) is the loop that takes messages.
func receivesBelow(pass *analysis.Pass, fn *types.Func, depth int) bool {
	if depth == 0 || fn.Pkg() != pass.Pkg {
		return false
	}
	body := declBody(pass, fn)
	if body == nil {
		return false
	}
	found := false
	ast.Inspect(body, func(m ast.Node) bool {
		if c, ok := m.(*ast.CallExpr); ok {
			if f := callee(pass.TypesInfo, c); f != nil && f != fn && (receives(f) || receivesBelow(pass, f, depth-1)) {
				found = true
			}
		}
		return !found
	})
	return found
}

// declBody returns the body of fn's declaration in pass's files, or nil.
func declBody(pass *analysis.Pass, fn *types.Func) *ast.BlockStmt {
	for _, f := range pass.Files {
		if f.FileStart > fn.Pos() || fn.Pos() >= f.FileEnd {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Pos() == fn.Pos() {
				return fd.Body
			}
		}
	}
	return nil
}

// enclosingPath returns the nodes around n in its file, innermost first.
func enclosingPath(pass *analysis.Pass, n ast.Node) []ast.Node {
	for _, f := range pass.Files {
		if f.FileStart <= n.Pos() && n.End() <= f.FileEnd {
			path, _ := astutil.PathEnclosingInterval(f, n.Pos(), n.End())
			return path
		}
	}
	return nil
}

// failureBranch finds, up path from n to its function, the if statement
// whose body holds n and whose condition is a failure (`err != nil`), and
// returns the call the error came from (nil if there is none).
func failureBranch(pass *analysis.Pass, path []ast.Node, n ast.Node) *ast.CallExpr {
	for i, p := range path {
		switch p := p.(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			return nil
		case *ast.IfStmt:
			if n.Pos() < p.Body.Pos() || n.End() > p.Body.End() || i+1 >= len(path) {
				continue
			}
			var prev ast.Stmt // none for an else-if: its parent is an if
			if blk, ok := stmtBlock(path[i+1]); ok {
				for j, st := range blk.List {
					if st == p && j > 0 {
						prev = blk.List[j-1]
					}
				}
			}
			if ifs, failing := errBranch(pass.TypesInfo, p, prev); ifs != nil {
				return failing
			}
			return nil
		}
	}
	return nil
}

// errBranch matches `if err := f(); err != nil {...}`, or `err := f()`
// (prev) followed by `if err != nil {...}` at st, and returns the if
// statement and f's call. A condition that classifies the error
// (errors.Is) is a decision, not a failure, and does not match.
func errBranch(info *types.Info, st, prev ast.Stmt) (*ast.IfStmt, *ast.CallExpr) {
	ifs, ok := st.(*ast.IfStmt)
	if !ok {
		return nil, nil
	}
	bin, ok := ast.Unparen(ifs.Cond).(*ast.BinaryExpr)
	if ok && bin.Op == token.LOR {
		bin, ok = ast.Unparen(bin.X).(*ast.BinaryExpr)
	}
	if !ok || bin.Op != token.NEQ {
		return nil, nil
	}
	errID, ok := ast.Unparen(bin.X).(*ast.Ident)
	if nilID, isNil := ast.Unparen(bin.Y).(*ast.Ident); !ok || !isNil || nilID.Name != "nil" {
		return nil, nil
	}
	errObj := info.Uses[errID]
	if errObj == nil || !isError(errObj.Type()) {
		return nil, nil
	}
	assign := prev
	if ifs.Init != nil {
		assign = ifs.Init
	}
	if sw, ok := assign.(*ast.SwitchStmt); ok {
		// switch kind { case a: err = start(...) case b: err = stop(...) }
		// then if err != nil: the first case's call stands for them all.
		for _, cl := range sw.Body.List {
			for _, st := range cl.(*ast.CaseClause).Body {
				if call := errAssigned(info, st, errObj); call != nil {
					return ifs, call
				}
			}
		}
		return nil, nil
	}
	if call := errAssigned(info, assign, errObj); call != nil {
		return ifs, call
	}
	if call := retriedCall(info, assign, errObj); call != nil {
		return ifs, call
	}
	return nil, nil
}

// retriedCall returns the call whose error a bounded retry loop st keeps
// in errObj (`for i := 0; i < 5; i++ { if err = work(); err == nil {
// break } }`, or `for range 3`), or nil: `if err != nil` after the loop is
// the work's last failure (field trial, wave 28: LinkMe's consumers log it
// and mark the message).
func retriedCall(info *types.Info, st ast.Stmt, errObj types.Object) *ast.CallExpr {
	var body *ast.BlockStmt
	switch l := st.(type) {
	case *ast.ForStmt:
		if l.Cond == nil {
			return nil // unbounded: it does not end on a failure
		}
		body = l.Body
	case *ast.RangeStmt:
		if t, ok := info.TypeOf(l.X).Underlying().(*types.Basic); !ok || t.Info()&types.IsInteger == 0 {
			return nil // a range over messages, not over attempts
		}
		body = l.Body
	default:
		return nil
	}
	var call *ast.CallExpr
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.AssignStmt:
			if c := errAssigned(info, n, errObj); c != nil && call == nil {
				call = c
			}
		}
		return call == nil
	})
	return call
}

// errAssigned returns the call whose error st assigns to errObj (`v, err
// := f()`, `err = db.Create(&v).Error`), or nil.
func errAssigned(info *types.Info, st ast.Stmt, errObj types.Object) *ast.CallExpr {
	as, ok := st.(*ast.AssignStmt)
	if !ok || len(as.Rhs) != 1 {
		return nil
	}
	last, ok := as.Lhs[len(as.Lhs)-1].(*ast.Ident)
	if !ok || info.ObjectOf(last) != errObj {
		return nil
	}
	rhs := ast.Unparen(as.Rhs[0])
	if sel, ok := rhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Error" {
		rhs = ast.Unparen(sel.X) // gorm: db.Create(&v).Error
	}
	call, _ := rhs.(*ast.CallExpr)
	return call
}

// readsParam reports whether an argument of call mentions a parameter of
// one of the functions funcs, or a value they take from a channel with
// range (what the function was given: a message, its payload).
func readsParam(info *types.Info, call *ast.CallExpr, funcs []ast.Node) bool {
	params := map[types.Object]bool{}
	for _, f := range funcs {
		ft := funcType(f)
		if ft == nil || ft.Params == nil {
			continue
		}
		for _, fld := range ft.Params.List {
			for _, nm := range fld.Names {
				if obj := info.Defs[nm]; obj != nil {
					params[obj] = true
				}
			}
		}
		// A worker's message: the value of a range over a channel.
		ast.Inspect(funcBody(f), func(n ast.Node) bool {
			if r, ok := n.(*ast.RangeStmt); ok && r.Key != nil {
				if _, isChan := types.Unalias(info.TypeOf(r.X)).Underlying().(*types.Chan); isChan {
					if id, ok := r.Key.(*ast.Ident); ok && info.Defs[id] != nil {
						params[info.Defs[id]] = true
					}
				}
			}
			return true
		})
	}
	found := false
	for _, a := range call.Args {
		ast.Inspect(a, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && params[info.Uses[id]] {
				found = true
			}
			return !found
		})
	}
	return found
}
