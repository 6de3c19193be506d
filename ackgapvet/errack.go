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

// ErrAckAnalyzer reports acks on the path where the message's work failed.
var ErrAckAnalyzer = newAnalyzer("errack",
	`report a consumer that acknowledges a message after its work failed

When the work's error is only logged and the code goes on to the offset mark
or commit, the SQS delete or the Ack, or when the error branch itself acks
(a Lambda handler that logs a record's error and leaves it out of
BatchItemFailures, a Watermill or ackgap handler that returns nil), a
transient failure (a timeout, a busy database, a restarting dependency)
loses the message instead of redelivering it. On Kafka, skipping the ack of
a failed message (continue, or the ack only on the success branch) loses
it as well: offsets are committed, not messages, so the next message's mark
commits past it. So does an ack after an HTTP
request whose response status the function never reads (a 500 or 429 taken
for success), or a branch on a failed status that returns no error where a
nil return acks, and work whose error is dropped unread before an ack.
Under an auto-commit (librdkafka's defaults with no
commit on the walk; kafka-go's ReadMessage), a failure only logged is
committed all the same. So is a franz-go poll skipped whole on its
errors (if fs.Err() != nil { continue }) when its offsets are committed
(auto-commit, CommitUncommittedOffsets): one partition's error comes
beside the other partitions' records. In the whole-program mode, a function below a receive loop
that commits on its nil result acks on nil as well: a failed write turned
into a nil return there, an error branch that falls through to a nil
return, or an error overwritten before it is returned, is reported. Errors from decoding the
message (Unmarshal, Decode, Parse, Validate), or from encoding what the
consumer made of it (Marshal), are not reported: a message that cannot be
read (or encoded) will not be on the next delivery either. An error
branch that first sends the message elsewhere (a dead-letter or retry
topic or queue, any publish) is not reported either. Fix: leave the message
unacked so it is redelivered (on Kafka, return the error: a continue without
the mark lets the next mark commit past it; on SQS or Watermill, skipping the
ack is enough), and dead-letter explicitly only the errors known to be
permanent.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		for node, root := range c.reach {
			body := funcBody(node)
			if body == nil {
				continue
			}
			deferredAck(pass, c, r, root, body)
			if root.Kind == KindNATSCore {
				coreNak(pass, r, root, body)
			}
			if acker, _ := c.ackerOf(node); root.Node == node && returnAcks(root.Kind) || acker != "" {
				deferredCommitDropped(pass, c, r, root, node, body, acker)
			}
			partialBatch(pass, r, root, body)
			kafkaBreaks(pass, c, r, root, body, true)
			// kq commits what Consume returns, so a function whose error
			// Consume returns as its own (`return l.operate(ctx, v)`)
			// acks by returning too (field trial wave 34, kk-forum H4).
			implicit := root.Node == node && returnAcks(root.Kind) || root.Kind == KindKq && c.entryTail(node)
			acker, always := c.ackerOf(node)
			if implicit || acker != "" {
				successOnlyOverwrite(pass, c, r, root, body, implicit, acker)
				lockHeldAck(pass, r, root, body, implicit, acker)
			}
			after := afterLoops(body)
			cont := continuations(body)
			ast.Inspect(body, func(m ast.Node) bool {
				if _, ok := m.(*ast.FuncLit); ok {
					return false // its own function on the path
				}
				switch loop := m.(type) {
				case *ast.RangeStmt:
					_, overChan := types.Unalias(pass.TypesInfo.TypeOf(loop.X)).Underlying().(*types.Chan)
					kafkaSkips(pass, c, r, root, loop.Body, overChan)
					kafkaSkipsThenCommits(pass, c, r, root, loop.Body, after[loop.Body])
					watermillSkips(pass, c, r, root, loop.Body)
					amqpSkips(pass, c, r, root, loop.Body)
				case *ast.ForStmt:
					franzSkipsFetch(pass, c, r, root, loop.Body)
					kafkaSkips(pass, c, r, root, loop.Body, false)
					kafkaBreaks(pass, c, r, root, loop.Body, false)
					watermillSkips(pass, c, r, root, loop.Body)
					amqpSkips(pass, c, r, root, loop.Body)
				}
				block, ok := stmtBlock(m)
				if !ok {
					return true
				}
				for i, st := range block.List {
					uncheckedStatus(pass, r, root, body, st, block.List[i+1:], implicit, acker)
					// A branch that falls through reaches the statements
					// after the if or switch around it: an ack there acks
					// the failure too.
					through := block.List[i+1:]
					if tail := cont[m]; len(tail) > 0 && !terminates(&ast.BlockStmt{List: through}) {
						through = append(slices.Clip(through), tail...)
					}
					// A dropped error inside a loop over the message's parts
					// (a Lambda batch's records) reaches what follows the
					// loop: its ack, or its `return nil`.
					dropThrough := through
					if tail, ok := after[block]; ok && !terminates(&ast.BlockStmt{List: through}) {
						dropThrough = append(slices.Clip(through), tail...)
					}
					droppedError(pass, c, r, root, st, dropThrough, implicit, acker, always)
					failedStatusDone(pass, r, root, st, through, implicit, acker)
					var prev ast.Stmt
					if i > 0 {
						prev = block.List[i-1]
					}
					narrowedFailure(pass, c, r, root, st, prev, block.List[i+1:])
					ifs, work := failedWork(pass, c, st, prev)
					if ifs == nil {
						// The check may come a few statements after the call
						// (a timer read, a log line in between).
						if at := errAssignedBefore(pass.TypesInfo, block.List, i); at != nil {
							ifs, work = failedWork(pass, c, st, at)
						}
					}
					if ifs == nil {
						continue
					}
					rest := through
					if tail, ok := after[block]; ok && !terminates(&ast.BlockStmt{List: rest}) {
						// A failure inside a loop over the message's parts
						// (sources, records) reaches the statements after
						// the loop: the mark there acks it.
						rest = append(slices.Clip(rest), tail...)
					}
					checkErrAck(pass, c, r, root, ifs, work, rest, implicit, acker, always)
				}
				return true
			})
			if node != root.Node {
				returnsBeforeOwnCommit(pass, c, r, root, node, body)
			}
		}
	})

// continuations maps each block nested in an if, else, switch or select
// case (or a bare block) of body to the statements that run after it when
// it falls through: those after the statement around it, and after that
// statement's own block in turn, up to the end of the function or of the
// loop body it is in (a loop's next iteration is not a continuation; see
// afterLoops). Keys are the *ast.BlockStmt, or the *ast.CaseClause and
// *ast.CommClause, as stmtBlock takes them.
func continuations(body *ast.BlockStmt) map[ast.Node][]ast.Stmt {
	out := map[ast.Node][]ast.Stmt{}
	var visit func(list, cont []ast.Stmt)
	var branch func(st ast.Stmt, next []ast.Stmt)
	branch = func(st ast.Stmt, next []ast.Stmt) {
		switch s := st.(type) {
		case *ast.IfStmt:
			out[s.Body] = next
			visit(s.Body.List, next)
			if s.Else != nil {
				branch(s.Else, next)
			}
		case *ast.BlockStmt:
			out[s] = next
			visit(s.List, next)
		case *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
			var clauses []ast.Stmt
			switch s := s.(type) {
			case *ast.SwitchStmt:
				clauses = s.Body.List
			case *ast.TypeSwitchStmt:
				clauses = s.Body.List
			case *ast.SelectStmt:
				clauses = s.Body.List
			}
			for _, cc := range clauses {
				branch(cc, next) // not the next clause: a case ends the switch
			}
		case *ast.CaseClause:
			out[s] = next
			visit(s.Body, next)
		case *ast.CommClause:
			out[s] = next
			visit(s.Body, next)
		case *ast.LabeledStmt:
			branch(s.Stmt, next)
		case *ast.ForStmt:
			visit(s.Body.List, nil)
		case *ast.RangeStmt:
			visit(s.Body.List, nil)
		}
	}
	visit = func(list, cont []ast.Stmt) {
		for i, st := range list {
			branch(st, append(slices.Clip(list[i+1:]), cont...))
		}
	}
	visit(body.List, nil)
	return out
}

// afterLoops maps the body of every loop in body (outside nested function
// literals) to the statements that follow the loop in its block.
func afterLoops(body *ast.BlockStmt) map[*ast.BlockStmt][]ast.Stmt {
	out := map[*ast.BlockStmt][]ast.Stmt{}
	inspectOwn(body, func(n ast.Node) {
		block, ok := n.(*ast.BlockStmt)
		if !ok {
			return
		}
		for i, st := range block.List {
			switch loop := st.(type) {
			case *ast.RangeStmt:
				out[loop.Body] = block.List[i+1:]
			case *ast.ForStmt:
				out[loop.Body] = block.List[i+1:]
			}
		}
	})
	return out
}

// coreNakMark begins errack's message for a Nak on a core NATS message.
const coreNakMark = "asks for a redelivery with "

// coreNak reports, in a function on a core NATS subscription's path, the
// first call of a message's Nak or NakWithDelay: a core message has no
// reply subject to answer, so the call returns nats.ErrMsgNoReply and
// nothing delivers the message again (field trial, wave 40:
// openuem-worker's certificate and mail handlers, written as if for
// JetStream). Its failure is lost.
func coreNak(pass *analysis.Pass, r *reporter, root *Root, body *ast.BlockStmt) {
	done := false
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || done {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if fn := callee(pass.TypesInfo, call); fn != nil && isNATS(funcPath(fn)) && recvName(fn) == "Msg" && (fn.Name() == "Nak" || fn.Name() == "NakWithDelay") {
			done = true
			r.report(call, SeverityOf(root.Name), fmt.Sprintf(
				"%s%s on a core NATS subscription (%s %s): a core message has no reply subject to answer, so the call returns nats.ErrMsgNoReply and nothing delivers the message again: the failure is lost; consume the subject from a JetStream stream (js.QueueSubscribe with nats.ManualAck(), or a jetstream.Consumer) to have a failed message redelivered",
				coreNakMark, qualName(fn), root.Kind, root.Name))
		}
		return true
	})
}

// returnAcks reports whether a root of kind acks its message by returning
// without an error: the router, ackgap, Lambda, go-queue's kq (which
// commits after an error too), an SQS consumer library's handler, an
// asynq task handler and a go-nsq handler.
func returnAcks(kind string) bool {
	switch kind {
	case KindWatermill, KindAckgap, KindCQRS, KindLambda, KindLambdaKinesis, KindLambdaKafka, KindLambdaDynamoDB, KindKq, KindKinesisScan, KindSQSLib, KindAsynq, KindNSQ:
		return true
	}
	return false
}

// decodeCall matches the names of calls that read the message rather than
// act on it (a JetStream message's Metadata parses its reply subject), or
// encode what the consumer made of it (Marshal: their failure is permanent
// for this message), and of calls
// that tidy up after the work (Close, Flush, Rollback, Release): their
// failure is not the work's.
var decodeCall = regexp.MustCompile(`(?i)marshal|decode|deserial|^NativeFrom|parse|valid|atoi|^Scan$|FromString|^(From|To)(JSON|Bytes|Proto|YAML|XML)$|^Read(All)?$|^Metadata$|^Close|^Flush$|^Rollback$|^Release$`)

// failedWork matches "the work failed" at st: `if err := work(); err !=
// nil {...}`, or `err := work()` (prev) followed by `if err != nil {...}`
// at st. The condition must be exactly `err != nil`, or `err != nil || ...`
// (another way to fail, which only widens it): a condition that
// classifies the error (errors.Is, a permanent-error check) is a decision,
// not a swallowed failure. It returns the if statement and the work call.
func failedWork(pass *analysis.Pass, c *Consumers, st, prev ast.Stmt) (*ast.IfStmt, *ast.CallExpr) {
	ifs, call := errBranch(pass.TypesInfo, st, prev)
	if ifs == nil || ackOf(pass.TypesInfo, call) != "" || c != nil && c.program != nil && c.program.kafkaAckSites[call.Lparen] {
		return nil, nil // a failed ack (directly, or through the code's wrapper) is no failed work
	}
	if c != nil && c.program != nil && c.program.receiveSites[call.Lparen] {
		return nil, nil // a fetch through the code's own function (it may decode too): no message in hand
	}
	if c != nil && c.neverFails(call) {
		return nil, nil // the branch never runs: the work's failures are not errors (its own finding says so)
	}
	if c != nil && c.bookkeepingAfterWork(call) {
		return nil, nil // a record about work that already succeeded: a redelivery would redo the work
	}
	if cf := callee(pass.TypesInfo, call); cf != nil {
		// db.QueryRow("UPDATE ... RETURNING v").Scan(&v): the write's
		// failure surfaces at the Scan; the write is the work. So is a
		// lookup's (db.QueryRow("SELECT ...").Scan(&v), or row.Scan
		// after `row := db.QueryRow(...)`): a failed read is checked by
		// its own rule (see checkErrAck).
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && cf.Name() == "Scan" {
			inner, _ := ast.Unparen(sel.X).(*ast.CallExpr)
			if inner == nil {
				inner = definingCall(pass.TypesInfo, pass.Files, sel.X)
			}
			if inner != nil && (dbWriteOf(pass.TypesInfo, inner) != "" || dbLookup(pass.TypesInfo, inner)) {
				return ifs, inner
			}
		}
		if decodeCall.MatchString(cf.Name()) && !remoteWork(c, cf) || receives(cf) || c.receiveWrapper(cf) || cleanUp(cf) || metricCall(cf) || dropStatement(pass.TypesInfo, call) {
			return nil, nil
		}
		if funcPath(cf) == "net/http" && strings.HasPrefix(cf.Name(), "NewRequest") {
			return nil, nil // builds a request (a malformed URL fails every time): no I/O, nothing transient
		}
	}
	if lit, ok := ast.Unparen(call.Fun).(*ast.FuncLit); ok && receivesIn(pass.TypesInfo, lit.Body) {
		return nil, nil // a receive in a literal called in place (a timeout's scope)
	}
	// The receiver's name says it too: v.validate.StructCtx(...).
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && decodeCall.MatchString(lastName(sel.X)) {
		return nil, nil
	}
	return ifs, call
}

// definingCall returns the call that declares the variable x names
// (`row := db.QueryRowContext(...)`, `var row = ...`), found in files;
// nil when x is not a variable declared from a call there.
func definingCall(info *types.Info, files []*ast.File, x ast.Expr) *ast.CallExpr {
	obj := identObj(info, x)
	if obj == nil || !obj.Pos().IsValid() {
		return nil
	}
	for _, f := range files {
		if obj.Pos() < f.FileStart || obj.Pos() > f.FileEnd {
			continue
		}
		path, _ := astutil.PathEnclosingInterval(f, obj.Pos(), obj.Pos())
		for _, n := range path {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok && info.Defs[id] == obj && len(n.Lhs) == len(n.Rhs) {
						c, _ := ast.Unparen(n.Rhs[i]).(*ast.CallExpr)
						return c
					}
				}
				return nil
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if info.Defs[id] == obj && i < len(n.Values) && len(n.Names) == len(n.Values) {
						c, _ := ast.Unparen(n.Values[i]).(*ast.CallExpr)
						return c
					}
				}
				return nil
			}
		}
	}
	return nil
}

// neverFails reports whether call is a static call of the module's own
// function that returns a nil error on every path (see nilErrorOnly): in
// this package, or through the whole-program walk in another.
func (c *Consumers) neverFails(call *ast.CallExpr) bool {
	if c.program != nil && c.program.nilErrSites[call.Lparen] {
		return true
	}
	fn := callee(c.pass.TypesInfo, call)
	if fn == nil || dynamicCall(c.pass.TypesInfo, call) {
		return false
	}
	d := c.decls[fn]
	return d != nil && nilErrorOnly(c.pass.TypesInfo, d)
}

// nilErrorOnly reports whether the function declaration n has an error as
// its last result and every return statement of its own (not of a
// function literal inside it) gives the literal nil there: a caller's
// failure branch on that error never runs (wave 28's reading: a branch
// that never runs is no finding; wave 33, YunOJ). A named error result
// that nothing in the function assigns or takes the address of (a
// deferred literal included) is nil as well, returned bare or by name
// (`func pay(...) (err error) { go s.work(p); return err }`: field trial,
// wave 47, distr-transactions); any other bare return of named results is
// not read as nil.
func nilErrorOnly(info *types.Info, n ast.Node) bool {
	d, ok := n.(*ast.FuncDecl)
	if !ok || d.Body == nil || d.Type.Results == nil || len(d.Type.Results.List) == 0 {
		return false
	}
	last := d.Type.Results.List[len(d.Type.Results.List)-1]
	if !isErrorType(info.TypeOf(last.Type)) {
		return false
	}
	var named types.Object // the error result, when named and never set
	if len(last.Names) > 0 {
		named = info.Defs[last.Names[len(last.Names)-1]]
		if named != nil && writes(info, d.Body, named) {
			named = nil
		}
	}
	returns, nilOnly := 0, true
	ast.Inspect(d.Body, func(m ast.Node) bool {
		switch m := m.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			returns++
			if len(m.Results) == 0 {
				nilOnly = named != nil
				return false
			}
			id, ok := ast.Unparen(m.Results[len(m.Results)-1]).(*ast.Ident)
			if !ok || info.Uses[id] != types.Universe.Lookup("nil") && (named == nil || info.Uses[id] != named) {
				nilOnly = false
			}
		}
		return nilOnly
	})
	return nilOnly && returns > 0
}

// metricPkg matches the import paths of metrics libraries and of the code's
// own metrics packages (Prometheus, OpenTelemetry's metric API, statsd,
// go-metrics, an instrumentation/metrics package).
var metricPkg = regexp.MustCompile(`(^|/)(metrics?|monitoring|telemetry|instrumentation|statsd|prometheus|otel/metric)(/|$)`)

// metricCall reports whether fn records a metric: a call into a metrics
// package, or a method of a type named for metrics (MetricsCollector,
// StatsClient). Its failure loses a sample, not the message (field trial,
// wave 29: timber's latency histogram and request counter, whose logged
// failures were reported as lost messages).
func metricCall(fn *types.Func) bool {
	if metricPkg.MatchString(funcPath(fn)) {
		return true
	}
	r := strings.ToLower(recvName(fn))
	return strings.Contains(r, "metric") || strings.HasPrefix(r, "stats")
}

// receives reports whether fn fetches messages (a receive, poll or fetch
// of a supported client, franz-go's Fetches.Err): its failure leaves
// nothing to ack.
func receives(fn *types.Func) bool {
	if sqsOp(fn) == "ReceiveMessage" || kinesisGetRecords(fn) {
		return true
	}
	name := fn.Name()
	if funcPath(fn) == pathKgo && (recvName(fn) == "Fetches" || recvName(fn) == "FetchPartition" || recvName(fn) == "FetchTopic") {
		return true // a fetch's errors (fetches.Err())
	}
	if isNATS(funcPath(fn)) && (name == "NextMsg" || name == "NextMsgWithContext" || name == "Next") {
		return true // a NATS subscription's or JetStream consumer's next message (field trial, wave 44: nats-service)
	}
	return strings.HasPrefix(name, "Poll") || strings.HasPrefix(name, "Fetch") || name == "ReadMessage" || name == "Receive"
}

// receiveWrapper reports whether fn is a function of this package that
// wraps a receive (see receives) and hands its message back: a result
// besides the error, and a receive call in its body (codecourt's
// Consume around confluent's ReadMessage, field trial wave 20). Its
// failure leaves no message in hand to pass over.
//
// A function of another package is one when it returns a supported
// client's message (kafka-go's or confluent's Message, Sarama's
// ConsumerMessage, franz-go's Record or Fetches, an SQS Message, a
// slice of them) besides its error: a wrapper like
// kafka.ReadPlayerPayload() (kafka.Message, error) (field trial, wave 21).
func (c *Consumers) receiveWrapper(fn *types.Func) bool {
	if c == nil {
		return false
	}
	fd := c.decls[fn.Origin()]
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Results().Len() < 2 {
		return false
	}
	if fd == nil || fd.Body == nil {
		for i := range sig.Results().Len() - 1 {
			if clientMessage(sig.Results().At(i).Type()) {
				return true
			}
		}
		return false
	}
	found := false
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || found {
			return false
		}
		if call, ok := n.(*ast.CallExpr); ok {
			if in := callee(c.pass.TypesInfo, call); in != nil && in != fn && receives(in) {
				found = true
			}
		}
		return !found
	})
	return found
}

// clientMessage reports whether t (through pointers and slices, or a
// struct holding one as its messages: an SQS ReceiveMessageOutput) is a
// message type of a supported client.
func clientMessage(t types.Type) bool {
	for {
		switch u := types.Unalias(t).(type) {
		case *types.Pointer:
			t = u.Elem()
			continue
		case *types.Slice:
			t = u.Elem()
			continue
		}
		break
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return false
	}
	path, name := pkgPath(n.Obj().Pkg()), n.Obj().Name()
	switch {
	case path == pathKafkaGo && name == "Message", isConfluent(path) && name == "Message",
		isSaramaPath(path) && name == "ConsumerMessage", path == pathKgo && (name == "Record" || name == "Fetches"),
		(path == pathSQS+"/types" || path == pathSQSv1) && name == "Message", path == pathSQS && name == "ReceiveMessageOutput":
		return true
	}
	return false
}

// narrowedFailure reports an ack after `if err != nil && cond {...}` (no
// else) when err is a work call's failure and cond does not read err (a
// configuration flag: `messageErr != nil && d.hasDeadLetterQueue`): when
// cond is false the failure falls through to the ack.
func narrowedFailure(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, st, prev ast.Stmt, rest []ast.Stmt) {
	info := pass.TypesInfo
	ifs, ok := st.(*ast.IfStmt)
	if !ok || ifs.Else != nil {
		return
	}
	bin, ok := ast.Unparen(ifs.Cond).(*ast.BinaryExpr)
	if !ok || bin.Op != token.LAND {
		return
	}
	// The leftmost operand is err != nil; the rest must not read err.
	var ops []ast.Expr
	for bin.Op == token.LAND {
		ops = append(ops, bin.Y)
		x, ok := ast.Unparen(bin.X).(*ast.BinaryExpr)
		if !ok {
			return
		}
		bin = x
	}
	if bin.Op != token.NEQ {
		return
	}
	errID, ok := ast.Unparen(bin.X).(*ast.Ident)
	if nilID, isNil := ast.Unparen(bin.Y).(*ast.Ident); !ok || !isNil || nilID.Name != "nil" {
		return
	}
	errObj := info.Uses[errID]
	if errObj == nil || !isError(errObj.Type()) {
		return
	}
	for _, op := range ops {
		reads := false
		ast.Inspect(op, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && info.Uses[id] == errObj {
				reads = true
			}
			_, call := n.(*ast.CallExpr)
			return !reads && !call // a call may classify the error: not read as a flag
		})
		if _, call := ast.Unparen(op).(*ast.CallExpr); reads || call || excludesDuplicate(info, op, errObj) {
			return
		}
	}
	assign := prev
	if ifs.Init != nil {
		assign = ifs.Init
	}
	work := errAssigned(info, assign, errObj)
	if work == nil || !(isWork(pass, c, work) || dynamicCall(info, work)) {
		return
	}
	if ack, call, inner := c.firstAck(rest); ack != "" {
		cond := make([]string, len(ops))
		for i, op := range slices.Backward(ops) {
			cond[len(ops)-1-i] = types.ExprString(op)
		}
		r.report(call, SeverityOf(root.Name, types.ExprString(work.Fun)), fmt.Sprintf(
			"acks with %s even when %s failed (line %d) unless %s: the failure branch (line %d) is taken only then, otherwise the error falls through to the ack and a transient failure loses the message; %s",
			ack, types.ExprString(work.Fun), pass.Fset.Position(work.Pos()).Line, strings.Join(cond, " && "), pass.Fset.Position(ifs.Pos()).Line, leaveUnacked(inner, info)))
	}
}

// rollbackReturned returns the return statement ending body when the
// error it returns is a rollback's result (return tx.Rollback(), return
// tx.Rollback().Error as GORM writes it), or nil.
func rollbackReturned(body *ast.BlockStmt) *ast.ReturnStmt {
	if len(body.List) == 0 {
		return nil
	}
	ret, ok := body.List[len(body.List)-1].(*ast.ReturnStmt)
	if !ok || len(ret.Results) == 0 {
		return nil
	}
	e := ast.Unparen(ret.Results[len(ret.Results)-1])
	if sel, ok := e.(*ast.SelectorExpr); ok && sel.Sel.Name == "Error" {
		e = ast.Unparen(sel.X)
	}
	if call, ok := e.(*ast.CallExpr); ok && lastName(call.Fun) == "Rollback" {
		return ret
	}
	return nil
}

// remoteWork reports whether fn, named like a decode or a validation,
// makes an effect or a write below it (ValidateUser posting to a user
// service): its failure is the work's, not a malformed message's.
func remoteWork(c *Consumers, fn *types.Func) bool {
	if c == nil {
		return false
	}
	s := c.Summary(fn)
	return s != nil && (s.Effect != "" || s.Write != "" || s.Remote) || c.works(fn)
}

// cleanUp reports whether fn tidies up after the work rather than doing
// it: a Close, Rollback, Release, Shutdown or Stop, or the removal of a
// file or directory (os.Remove, os.RemoveAll). Its failure leaves
// something behind, not a message undone.
func cleanUp(fn *types.Func) bool {
	switch fn.Name() {
	case "Close", "Rollback", "Release", "Shutdown", "Stop":
		return true
	}
	return funcPath(fn) == "os" && (fn.Name() == "Remove" || fn.Name() == "RemoveAll")
}

// dropStatement reports whether call runs SQL whose text is a DROP (a
// staging or migration table removed after the work): housekeeping, whose
// failure is not the message's work (field trial, wave 41: tipoca-stream's
// staging tables).
func dropStatement(info *types.Info, call *ast.CallExpr) bool {
	for _, q := range constStrings(info, call) {
		if f := strings.Fields(q); len(f) > 1 && strings.EqualFold(f[0], "DROP") {
			return true
		}
	}
	return false
}

// firstReceive returns the position of the first receive call (see
// receives) in body, or token.NoPos.
func firstReceive(info *types.Info, body *ast.BlockStmt) token.Pos {
	at := token.NoPos
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || at.IsValid() {
			return false
		}
		if call, ok := n.(*ast.CallExpr); ok {
			if cf := callee(info, call); cf != nil && receives(cf) {
				at = call.Pos()
			}
		}
		return true
	})
	return at
}

// receivesIn reports whether body calls a receive (see receives).
func receivesIn(info *types.Info, body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if cf := callee(info, call); cf != nil && receives(cf) {
				found = true
			}
		}
		return !found
	})
	return found
}

// lastName returns the last identifier of a selector chain (validate in
// v.validate), or the identifier itself.
func lastName(e ast.Expr) string {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// checkErrAck reports the ack a failed work call leads to: inside the error
// branch (it acks, or for an implicit-ack root returns without an error),
// or after a branch that falls through (the rest of the block acks).
func checkErrAck(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, ifs *ast.IfStmt, work *ast.CallExpr, rest []ast.Stmt, implicit bool, acker string, always bool) {
	info := pass.TypesInfo
	workName := types.ExprString(work.Fun)
	line := pass.Fset.Position(work.Pos()).Line
	names := []string{root.Name, workName}
	if sendsElsewhere(pass.TypesInfo, ifs.Body) || c.looksUp(work) && notFoundIn(ifs) {
		return // dead-lettered; or a lookup's branch that tells a missing row from a failed read
	}
	if ret := rollbackReturned(ifs.Body); ret != nil && (isWork(pass, c, work) || dynamicCall(info, work)) {
		r.report(ret, SeverityOf(names...), fmt.Sprintf(
			"when %s fails (line %d) the branch returns the result of the rollback instead of the failure: nil when the rollback succeeds, so the caller takes the failed work for done and the message is acked; roll back, then return %s's error (or join both)",
			workName, line, workName))
		return
	}
	if strings.HasPrefix(acker, autoCommitPrefix) {
		// Offsets committed in the background: returning the error helps
		// only where the caller stops on it; a failure dropped here is
		// committed past.
		if always && (isWork(pass, c, work) || dynamicCall(info, work)) && !returnsErrorValue(ifs.Body) && !stopsLoop(ifs.Body) && !(inNode(root.Node, ifs) && hasReturn(ifs.Body)) {
			r.report(ifs, SeverityOf(names...), fmt.Sprintf(
				"when %s fails (line %d) the message is dropped (the failure is only logged), and %s commits its offset all the same: a transient failure (a timeout, a busy database) loses it, not only a crash; retry the work until it succeeds, or turn the auto-commit off and commit after the work, stopping (or seeking back) on a failure",
				workName, line, acker))
		}
		return
	}
	for _, st := range ifs.Body.List {
		if call := topCall(st); call != nil {
			ack, inner := ackOf(info, call), call
			if a := c.chanAck(call); a != "" {
				r.report(call, SeverityOf(names...), fmt.Sprintf(
					"acks with %s when %s fails (line %d): a transient failure (a timeout, a busy database) loses the message instead of redelivering it; %s",
					a, workName, line, keepChanOpen))
				return
			}
			if ack == "" {
				// The code's own wrapper of the ack (consumer.Commit()
				// around the client's Commit), unless it dead-letters too.
				if a, in := c.helperAck(call); a != "" && !c.helperSendsElsewhere(call) {
					ack, inner = a, in
				}
			}
			if ack != "" {
				r.report(call, SeverityOf(names...), fmt.Sprintf(
					"acks with %s when %s fails (line %d): a transient failure (a timeout, a busy database) loses the message instead of redelivering it; %s, and dead-letter only errors known to be permanent",
					ack, workName, line, leaveUnacked(inner, info)))
				return
			}
		}
	}
	if implicit && (isWork(pass, c, work) || dynamicCall(pass.TypesInfo, work)) {
		if ret := returnsNoError(info, ifs.Body); ret != nil {
			r.report(ret, SeverityOf(names...), fmt.Sprintf(
				"returns without an error when %s fails (line %d): the %s acks the message, so a transient failure (a timeout, a busy database) loses it; return the error so it is redelivered, and drop only errors known to be permanent",
				workName, line, root.Kind))
			return
		}
	}
	// A failed lookup answered as if the row were absent: a timeout or a
	// busy database acks the message (field trial, wave 37: cyphera H5).
	if (implicit && root.Kind != KindKq || acker != "") && c.looksUp(work) && !isWork(pass, c, work) && !notFoundIn(ifs) {
		if ret := returnsNoError(info, ifs.Body); ret != nil {
			who := acker
			if who == "" {
				who = "the " + root.Kind
			}
			r.report(ret, SeverityOf(names...), fmt.Sprintf(
				"returns without an error when the lookup %s fails (line %d), whatever the failure: a timeout or a busy database is answered like a missing row, and %s acks the message, so it is lost; return the error, and skip the message only when the lookup found no row (errors.Is(err, sql.ErrNoRows) or your store's not-found error)",
				workName, line, who))
			return
		}
	}
	if !terminates(ifs.Body) && naksAfter(info, rest) {
		return // the failure falls through to a Nak: the message comes back
	}
	if settlesIn(info, ifs.Body) {
		// The failure branch settles the message itself (a Nack that
		// requeues or dead-letters, a Reject, a NATS Term): nothing acks
		// it after this function returns (field trial, wave 48: go-sac's
		// priority scheduler, `if isBP(err) { m.Nack(false, true) } else {
		// m.Nack(false, false) }; return`).
		return
	}
	// Below the entry point the whole-program walk knows what a call
	// reaches: a call through an interface is work only if a write or an
	// effect is below it (a failed lookup is not a lost message).
	knownWork := isWork(pass, c, work) || c.program == nil && dynamicCall(info, work)
	if always && knownWork && givesUp(ifs.Body) && !returnsErrorValue(ifs.Body) && kafkaAckIn(info, ifs.Body) == "" {
		returns := "after this function returns, whatever it returns"
		if voidFunc(pass, ifs) {
			returns = "after this function returns (it has no result to report the failure with)"
		}
		r.report(ifs, SeverityOf(names...), fmt.Sprintf(
			"gives up when %s fails (line %d), but %s acks the message %s: a transient failure (a timeout, a busy database) loses the message; let the failure reach the ack (return the error and skip the ack on it) so the message is redelivered",
			workName, line, acker, returns))
		return
	}
	if acker != "" && knownWork {
		if ret := returnsNoError(info, ifs.Body); ret != nil {
			r.report(ret, SeverityOf(names...), fmt.Sprintf(
				"returns without an error when %s fails (line %d), and %s acks the message when this returns nil: a transient failure (a timeout, a busy database) loses it; return the error so it is redelivered, and drop only errors known to be permanent",
				workName, line, acker))
			return
		}
	}
	// A branch that falls back to another attempt and returns that one's
	// error (spot, then on demand) handles the failure.
	if (implicit && !isLambda(root.Kind) && root.Kind != KindKq || acker != "") && !terminates(ifs.Body) && knownWork && !returnsErrorValue(ifs.Body) {
		who := acker
		if who == "" {
			who = "the " + root.Kind
		}
		errObj := info.Uses[ast.Unparen(ifs.Cond.(*ast.BinaryExpr).X).(*ast.Ident)]
		if fallsBack(info, ifs.Body, errObj) && readsObj(info, errObj, stmtNodes(rest)...) {
			return // err = fallback(): the later check of err handles both (field trial, wave 47: fyredocs' LibreOffice fallback)
		}
		if at := overwritten(info, errObj, rest); at != nil {
			r.report(ifs, SeverityOf(names...), fmt.Sprintf(
				"the error of %s (line %d) is only logged, then overwritten at line %d before the function returns it: %s acks the message on the later result, so this failure is lost; return it (or join the errors) so the message is redelivered",
				workName, line, pass.Fset.Position(at.Pos()).Line, who))
			return
		}
		if ret := nextReturn(rest); ret != nil && returnsNoError(info, &ast.BlockStmt{List: []ast.Stmt{ret}}) != nil && !returnedLater(info, errObj, rest, ret) {
			r.report(ifs, SeverityOf(names...), fmt.Sprintf(
				"when %s fails (line %d) the error is only recorded and the function goes on to return no error (line %d): %s acks the message, so a transient failure (a timeout, a busy database) or a redelivery's duplicate key is answered as done or as a business failure; return the error so it is redelivered",
				workName, line, pass.Fset.Position(ret.Pos()).Line, who))
			return
		}
	}
	if implicit && root.Kind == KindKq && (isWork(pass, c, work) || dynamicCall(info, work)) && returnsError(info, ifs.Body) {
		r.report(ifs, SeverityOf(names...), fmt.Sprintf(
			"returns the error when %s fails (line %d), but go-queue's kq commits the offset whatever Consume returns (KqConf.ForceCommit, on by default; with it off, the next message's commit passes over this one): the message is lost; retry the work inside Consume until it succeeds (the partition waits), and dead-letter explicitly only errors known to be permanent",
			workName, line))
		return
	}
	if implicit && isLambda(root.Kind) && (isWork(pass, c, work) || dynamicCall(info, work) || c.looksUp(work)) && !returnsError(info, ifs.Body) {
		r.report(ifs, SeverityOf(names...), fmt.Sprintf(
			"a record whose %s fails (line %d) is only logged: the handler succeeds for it (it is not in BatchItemFailures), so Lambda deletes it and a transient failure loses it; add it to BatchItemFailures (or return the error) so it is redelivered",
			workName, line))
		return
	}
	if terminates(ifs.Body) {
		return
	}
	if ack, call, inner := c.firstAck(rest); ack != "" {
		r.report(call, SeverityOf(names...), fmt.Sprintf(
			"acks with %s even when %s failed (line %d): the error is only logged, so a transient failure (a timeout, a busy database) loses the message instead of redelivering it; %s, and dead-letter only errors known to be permanent",
			ack, workName, line, leaveUnacked(inner, info)))
	}
}

// firstAck returns the first statement of stmts whose call acks, directly
// or through a helper of this package (see helperAck), or that is an if
// whose only statement acks and whose condition is a flag (see flagCond): the ack's
// name, the statement's call and the ack call itself; "" when none does.
// A close of a hand-off's commit channel (see chanAck) acks with no ack
// call of its own: inner is nil.
func (c *Consumers) firstAck(stmts []ast.Stmt) (ack string, call, inner *ast.CallExpr) {
	for _, st := range stmts {
		call := topCall(st)
		if call == nil {
			// An ack alone in an if on a flag (`if hasUncommitted {
			// r.CommitMessages(ctx, last) }`): when
			// it holds, the failure is acked (field trial, wave 26:
			// Sentry H3).
			if a := ackOnlyIf(c.pass.TypesInfo, st); a != nil && flagCond(c.pass.TypesInfo, st.(*ast.IfStmt).Cond) {
				return ackOf(c.pass.TypesInfo, a), a, a
			}
			continue
		}
		if ack := ackOf(c.pass.TypesInfo, call); ack != "" {
			return ack, call, call
		}
		if ack := c.chanAck(call); ack != "" {
			return ack, call, nil
		}
		if ack, inner := c.helperAck(call); ack != "" {
			return ack, call, inner
		}
		if ack := c.wrappedAck(call); ack != "" {
			return ack, call, call
		}
	}
	return "", nil, nil
}

// ackName matches the names the code gives its own wrapper of an ack:
// DeleteMessage, Ack, Commit, MarkDone, Finish, Complete.
var ackName = regexp.MustCompile(`^(Delete|Remove|Ack|Commit|Mark|Done|Finish|Complete|Settle)`)

// wrappedAck names, in the whole-program mode, the ack that a call of the
// code's own function in another package or through an interface makes
// below it (`w.queue.DeleteMessage(ctx, handle)` around SQS's
// DeleteMessage): the call graph reaches an ack below it and its name says
// it acks. "" otherwise. Field trial, wave 43: Messanger's processJob,
// whose failures are only logged before the queue package's delete.
func (c *Consumers) wrappedAck(call *ast.CallExpr) string {
	if c.program == nil || !c.program.ackSites[call.Lparen] {
		return ""
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || !ackName.MatchString(sel.Sel.Name) {
		return ""
	}
	return types.ExprString(call.Fun) + " (which acks the message)"
}

// voidFunc reports whether the function declaration or literal around n
// (in the pass's files) has no results.
func voidFunc(pass *analysis.Pass, n ast.Node) bool {
	for _, f := range pass.Files {
		if f.Pos() > n.Pos() || n.End() > f.End() {
			continue
		}
		path, _ := astutil.PathEnclosingInterval(f, n.Pos(), n.End())
		for _, p := range path {
			if ft := funcType(p); ft != nil {
				return ft.Results == nil || len(ft.Results.List) == 0
			}
		}
	}
	return false
}

// flagCond reports whether cond is a boolean flag, a variable or field
// (`pending`, `c.hasUncommitted`, `!done`): a condition that says whether
// there is something to ack, not which messages failed (`len(del) > 0`
// over the ones that did not, `err == nil`).
func flagCond(info *types.Info, cond ast.Expr) bool {
	cond = ast.Unparen(cond)
	if u, ok := cond.(*ast.UnaryExpr); ok && u.Op == token.NOT {
		cond = ast.Unparen(u.X)
	}
	switch cond.(type) {
	case *ast.Ident, *ast.SelectorExpr:
	default:
		return false
	}
	b, ok := types.Unalias(info.TypeOf(cond)).Underlying().(*types.Basic)
	return ok && b.Kind() == types.Bool
}

// droppedError reports work whose error is dropped unread (`db.Exec(q)`, a
// GORM write or a go-redis state write as a statement, or `_, _ =
// db.Exec(q)`) when an ack follows in the same
// block: a failed write or call is acked as done. In a function whose nil
// result acks (implicit: the entry point of a framework that acks on a
// nil return; acker: a function below a loop that does), the ack is the
// `return nil` that follows, or, with always, the function's return
// whatever it returns (field trial, wave 25: stablesando H4, a dropped
// `UpdatePayment` then `return nil` below a Lambda handler).
func droppedError(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, st ast.Stmt, rest []ast.Stmt, implicit bool, acker string, always bool) {
	info := pass.TypesInfo
	var call *ast.CallExpr
	switch st := st.(type) {
	case *ast.ExprStmt:
		call, _ = ast.Unparen(st.X).(*ast.CallExpr)
	case *ast.AssignStmt:
		allBlank := !slices.ContainsFunc(st.Lhs, func(e ast.Expr) bool { return !isBlank(e) })
		if len(st.Rhs) != 1 || !allBlank {
			return
		}
		call, _ = ast.Unparen(st.Rhs[0]).(*ast.CallExpr)
	}
	if call == nil || ackOf(info, call) != "" {
		return
	}
	sig, ok := types.Unalias(info.TypeOf(call.Fun)).(*types.Signature)
	if !ok || sig.Results().Len() == 0 || !isError(sig.Results().At(sig.Results().Len()-1).Type()) && !gormWriteCall(info, call) && !redisStateWrite(info, call) || !isWork(pass, c, call) || c.bookkeepingAfterWork(call) {
		return
	}
	workName := types.ExprString(call.Fun)
	if ack, at, _ := c.firstAck(rest); ack != "" {
		r.report(call, SeverityOf(root.Name, workName), fmt.Sprintf(
			"the error of %s is dropped unread, and %s acks the message (line %d): a failure (a timeout, a busy database) is acked as done and the message lost; check the error and leave the message unacked when it fails",
			workName, ack, pass.Fset.Position(at.Pos()).Line))
		return
	}
	who := acker
	if implicit {
		who = "the " + root.Kind
	}
	if strings.HasPrefix(acker, autoCommitPrefix) {
		// Offsets committed in the background, whatever the work did (a
		// worker the poll loop hands its messages to, too): the finding
		// joins the consumer's autocommit finding.
		if always {
			r.report(call, SeverityOf(root.Name, workName), fmt.Sprintf(
				"the error of %s is dropped unread, and %s commits its offset all the same: a transient failure (a timeout, a busy database) loses the message, not only a crash; check the error and retry the work until it succeeds, or turn the auto-commit off and commit after the work, stopping (or seeking back) on a failure",
				workName, acker))
		}
		return
	}
	if who == "" {
		return
	}
	ret := nextReturn(rest)
	switch {
	case ret != nil && returnsNoError(info, &ast.BlockStmt{List: []ast.Stmt{ret}}) != nil:
		r.report(call, SeverityOf(root.Name, workName), fmt.Sprintf(
			"the error of %s is dropped unread, and the function returns no error (line %d): %s acks the message on that nil, so a failure (a timeout, a busy database) is acked as done and the message lost; check the error and return it",
			workName, pass.Fset.Position(ret.Pos()).Line, who))
	case ret == nil && always && !implicit && !returnsErrorValue(&ast.BlockStmt{List: rest}):
		r.report(call, SeverityOf(root.Name, workName), fmt.Sprintf(
			"the error of %s is dropped unread, and %s acks the message after this function returns, whatever it returns: a failure (a timeout, a busy database) is acked as done and the message lost; check the error and let it reach the ack (return it, and skip the ack on it)",
			workName, acker))
	}
}

// gormWriteCall reports whether call is a GORM write (`db.Save(&job)`,
// Create, Update, Delete, ...), whose error is its result's Error field: a
// statement of it drops the error as `db.Exec(q)` does (field trial, wave
// 50: video_transcoding H6, a status Save before d.Ack(false)).
func gormWriteCall(info *types.Info, call *ast.CallExpr) bool {
	fn := callee(info, call)
	return fn != nil && isGORM(fn) && gormWrites[fn.Name()]
}

// helperAck names the ack a call of a function of this package makes in
// its own body (`p.markMessageDone(msg)` around `msg.Done()`): "" when it
// makes none. It returns the ack call inside too.
func (c *Consumers) helperAck(call *ast.CallExpr) (string, *ast.CallExpr) {
	fn := callee(c.pass.TypesInfo, call)
	if fn == nil {
		return "", nil
	}
	fd := c.decls[fn.Origin()]
	if fd == nil || fd.Body == nil {
		return "", nil
	}
	var ack string
	var inner *ast.CallExpr
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || ack != "" {
			return false
		}
		if in, ok := n.(*ast.CallExpr); ok {
			if a := ackOf(c.pass.TypesInfo, in); a != "" {
				ack, inner = types.ExprString(call.Fun)+" (which acks with "+a+")", in
			}
		}
		return ack == ""
	})
	if ack != "" && redeliversIn(c.pass.TypesInfo, fd.Body) {
		// A failure handler that asks for a redelivery on one path (a
		// retryable failure's Nak) and acks on another decides by its
		// arguments (field trial, wave 47: fyredocs' handleFailure).
		return "", nil
	}
	return ack, inner
}

// redeliversIn reports whether body, outside function literals, asks for
// a redelivery (see redelivers).
func redeliversIn(info *types.Info, body *ast.BlockStmt) bool {
	return callIn(body, func(call *ast.CallExpr) bool { return redelivers(info, call) })
}

// callIn reports whether n, outside function literals, makes a call that
// accepts takes.
func callIn(n ast.Node, accepts func(*ast.CallExpr) bool) bool {
	found := false
	ast.Inspect(n, func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok || found {
			return false
		}
		if call, ok := m.(*ast.CallExpr); ok && accepts(call) {
			found = true
		}
		return !found
	})
	return found
}

// helperSendsElsewhere reports whether the body of the function of this
// package that call calls sends the message on (see sendsElsewhere): a
// helper that dead-letters and then acks is a dead-letter path.
func (c *Consumers) helperSendsElsewhere(call *ast.CallExpr) bool {
	fn := callee(c.pass.TypesInfo, call)
	if fn == nil {
		return false
	}
	fd := c.decls[fn.Origin()]
	return fd != nil && fd.Body != nil && sendsElsewhere(c.pass.TypesInfo, fd.Body)
}

// inNode reports whether n is inside the syntax of fn.
func inNode(fn, n ast.Node) bool { return fn.Pos() <= n.Pos() && n.End() <= fn.End() }

// hasReturn reports whether body has a return statement outside function
// literals.
func hasReturn(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			found = true
		}
		return !found
	})
	return found
}

// errAssignedBefore returns, for `if err != nil` at list[i] (no init), the
// nearest statement before it in list that assigns err (`v, err := f()`),
// when none of the statements in between writes err (inside a branch or a
// loop too); nil otherwise.
func errAssignedBefore(info *types.Info, list []ast.Stmt, i int) ast.Stmt {
	ifs, ok := list[i].(*ast.IfStmt)
	if !ok || ifs.Init != nil || i < 2 {
		return nil
	}
	bin, ok := ast.Unparen(ifs.Cond).(*ast.BinaryExpr)
	if !ok || bin.Op != token.NEQ {
		return nil
	}
	id, ok := ast.Unparen(bin.X).(*ast.Ident)
	if !ok {
		return nil
	}
	errObj := info.Uses[id]
	if errObj == nil || !isError(errObj.Type()) {
		return nil
	}
	for j := i - 1; j >= 0; j-- {
		if errAssigned(info, list[j], errObj) != nil {
			return list[j]
		}
		if writes(info, list[j], errObj) {
			return nil
		}
	}
	return nil
}

// writes reports whether st assigns obj anywhere, in a function literal
// too (a closure that sets a captured err: `m.Time(func() { r, err =
// create(...) })`).
func writes(info *types.Info, st ast.Stmt, obj types.Object) bool {
	found := false
	ast.Inspect(st, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if id, ok := ast.Unparen(l).(*ast.Ident); ok && info.ObjectOf(id) == obj {
					found = true
				}
			}
		case *ast.UnaryExpr:
			if id, ok := ast.Unparen(n.X).(*ast.Ident); ok && n.Op == token.AND && info.ObjectOf(id) == obj {
				found = true // &err handed to a function
			}
		}
		return !found
	})
	return found
}

// stopsLoop reports whether body leaves a receive loop for good: a break
// or goto, a return of an error, a panic, os.Exit or a Fatal log.
func stopsLoop(body *ast.BlockStmt) bool {
	stops := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.BranchStmt:
			stops = stops || n.Tok == token.BREAK || n.Tok == token.GOTO
		case *ast.CallExpr:
			stops = stops || endsProcess(n)
		}
		return !stops
	})
	return stops
}

func isLambda(kind string) bool {
	return kind == KindLambda || kind == KindLambdaKinesis || kind == KindLambdaKafka || kind == KindLambdaDynamoDB
}

// returnsError reports whether body has a return statement whose last
// result is not the literal nil.
func returnsError(info *types.Info, body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok {
			return false
		}
		if ret, ok := m.(*ast.ReturnStmt); ok {
			if len(ret.Results) == 0 {
				found = true // a named result may carry the error
			} else if id, ok := ast.Unparen(ret.Results[len(ret.Results)-1]).(*ast.Ident); !ok || id.Name != "nil" {
				found = true
			}
		}
		return !found
	})
	return found
}

// dynamicCall reports whether call goes through an interface method or a
// function value: a service or repository the handler was given, whose
// failure is the work's failure (what it reaches is the whole-program
// mode's map; the call itself is the handler's one step of work).
func dynamicCall(info *types.Info, call *ast.CallExpr) bool {
	fn := callee(info, call)
	if fn == nil {
		tv, ok := info.Types[call.Fun]
		return ok && !tv.IsType() && !tv.IsBuiltin()
	}
	sig, ok := fn.Type().(*types.Signature)
	return ok && sig.Recv() != nil && types.IsInterface(sig.Recv().Type())
}

// isWork reports whether call is a database write or an effect, directly
// or through the functions it calls.
func isWork(pass *analysis.Pass, c *Consumers, call *ast.CallExpr) bool {
	w, _ := firstWork(pass, c, []ast.Stmt{&ast.ExprStmt{X: call}})
	return w != "" || keyedWriteOf(pass.TypesInfo, call) || c.works(callee(pass.TypesInfo, call)) || c.program != nil && c.program.workSites[call.Lparen]
}

// returnsNoError returns the return statement that ends body when it
// returns no error (return, return nil, return x, nil), or nil.
func returnsNoError(info *types.Info, body *ast.BlockStmt) *ast.ReturnStmt {
	if len(body.List) == 0 {
		return nil
	}
	ret, ok := body.List[len(body.List)-1].(*ast.ReturnStmt)
	if !ok {
		return nil
	}
	if len(ret.Results) == 0 {
		return nil // a named result may carry the error
	}
	last := ret.Results[len(ret.Results)-1]
	if id, ok := ast.Unparen(last).(*ast.Ident); ok && id.Name == "nil" {
		t := info.TypeOf(last)
		if t == nil || types.Identical(t, types.Typ[types.UntypedNil]) {
			return ret
		}
	}
	return nil
}

// terminates reports whether body leaves the enclosing block: a return,
// break, continue or goto, or a call to panic, os.Exit or a Fatal logger.
func terminates(body *ast.BlockStmt) bool {
	for _, st := range body.List {
		switch st := st.(type) {
		case *ast.ReturnStmt, *ast.BranchStmt:
			return true
		case *ast.ExprStmt:
			if call, ok := ast.Unparen(st.X).(*ast.CallExpr); ok {
				name := types.ExprString(call.Fun)
				if name == "panic" || name == "os.Exit" || strings.Contains(name, "Fatal") || strings.Contains(name, "Panic") {
					return true
				}
			}
		}
	}
	return false
}

// deadLetterName matches calls and arguments that send a failed message
// elsewhere on purpose.
var deadLetterName = regexp.MustCompile(`(?i)dlq|dead.?letter|retry|redrive|parking|quarantine|poison|failure`)

// sendsElsewhere reports whether an error branch sends the message on
// (a publish, an SQS send, a call or argument naming a dead-letter or retry
// destination, or an append to a failures list) before it acks: that is a
// dead-letter path, not a lost message.
func sendsElsewhere(info *types.Info, body *ast.BlockStmt) bool {
	found := false
	var visit func(m ast.Node) bool
	visit = func(m ast.Node) bool {
		if ifs, ok := m.(*ast.IfStmt); ok && ifs.Else == nil && terminates(ifs.Body) {
			// A send only in one case of the failure (`if errors.Is(err,
			// ErrBooked) { return publish(...) }`) leaves the others
			// unsent: its body does not count (field trial, wave 24:
			// go-event-driven H7).
			for _, n := range []ast.Node{ifs.Init, ifs.Cond} {
				if n != nil && !found {
					ast.Inspect(n, visit)
				}
			}
			return false
		}
		call, ok := m.(*ast.CallExpr)
		if !ok || found {
			return !found
		}
		name := types.ExprString(call.Fun)
		if counterCall(call) {
			return false // failureCount.Inc(): counting the failure is not sending it anywhere
		}
		if deadLetterName.MatchString(name) || name == "append" {
			found = true
			return false
		}
		for _, s := range constStrings(info, call) {
			if deadLetterName.MatchString(s) && !logCall(info, call) {
				found = true // a topic or queue named for failures
				return false
			}
		}
		if d := effectOf(info, call); strings.Contains(d, "publish") {
			found = true
		}
		if cf := callee(info, call); cf != nil && (sqsOp(cf) == "SendMessage" || strings.HasPrefix(strings.ToLower(cf.Name()), "publish") || strings.HasPrefix(strings.ToLower(cf.Name()), "produce")) {
			found = true
		}
		return !found
	}
	ast.Inspect(body, visit)
	return found
}

// uncheckedStatus reports an ack after an HTTP request whose response
// status the function never reads: `resp, err := client.Do(req)` with only
// err checked takes a 500 or a 429 for success, and the message is acked
// though the receiver did not apply it. Reading resp.StatusCode or
// resp.Status anywhere in the function, or handing resp to another function
// (which may check it), counts as checking.
func uncheckedStatus(pass *analysis.Pass, r *reporter, root *Root, body *ast.BlockStmt, st ast.Stmt, rest []ast.Stmt, implicit bool, acker string) {
	as, ok := st.(*ast.AssignStmt)
	if !ok || len(as.Rhs) != 1 || len(as.Lhs) != 2 {
		return
	}
	call, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr)
	if !ok || !strings.HasPrefix(effectOf(pass.TypesInfo, call), "an HTTP request") {
		return
	}
	id, ok := as.Lhs[0].(*ast.Ident)
	if !ok {
		return
	}
	if id.Name != "_" { // resp, err := ...; "_, err :=" reads nothing
		resp := pass.TypesInfo.ObjectOf(id)
		if resp == nil || statusRead(pass.TypesInfo, body, resp) {
			return
		}
	}
	for _, next := range rest {
		c := topCall(next)
		if c == nil {
			continue
		}
		if ack := ackOf(pass.TypesInfo, c); ack != "" {
			r.report(c, SeverityOf(root.Name, types.ExprString(call.Fun)), fmt.Sprintf(
				"acks with %s after %s (line %d) without reading its status: a 5xx or 429 answer counts as success, so the message is acked though the receiver did not apply it; check resp.StatusCode and leave the message unacked on failure",
				ack, types.ExprString(call.Fun), pass.Fset.Position(call.Pos()).Line))
			return
		}
	}
	// Where a nil return is the ack (a Watermill handler, a Lambda
	// handler, a function whose caller acks on its nil), the return is.
	who := acker
	if implicit {
		who = "the " + root.Kind
	}
	if who == "" || strings.HasPrefix(acker, autoCommitPrefix) {
		return
	}
	if ret := nextReturn(rest); ret != nil && returnsNoError(pass.TypesInfo, &ast.BlockStmt{List: []ast.Stmt{ret}}) != nil {
		r.report(ret, SeverityOf(root.Name, types.ExprString(call.Fun)), fmt.Sprintf(
			"returns no error after %s (line %d) without reading its status, and %s acks the message on that nil: a 5xx or 429 answer counts as success, so the message is acked though the receiver did not apply it; check resp.StatusCode and return an error on failure",
			types.ExprString(call.Fun), pass.Fset.Position(call.Pos()).Line, who))
	}
}

// failedStatusDone reports an if on a failed HTTP status (`resp.StatusCode
// != http.StatusOK`, `>= 400`) whose branch returns no error, in a function
// whose nil return acks the message (an implicit-ack entry point, or a
// function a receive loop acks after): a 5xx or 429 answer is logged and
// the message acked, so the receiver never applies it (field trial, wave
// 14: fit-forge H3). A branch that only logs and falls through to a
// return of no error among the statements after the if (through) is
// reported at that return (field trial, wave 24: github-hook-relay logs a
// non-200 answer and returns nil, and the loop deletes the message). A
// branch on equality (`== http.StatusConflict`: done before) is not
// reported.
func failedStatusDone(pass *analysis.Pass, r *reporter, root *Root, st ast.Stmt, through []ast.Stmt, implicit bool, acker string) {
	ifs, ok := st.(*ast.IfStmt)
	if !ok || !implicit && acker == "" {
		return
	}
	var status ast.Expr
	ast.Inspect(ifs.Cond, func(n ast.Node) bool {
		be, ok := n.(*ast.BinaryExpr)
		if !ok || status != nil {
			return status == nil
		}
		switch be.Op {
		case token.NEQ, token.GEQ, token.GTR, token.LSS:
			for _, side := range []ast.Expr{be.X, be.Y} {
				if sel, ok := ast.Unparen(side).(*ast.SelectorExpr); ok && sel.Sel.Name == "StatusCode" && isHTTPResponse(pass.TypesInfo.TypeOf(sel.X)) {
					status = sel
				}
			}
		}
		return status == nil
	})
	if status == nil || clientErrorsOnly(pass.TypesInfo, ifs.Cond) {
		return
	}
	ret := returnsNoError(pass.TypesInfo, ifs.Body)
	if ret == nil && ifs.Else == nil && !terminates(ifs.Body) && !assignsError(pass.TypesInfo, ifs.Body) {
		for i, next := range through {
			if _, ok := next.(*ast.ReturnStmt); ok {
				ret = returnsNoError(pass.TypesInfo, &ast.BlockStmt{List: through[:i+1]})
				break
			}
			if assignsError(pass.TypesInfo, &ast.BlockStmt{List: []ast.Stmt{next}}) {
				break
			}
		}
	}
	if ret == nil {
		return
	}
	who := acker
	if who == "" {
		who = "the " + root.Kind
	}
	r.report(ret, SeverityOf(root.Name), fmt.Sprintf(
		"returns without an error when %s shows a failed request (line %d): %s acks the message, so a 5xx or 429 answer loses it instead of redelivering it; return an error for a status worth retrying, and drop only a status known to be permanent",
		types.ExprString(status), pass.Fset.Position(ifs.Pos()).Line, who))
}

// clientErrorsOnly reports whether cond holds a range of statuses below
// 500 (`>= 400 && < 500`): a 4xx that will fail again the same way, which
// a handler may drop.
func clientErrorsOnly(info *types.Info, cond ast.Expr) bool {
	found := false
	ast.Inspect(cond, func(n ast.Node) bool {
		be, ok := n.(*ast.BinaryExpr)
		if !ok || found {
			return !found
		}
		if be.Op != token.LSS && be.Op != token.LEQ {
			return true
		}
		if tv, ok := info.Types[be.Y]; ok && tv.Value != nil {
			if v, ok := constant.Int64Val(constant.ToInt(tv.Value)); ok && v <= 500 && v > 400 {
				found = true
			}
		}
		return !found
	})
	return found
}

// isHTTPResponse matches *http.Response and http.Response.
func isHTTPResponse(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	return isNamed(t, "net/http", "Response")
}

// statusRead reports whether body reads resp's Status or StatusCode, or
// passes resp itself to a call.
func statusRead(info *types.Info, body *ast.BlockStmt, resp types.Object) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := ast.Unparen(n.X).(*ast.Ident); ok && info.Uses[id] == resp && (n.Sel.Name == "StatusCode" || n.Sel.Name == "Status") {
				found = true
			}
		case *ast.CallExpr:
			if logCall(info, n) {
				break // log.Println(resp) prints it: it reads no status (field trial, wave 29: web-of-hooks H1)
			}
			for _, a := range n.Args {
				if id, ok := ast.Unparen(a).(*ast.Ident); ok && info.Uses[id] == resp {
					found = true
				}
			}
		case *ast.ReturnStmt:
			for _, res := range n.Results {
				if id, ok := ast.Unparen(res).(*ast.Ident); ok && info.Uses[id] == resp {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// kafkaSkips reports, in a loop over Kafka messages (a loop whose body
// marks or commits offsets with Sarama, franz-go, kafka-go or
// confluent-kafka-go), a failed message that the loop goes past without its
// own ack: the error branch continues or falls through, and the ack is on
// the success path only (after the branch's continue, or in its else).
// Offsets are committed, not messages: the next message's ack commits past
// the failed one, which is never delivered again. worker says the loop
// ranges over a channel (a worker fed by the receive loop), which has no
// partition to stop: the fix it gives is to retry in place.
func kafkaSkips(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, loopBody *ast.BlockStmt, worker bool) {
	info := pass.TypesInfo
	ack := c.kafkaAckBelow(loopBody)
	if ack == "" {
		return
	}
	fix := "return the error to stop the partition (it is redelivered after the rebalance), or dead-letter it explicitly"
	if worker {
		// A worker ranging over a channel has no partition to stop.
		fix = "retry it in place until it succeeds, or dead-letter it explicitly, before the worker marks another message"
	}
	recv := firstReceive(info, loopBody)
	acked := token.NoPos // the loop's own ack before the work, at its top level (earlyack's)
	for _, st := range loopBody.List {
		if c := topCall(st); c != nil && ackOf(info, c) != "" {
			acked = st.Pos()
			break
		}
	}
	loopStmts(loopBody, func(st, prev ast.Stmt, rest []ast.Stmt) {
		if recv.IsValid() && st.End() <= recv {
			return // before this iteration's receive: no message in hand (a rate limiter's wait)
		}
		if acked.IsValid() && acked < st.Pos() {
			return // acked already: nothing is passed over (earlyack reports the ack)
		}
		if ifs := markedOnSuccess(info, st); ifs != nil {
			r.report(ifs, SeverityOf(root.Name), fmt.Sprintf(
				"the message is acked only when its work succeeded (%s inside if %s), and the loop goes on after a failure: Kafka commits offsets, not messages, so the next message's %s commits past the failed one and it is never delivered again; %s",
				ack, types.ExprString(ifs.Cond), ack, fix))
			return
		}
		ifs, work := failedWork(pass, c, st, prev)
		if ifs == nil || leaves(ifs.Body) || c.kafkaAckBelow(ifs.Body) != "" || sendsElsewhere(pass.TypesInfo, ifs.Body) {
			return
		}
		if !endsInContinue(ifs.Body) && c.kafkaAckBelow(&ast.BlockStmt{List: rest}) != "" {
			return // falls through to the ack: "acks even when ... failed"
		}
		workName := types.ExprString(work.Fun)
		r.report(ifs, SeverityOf(root.Name, workName), fmt.Sprintf(
			"a message whose %s fails is not acked but the loop goes on, and Kafka commits offsets, not messages: the next message's %s commits past it and it is never delivered again; %s",
			workName, ack, fix))
	})
}

// kafkaSkipsThenCommits reports, in a loop over a batch's records with no
// ack of its own, a failed call whose branch skips to the next record
// (continue) when a Kafka commit follows the loop: the commit of a later
// record (or of the batch) passes over the failed one, which is never
// delivered again (field trial, wave 15: apm-queue H1).
func kafkaSkipsThenCommits(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, loopBody *ast.BlockStmt, tail []ast.Stmt) {
	info := pass.TypesInfo
	if len(tail) == 0 || kafkaAckIn(info, loopBody) != "" {
		return
	}
	ack := kafkaAckIn(info, &ast.BlockStmt{List: tail})
	if ack == "" {
		return
	}
	loopStmts(loopBody, func(st, prev ast.Stmt, _ []ast.Stmt) {
		ifs, work := failedWork(pass, c, st, prev)
		if ifs == nil || !continues(ifs.Body) || sendsElsewhere(pass.TypesInfo, ifs.Body) {
			return
		}
		workName := types.ExprString(work.Fun)
		r.report(ifs, SeverityOf(root.Name, workName), fmt.Sprintf(
			"a record whose %s fails is skipped (continue), and the %s after the loop commits a later offset: Kafka commits offsets, not records, so the failed record is passed over and never delivered again; retry it in place, stop the batch at it and commit only the records before it, or dead-letter it explicitly",
			workName, ack))
	})
}

// returnsBeforeOwnCommit reports, in a function a Kafka consumer calls per
// message (a handler the poll loop calls through a function value) that
// commits the message itself and returns no error, a failed call whose
// branch returns before that commit: the loop goes on, and the next
// message's commit passes over the failed one (field trial, wave 15:
// ros-ocp-backend H1).
func returnsBeforeOwnCommit(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, node ast.Node, body *ast.BlockStmt) {
	switch root.Kind {
	case KindConfluent, KindKafkaGo, KindFranz, KindSarama, KindSaramaCluster:
	default:
		return
	}
	info := pass.TypesInfo
	ft := funcType(node)
	if ft == nil {
		return
	}
	dropped := ""
	if ft.Results != nil && len(ft.Results.List) > 0 {
		fd, ok := node.(*ast.FuncDecl)
		if !ok {
			return // a result may carry the failure to the loop
		}
		fn, _ := info.Defs[fd.Name].(*types.Func)
		if fn == nil || !c.resultDroppedByLoops(fn) {
			return // a result may carry the failure to the loop
		}
		dropped = " (its callers' loops only log what it returns and call it again)"
	}
	done := false
	// The function's own blocks: a loop's skips are kafkaSkips'.
	loopStmts(body, func(st, prev ast.Stmt, _ []ast.Stmt) {
		if done {
			return
		}
		ifs, work := failedWork(pass, c, st, prev)
		if ifs == nil || !endsInReturn(ifs.Body) || sendsElsewhere(pass.TypesInfo, ifs.Body) || kafkaCommitIn(c, info, ifs.Body.List) != "" {
			return
		}
		ack := kafkaCommitAfter(c, info, body, ifs.End())
		if ack == "" {
			return
		}
		workName := types.ExprString(work.Fun)
		r.report(ifs, SeverityOf(root.Name, workName), fmt.Sprintf(
			"returns without committing when %s fails, and commits the message itself (%s) on success: the poll loop goes on%s, and Kafka commits offsets, not messages, so the next message's commit passes over this one and it is never delivered again; retry the work in place, or stop the consumer (return the error to a loop that stops), or dead-letter it explicitly",
			workName, ack, dropped))
		done = true
	})
}

// resultDroppedByLoops reports whether fn is called in this package, and
// every call is inside a loop that goes on whatever fn returns: the call
// is a statement (its result unread), or its error branch neither
// returns, breaks nor ends the process (it logs). Such a loop calls fn
// again for the next message, so fn's error result carries the failure
// nowhere (field trial, wave 20: Common-Backend's consume, whose caller
// logs the error and fetches the next message).
func (c *Consumers) resultDroppedByLoops(fn *types.Func) bool {
	calls := 0
	dropped := true
	inspectStack(c.pass.Files, func(n ast.Node, stack []ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || !dropped {
			return dropped
		}
		if cf := callee(c.pass.TypesInfo, call); cf == nil || cf.Origin() != fn {
			return true
		}
		calls++
		if _, looped := enclosingLoop(stack); !looped || len(stack) < 3 {
			dropped = false
			return false
		}
		switch parent := stack[len(stack)-2].(type) {
		case *ast.ExprStmt:
		case *ast.AssignStmt:
			ifs, ok := stack[len(stack)-3].(*ast.IfStmt)
			if !ok || ifs.Init != parent || hasReturn(ifs.Body) || stopsLoop(ifs.Body) || ifs.Else != nil {
				dropped = false
			}
		default:
			dropped = false
		}
		return dropped
	})
	return calls > 0 && dropped
}

// kafkaCommitAfter returns the first Kafka commit in body (see
// kafkaCommitIn) that comes after pos, or "".
func kafkaCommitAfter(c *Consumers, info *types.Info, body *ast.BlockStmt, pos token.Pos) string {
	found := ""
	ast.Inspect(body, func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok || found != "" {
			return false
		}
		if st, ok := m.(ast.Stmt); ok && st.Pos() > pos {
			if _, isBlock := st.(*ast.BlockStmt); !isBlock {
				found = kafkaCommitIn(c, info, []ast.Stmt{st})
				return false
			}
		}
		return true
	})
	return found
}

// kafkaCommitIn returns the Kafka commit in stmts (outside function
// literals): a commit call, or a call of a function of this package whose
// body makes one (commitKafkaMsg(msg, consumer)); "" if none.
func kafkaCommitIn(c *Consumers, info *types.Info, stmts []ast.Stmt) string {
	block := &ast.BlockStmt{List: stmts}
	if ack := kafkaAckIn(info, block); ack != "" {
		return ack
	}
	found := ""
	ast.Inspect(block, func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok || found != "" {
			return false
		}
		if call, ok := m.(*ast.CallExpr); ok {
			if fn := callee(info, call); fn != nil && c.decls[fn] != nil && c.decls[fn].Body != nil {
				if ack := kafkaAckIn(info, c.decls[fn].Body); ack != "" {
					found = ack + " in " + fn.Name()
				}
			}
		}
		return found == ""
	})
	return found
}

// endsInReturn reports whether body's last statement is a return.
func endsInReturn(body *ast.BlockStmt) bool {
	if len(body.List) == 0 {
		return false
	}
	_, ok := body.List[len(body.List)-1].(*ast.ReturnStmt)
	return ok
}

// continues reports whether body holds a continue of the enclosing loop
// (not one inside a nested loop or function literal).
func continues(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit, *ast.ForStmt, *ast.RangeStmt:
			return false
		case *ast.BranchStmt:
			if n.Tok == token.CONTINUE && n.Label == nil {
				found = true
			}
		}
		return !found
	})
	return found
}

// loopStmts calls visit for every statement of a loop body's blocks (or a
// function body's; not those of nested loops or function literals), with
// the statement before it in its block (nil for the first) and those after
// it.
func loopStmts(loopBody *ast.BlockStmt, visit func(st, prev ast.Stmt, rest []ast.Stmt)) {
	cont := continuations(loopBody)
	ast.Inspect(loopBody, func(m ast.Node) bool {
		switch m.(type) {
		case *ast.FuncLit, *ast.ForStmt, *ast.RangeStmt:
			return false // their own functions and loops
		}
		block, ok := stmtBlock(m)
		if !ok {
			return true
		}
		for i, st := range block.List {
			var prev ast.Stmt
			if i > 0 {
				prev = block.List[i-1]
			}
			// rest: what runs next when st falls through, the statements
			// after the if or switch around it included.
			rest := block.List[i+1:]
			if tail := cont[m]; len(tail) > 0 && !terminates(&ast.BlockStmt{List: rest}) {
				rest = append(slices.Clip(rest), tail...)
			}
			visit(st, prev, rest)
		}
		return true
	})
}

// watermillSkips reports, in the body of a loop over a Watermill
// subscription's messages that acks them (msg.Ack()), a failed message the
// loop goes past with neither Ack nor Nack: the error branch continues.
// Watermill's subscribers wait for each message's Ack or Nack before they
// deliver the next one of its partition (watermill-kafka) or of the
// subscription (GoChannel, watermill-sql), so the consumer stalls on it
// for good.
func watermillSkips(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, loopBody *ast.BlockStmt) {
	settles := func(fn *types.Func, names ...string) bool {
		return slices.Contains(names, fn.Name()) && recvName(fn) == "Message" && funcPath(fn) == pathWatermill+"/message"
	}
	skipsUnsettled(pass, c, r, root, loopBody, settles, []string{"Ack", "Nack"},
		"a message whose %s fails is neither acked nor nacked, and the loop goes on: Watermill's subscriber waits for each message's Ack or Nack before it delivers the next one of its partition (watermill-kafka) or subscription (GoChannel), so this consumer stalls for good; Nack it (it is delivered again) or record the failure and Ack it")
}

// amqpSkips reports, in the body of a loop over RabbitMQ deliveries that
// acks them (d.Ack(false)), a failed delivery the loop goes past with
// neither Ack, Nack nor Reject: the error branch continues. The delivery
// stays unacked on the channel: RabbitMQ delivers it again only when the
// channel or its connection closes, and until then it holds one of the
// channel's prefetch slots (Channel.Qos), so enough such failures stop the
// consumer (RabbitMQ docs, "Consumer Acknowledgements and Publisher
// Confirms": delivery tags are channel-scoped; unacknowledged deliveries
// are requeued when the channel closes). Field trial, wave 43: m-banking's
// transfer loop.
func amqpSkips(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, loopBody *ast.BlockStmt) {
	settles := func(fn *types.Func, names ...string) bool {
		return slices.Contains(names, fn.Name()) && recvName(fn) == "Delivery" && isAMQP(funcPath(fn))
	}
	skipsUnsettled(pass, c, r, root, loopBody, settles, []string{"Ack", "Nack", "Reject"},
		"a delivery whose %s fails is neither acked, nacked nor rejected, and the loop goes on: it stays unacked on the channel, RabbitMQ delivers it again only when the channel closes, and until then it holds a prefetch slot (Channel.Qos), so enough failures stop this consumer; Nack it with requeue (bounded by a count of attempts) or Reject it to a dead-letter exchange")
}

// skipsUnsettled reports, in a loop body that acks its messages (a call
// settles accepts with "Ack"), each failed work whose error branch
// continues with none of the settling calls named (nor a call of the
// package's own function that acks): message, with the work's name.
func skipsUnsettled(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, loopBody *ast.BlockStmt, settles func(fn *types.Func, names ...string) bool, names []string, message string) {
	info := pass.TypesInfo
	if settleIn(info, loopBody, settles, "Ack") == nil {
		return
	}
	loopStmts(loopBody, func(st, prev ast.Stmt, _ []ast.Stmt) {
		ifs, work := failedWork(pass, c, st, prev)
		if ifs == nil || !endsInContinue(ifs.Body) || settleIn(info, ifs.Body, settles, names...) != nil || c.helperAckIn(ifs.Body) {
			return
		}
		r.report(ifs, SeverityOf(root.Name, types.ExprString(work.Fun)), fmt.Sprintf(message, types.ExprString(work.Fun)))
	})
}

// settleIn finds a call in n, outside function literals, whose callee
// settles accepts with one of names.
func settleIn(info *types.Info, n ast.Node, settles func(fn *types.Func, names ...string) bool, names ...string) *ast.CallExpr {
	var found *ast.CallExpr
	ast.Inspect(n, func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok || found != nil {
			return false
		}
		if call, ok := m.(*ast.CallExpr); ok {
			if fn := callee(info, call); fn != nil && settles(fn, names...) {
				found = call
			}
		}
		return found == nil
	})
	return found
}

// helperAckIn reports whether a statement of body calls a function of
// this package that settles the message (see helperAck).
func (c *Consumers) helperAckIn(body *ast.BlockStmt) bool {
	for _, st := range body.List {
		if call := topCall(st); call != nil {
			if a, _ := c.helperAck(call); a != "" {
				return true
			}
		}
	}
	return false
}

// markedOnSuccess returns st when it is `if err == nil { ... }` (err an
// error, however it was obtained: a call, a receive from a worker's result
// channel) whose body holds a Kafka ack and whose else branch, if any,
// neither leaves the loop nor acks: a failed message is then skipped while
// the loop goes on.
func markedOnSuccess(info *types.Info, st ast.Stmt) *ast.IfStmt {
	ifs, ok := st.(*ast.IfStmt)
	if !ok {
		return nil
	}
	bin, ok := ast.Unparen(ifs.Cond).(*ast.BinaryExpr)
	if !ok || bin.Op != token.EQL {
		return nil
	}
	errID, ok := ast.Unparen(bin.X).(*ast.Ident)
	if nilID, isNil := ast.Unparen(bin.Y).(*ast.Ident); !ok || !isNil || nilID.Name != "nil" {
		return nil
	}
	if obj := info.Uses[errID]; obj == nil || !isError(obj.Type()) {
		return nil
	}
	if kafkaAckIn(info, ifs.Body) == "" {
		return nil
	}
	if ifs.Else != nil {
		if eb, ok := ifs.Else.(*ast.BlockStmt); !ok || leaves(eb) || kafkaAckIn(info, eb) != "" {
			return nil
		}
	}
	return ifs
}

// kafkaBreaks reports, in a poll loop that fetches a batch and commits
// (a Kafka receive and an offset commit in one loop body), a loop over the
// batch's records that breaks at a failed record: the records before it are
// committed, but the client's fetch position is already past the failed
// one, so the next poll's commit passes over it and it is never delivered
// again. A loop that seeks back (SetOffsets, Seek, ResetOffset) or returns
// is not reported.
//
// With inHand, pollBody is a function's body that receives nothing but
// commits: a loop over franz-go records ([]*kgo.Record, a fetch's
// partition in a closure given to EachPartition) is the batch, since the
// client's fetch position is past every record a poll returned (field
// trial, wave 31: notezy's consumeFetches).
func kafkaBreaks(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, pollBody *ast.BlockStmt, inHand bool) {
	info := pass.TypesInfo
	ack := kafkaAckIn(info, pollBody)
	if ack == "" || (kafkaReceiveIn(info, pollBody) == nil) != inHand || seeksBack(info, pollBody) {
		return
	}
	ast.Inspect(pollBody, func(m ast.Node) bool {
		var inner *ast.BlockStmt
		switch l := m.(type) {
		case *ast.FuncLit:
			return false
		case *ast.RangeStmt:
			if !inHand || kgoRecords(info.TypeOf(l.X)) {
				inner = l.Body
			}
		case *ast.ForStmt:
			if !inHand {
				inner = l.Body
			}
		}
		if inner == nil {
			return true
		}
		for i, st := range inner.List {
			ifs, ok := st.(*ast.IfStmt)
			if !ok || !endsInBreak(ifs.Body) || leaves(&ast.BlockStmt{List: ifs.Body.List[:len(ifs.Body.List)-1]}) || sendsElsewhere(pass.TypesInfo, ifs.Body) {
				continue
			}
			var prev ast.Stmt
			if i > 0 {
				prev = inner.List[i-1]
			}
			work := failedCall(pass, c, ifs, prev)
			if work == nil {
				work = failedBool(pass, c, ifs)
			}
			if work == nil {
				continue
			}
			workName := types.ExprString(work.Fun)
			r.report(ifs, SeverityOf(root.Name, workName), fmt.Sprintf(
				"breaks out of the batch when %s fails, and the records before it are committed (%s), but the client's fetch position is already past the failed record: the next poll's commit passes over it and it is never delivered again; seek back to it (franz-go SetOffsets, confluent-kafka-go Seek) or return the error and let the partition be consumed again from the commit",
				workName, ack))
		}
		return false
	})
}

// failedCall matches the failure test of an if: `err != nil` after (or in
// the init of) `err := work(...)`, or `work(...) != nil` itself. Decode
// calls are not the work's failure.
func failedCall(pass *analysis.Pass, c *Consumers, ifs *ast.IfStmt, prev ast.Stmt) *ast.CallExpr {
	if _, work := failedWork(pass, c, ifs, prev); work != nil {
		return work
	}
	bin, ok := ast.Unparen(ifs.Cond).(*ast.BinaryExpr)
	if !ok || bin.Op != token.NEQ {
		return nil
	}
	if id, ok := ast.Unparen(bin.Y).(*ast.Ident); !ok || id.Name != "nil" {
		return nil
	}
	call, ok := ast.Unparen(bin.X).(*ast.CallExpr)
	if !ok || ackOf(pass.TypesInfo, call) != "" || decodeCall.MatchString(lastName(call.Fun)) {
		return nil
	}
	if t := pass.TypesInfo.TypeOf(call); t == nil || !isError(t) {
		return nil
	}
	return call
}

// kgoRecords reports whether t is a slice of franz-go records: a fetch's
// records, already past the client's fetch position.
func kgoRecords(t types.Type) bool {
	if t == nil {
		return false
	}
	s, ok := types.Unalias(t).Underlying().(*types.Slice)
	if !ok {
		return false
	}
	p, ok := types.Unalias(s.Elem()).(*types.Pointer)
	return ok && isNamed(p.Elem(), pathKgo, "Record")
}

// notWork matches the names of predicates, whose false is an answer, not
// a failure: isWanted, hasKey, shouldRetry, Contains.
var notWork = regexp.MustCompile(`^(?i)(is|has|can|should|must|may|contains|exists|valid|match|equal|allow|enabled|want|need|accept|filter|skip|ok)`)

// failedBool matches `!work(...)` as an if's condition, where work is a
// function of the code (not a library's) that returns only a bool and
// whose name is not a predicate's: a handler that answers "handled" with
// true and a failure (its retries and its dead-letter step spent) with
// false (field trial, wave 31: notezy's consumeRecord).
func failedBool(pass *analysis.Pass, c *Consumers, ifs *ast.IfStmt) *ast.CallExpr {
	u, ok := ast.Unparen(ifs.Cond).(*ast.UnaryExpr)
	if !ok || u.Op != token.NOT {
		return nil
	}
	call, ok := ast.Unparen(u.X).(*ast.CallExpr)
	if !ok {
		return nil
	}
	fn := callee(pass.TypesInfo, call)
	if fn == nil || !c.Local(fn) && !c.works(fn) || notWork.MatchString(fn.Name()) || ackOf(pass.TypesInfo, call) != "" || receives(fn) {
		return nil
	}
	sig := fn.Type().(*types.Signature)
	if sig.Results().Len() != 1 || !types.Identical(sig.Results().At(0).Type(), types.Typ[types.Bool]) {
		return nil
	}
	return call
}

// endsInBreak reports whether body's last statement is an unlabelled break.
func endsInBreak(body *ast.BlockStmt) bool {
	if len(body.List) == 0 {
		return false
	}
	b, ok := body.List[len(body.List)-1].(*ast.BranchStmt)
	return ok && b.Tok == token.BREAK && b.Label == nil
}

// seeksBack reports whether n moves a Kafka client's fetch position (franz-go
// SetOffsets, confluent-kafka-go Seek, kafka-go SetOffset, Sarama
// ResetOffset): a loop that does so re-reads what it did not commit.
func seeksBack(info *types.Info, n ast.Node) bool {
	found := false
	ast.Inspect(n, func(m ast.Node) bool {
		if call, ok := m.(*ast.CallExpr); ok {
			if fn := callee(info, call); fn != nil && isKafkaClient(funcPath(fn)) {
				switch fn.Name() {
				case "SetOffsets", "Seek", "SeekPartitions", "SetOffset", "SetOffsetAt", "ResetOffset":
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// endsInContinue reports whether body's last statement is a continue.
func endsInContinue(body *ast.BlockStmt) bool {
	if len(body.List) == 0 {
		return false
	}
	b, ok := body.List[len(body.List)-1].(*ast.BranchStmt)
	return ok && b.Tok == token.CONTINUE && b.Label == nil
}

// leaves reports whether body leaves the loop or the function: a return,
// break or goto, or a call to panic, os.Exit or a Fatal logger (not a
// continue, which goes on to the next message).
func leaves(body *ast.BlockStmt) bool {
	for _, st := range body.List {
		if b, ok := st.(*ast.BranchStmt); ok && b.Tok == token.CONTINUE {
			continue
		}
		if terminates(&ast.BlockStmt{List: []ast.Stmt{st}}) {
			return true
		}
	}
	return false
}

// kafkaAckBelow returns the first offset mark or commit in n (see
// kafkaAckIn), or, in the whole-program mode, the first call in n below
// which the walk reaches one (the code's wrapper in another package:
// kafka.CommitPlayerPayload(msg)); "" if none.
func (c *Consumers) kafkaAckBelow(n ast.Node) string {
	info := c.pass.TypesInfo
	if ack := kafkaAckIn(info, n); ack != "" || c.program == nil {
		return ack
	}
	found := ""
	ast.Inspect(n, func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok || found != "" {
			return false
		}
		if call, ok := m.(*ast.CallExpr); ok && c.program.kafkaAckSites[call.Lparen] {
			found = types.ExprString(call.Fun) + " (which commits the offset)"
		}
		return found == ""
	})
	return found
}

// kafkaAckIn returns the first offset mark or commit of a Kafka client in
// n (not inside function literals), or "".
func kafkaAckIn(info *types.Info, n ast.Node) string {
	found := ""
	ast.Inspect(n, func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok || found != "" {
			return false
		}
		call, ok := m.(*ast.CallExpr)
		if !ok {
			return true
		}
		fn := callee(info, call)
		if fn == nil || ackOf(info, call) == "" {
			return true
		}
		if isKafkaClient(funcPath(fn)) || confluentConsumerMethod(fn) || appKafkaMethod(fn) {
			found = qualName(fn)
		}
		return found == ""
	})
	return found
}

// leaveUnacked is the fix an errack finding gives for the ack call: on
// Kafka, where skipping one message's ack lets the next one commit past
// it, return the error (the partition stops and the message is delivered
// again after the rebalance); elsewhere (an SQS delete, a Watermill Ack),
// skipping the ack is enough.
func leaveUnacked(ack *ast.CallExpr, info *types.Info) string {
	if ack == nil { // a hand-off's commit channel closed (see chanAck)
		return keepChanOpen
	}
	if fn := callee(info, ack); fn != nil {
		if isKafkaClient(funcPath(fn)) || appKafkaMethod(fn) {
			return "return the error instead (Kafka commits offsets: skipping this mark lets the next one commit past it), so the message is delivered again after the rebalance"
		}
		if isKCL(funcPath(fn)) {
			return "retry the record in place until it succeeds, or checkpoint only up to the record before it and stop (a checkpoint is a sequence number: a later one passes over the failed record, and the KCL gives unchecked records again only to the shard's next lease holder)"
		}
	}
	return "leave it unacked (return, or continue without the ack) so it is redelivered"
}

// looksUp reports whether call reads rows (see dbLookup), itself or, in
// the whole-program mode, through what it calls (sqlc's GetCustomer).
func (c *Consumers) looksUp(call *ast.CallExpr) bool {
	return dbLookup(c.pass.TypesInfo, call) || c.program != nil && c.program.lookupSites[call.Lparen]
}

// notFoundIn reports whether an error branch names a not-found outcome in
// its condition or body (sql.ErrNoRows, gorm.ErrRecordNotFound, IsNotFound):
// it tells a missing row from a failed read.
func notFoundIn(ifs *ast.IfStmt) bool {
	found := false
	ast.Inspect(ifs, func(n ast.Node) bool {
		if e, ok := n.(ast.Expr); ok && !found {
			if id, ok := e.(*ast.Ident); ok && notFoundName.MatchString(id.Name) {
				found = true
			}
			if sel, ok := e.(*ast.SelectorExpr); ok && notFoundName.MatchString(sel.Sel.Name) {
				found = true
			}
			if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING && notFoundName.MatchString(lit.Value) {
				found = true // err.Error() == "record not found"
			}
		}
		return !found
	})
	return found
}

// keepChanOpen is the fix for an ack by a hand-off's commit channel
// closed on a failure (see chanAck).
const keepChanOpen = "keep the channel open on a failure and retry the work until it succeeds (or stop the consumer, so the message is delivered again from the last commit); closing it on the error path commits past the failed message"

// isKafkaClient matches the Kafka clients whose acks are offset commits:
// Sarama, franz-go, kafka-go and confluent-kafka-go.
func isKafkaClient(path string) bool {
	return isSaramaPath(path) || path == pathKgo || path == pathKafkaGo || isConfluent(path)
}

// successOnlyOverwrite reports, in body (a function whose result acks the
// message), a work's error stored in a variable (`err = insert(...)`) that
// nothing reads before the next work's result overwrites it, but for a
// test for success (`if err == nil { log("ok") }`): the function returns
// the later result, so this failure is acked with it (field trial, wave
// 53: trueblocks-key's appearances insert, overwritten by the chunks
// insert's nil before the Lambda handler returned its named error).
func successOnlyOverwrite(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, body *ast.BlockStmt, implicit bool, acker string) {
	info := pass.TypesInfo
	type use struct {
		id     *ast.Ident
		store  *ast.AssignStmt // err = call(): a store of a call's result that does not read err
		okTest bool            // err == nil
	}
	uses := map[types.Object][]use{}
	stores := map[*ast.Ident]*ast.AssignStmt{}
	tests := map[*ast.Ident]bool{}
	success := map[types.Object][]*ast.BlockStmt{} // if err == nil { ... }: runs only when it went well
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.IfStmt:
			if b, ok := ast.Unparen(n.Cond).(*ast.BinaryExpr); ok && b.Op == token.EQL && isNilIdent(b.Y) {
				if o := identObj(info, b.X); o != nil {
					success[o] = append(success[o], n.Body)
				}
			}
		case *ast.AssignStmt:
			if n.Tok == token.ASSIGN && len(n.Rhs) == 1 {
				if _, ok := ast.Unparen(n.Rhs[0]).(*ast.CallExpr); ok {
					for _, l := range n.Lhs {
						if id, ok := ast.Unparen(l).(*ast.Ident); ok && isErrorType(info.TypeOf(id)) && !readsObj(info, info.ObjectOf(id), n.Rhs[0]) {
							stores[id] = n
						}
					}
				}
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL {
				for _, pair := range [][2]ast.Expr{{n.X, n.Y}, {n.Y, n.X}} {
					if id, ok := ast.Unparen(pair[0]).(*ast.Ident); ok && isNilIdent(pair[1]) {
						tests[id] = true
					}
				}
			}
		case *ast.Ident:
			if v, ok := info.ObjectOf(n).(*types.Var); ok && isErrorType(v.Type()) && v.Parent() != types.Universe {
				uses[v] = append(uses[v], use{id: n, store: stores[n], okTest: tests[n]})
			}
		}
		return true
	})
	who := acker
	if implicit {
		who = "the " + root.Kind
	}
	for _, us := range uses {
		for i, u := range us {
			if u.store == nil {
				continue
			}
			call := ast.Unparen(u.store.Rhs[0]).(*ast.CallExpr)
			if !isWork(pass, c, call) {
				continue
			}
			for _, next := range us[i+1:] {
				if next.okTest {
					continue // read only to say it went well
				}
				inSuccess := slices.ContainsFunc(success[info.ObjectOf(u.id)], func(b *ast.BlockStmt) bool { return b.Pos() <= next.id.Pos() && next.id.Pos() < b.End() })
				if next.store != nil && next.store != u.store && !inSuccess && !exclusive(body, u.store.Pos(), next.store.Pos()) {
					r.report(call, SeverityOf(root.Name, types.ExprString(call.Fun)), fmt.Sprintf(
						"the error of %s is read only to test for success, then overwritten by %s (line %d): the function returns the later result, and %s acks the message on it, so this failure is lost; return it when it fails (or join the errors)",
						types.ExprString(call.Fun), types.ExprString(ast.Unparen(next.store.Rhs[0]).(*ast.CallExpr).Fun), pass.Fset.Position(next.store.Pos()).Line, who))
				}
				break
			}
		}
	}
}

// exclusive reports whether positions a and b of body lie in branches of
// which at most one runs: the body and the else of one if, or two clauses
// of one switch or select.
func exclusive(body *ast.BlockStmt, a, b token.Pos) bool {
	in := func(n ast.Node, p token.Pos) bool { return n != nil && n.Pos() <= p && p < n.End() }
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if found || n == nil {
			return false
		}
		switch n := n.(type) {
		case *ast.IfStmt:
			if n.Else != nil && (in(n.Body, a) && in(n.Else, b) || in(n.Body, b) && in(n.Else, a)) {
				found = true
			}
		case *ast.CaseClause, *ast.CommClause:
			return true
		case *ast.BlockStmt:
			var clauses []ast.Stmt
			for _, st := range n.List {
				switch st.(type) {
				case *ast.CaseClause, *ast.CommClause:
					clauses = append(clauses, st)
				}
			}
			ia, ib := -1, -1
			for i, cl := range clauses {
				if in(cl, a) {
					ia = i
				}
				if in(cl, b) {
					ib = i
				}
			}
			if ia >= 0 && ib >= 0 && ia != ib {
				found = true
			}
		}
		return !found
	})
	return found
}

// lockVerb matches the calls that take a lock: Acquire, Lock, TryLock,
// Obtain.
var lockVerb = regexp.MustCompile(`(?i)^(try)?(acquire|lock|obtain)`)

// lockHeld matches the errors a lock answers with when another holder has
// it: ErrLockAlreadyHeld, ErrNotObtained, ErrLocked, ErrBusy.
var lockHeld = regexp.MustCompile(`(?i)held|locked|not.?obtained|busy|taken|already`)

// lockHeldAck reports, in body (a function whose result acks the message),
// a lock taken around the work (released in a defer: a mutex, not a
// dedupe marker) whose "already held" answer returns without an error:
// `if err := lock.Acquire(ctx, "deploy:"+p.SiteID, ttl); err != nil { if
// errors.Is(err, ErrLockAlreadyHeld) { return nil } ... }`. The message is
// acked with its work undone: a different message for the same entity
// that arrives while another runs, or any message while a crashed worker's
// lock waits out its TTL, is lost (field trial, wave 53: ventopanel's
// deploy, provision and certificate tasks). A lock keyed by the message's
// own id is a dedupe of its redelivery, and is not reported.
func lockHeldAck(pass *analysis.Pass, r *reporter, root *Root, body *ast.BlockStmt, implicit bool, acker string) {
	info := pass.TypesInfo
	released := false
	ast.Inspect(body, func(n ast.Node) bool {
		if d, ok := n.(*ast.DeferStmt); ok {
			ast.Inspect(d.Call, func(m ast.Node) bool {
				if call, ok := m.(*ast.CallExpr); ok && releaseName.MatchString(lastName(call.Fun)) {
					released = true
				}
				return !released
			})
		}
		return !released
	})
	if !released {
		return
	}
	who := acker
	if implicit {
		who = "the " + root.Kind
	}
	inspectOwn(body, func(n ast.Node) {
		outer, ok := n.(*ast.IfStmt)
		if !ok {
			return
		}
		as, ok := outer.Init.(*ast.AssignStmt)
		if !ok || len(as.Rhs) != 1 {
			return
		}
		lock, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr)
		if !ok || !lockVerb.MatchString(lastName(lock.Fun)) || messageKeyed(lock) {
			return
		}
		for _, st := range outer.Body.List {
			inner, ok := st.(*ast.IfStmt)
			if !ok {
				continue
			}
			call, ok := ast.Unparen(inner.Cond).(*ast.CallExpr)
			if !ok {
				continue
			}
			fn := callee(info, call)
			if fn == nil || funcPath(fn) != "errors" || fn.Name() != "Is" || len(call.Args) != 2 || !lockHeld.MatchString(lastName(call.Args[1])) {
				continue
			}
			if ret := returnsNoError(info, inner.Body); ret != nil {
				r.report(ret, SeverityOf(root.Name, types.ExprString(lock.Fun)), fmt.Sprintf(
					"returns without an error when the lock %s takes is already held (line %d): %s acks the message with its work undone, so a message for the same key that arrives while another holds the lock, or any while a crashed worker's lock waits out its expiry, is lost; return an error so it is retried once the lock is free (a lock keyed by the message's own id would dedupe its redelivery instead)",
					types.ExprString(lock.Fun), pass.Fset.Position(lock.Pos()).Line, who))
			}
		}
	})
}

// excludesDuplicate reports whether op is `!errors.Is(err, X)` for the
// error err and an X named for a duplicate (ErrDuplicate, ErrAlreadyProcessed,
// ErrConflict): the failure branch takes every error but the code's own
// "seen already", which falls through to the ack on purpose (a new user's
// report: a JetStream consumer whose inbox insert answers errDuplicate).
func excludesDuplicate(info *types.Info, op ast.Expr, errObj types.Object) bool {
	u, ok := ast.Unparen(op).(*ast.UnaryExpr)
	if !ok || u.Op != token.NOT {
		return false
	}
	call, ok := ast.Unparen(u.X).(*ast.CallExpr)
	if !ok || len(call.Args) != 2 || identObj(info, call.Args[0]) != errObj {
		return false
	}
	fn := callee(info, call)
	return fn != nil && funcPath(fn) == "errors" && fn.Name() == "Is" && (duplicateName.MatchString(lastName(call.Args[1])) || lostClaim.MatchString(lastName(call.Args[1])))
}

// isNilIdent reports whether e is the identifier nil.
func isNilIdent(e ast.Expr) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	return ok && id.Name == "nil"
}

// overwritten returns the first statement of rest that assigns errObj
// again before any statement reads it, or nil.
func overwritten(info *types.Info, errObj types.Object, rest []ast.Stmt) ast.Stmt {
	if errObj == nil {
		return nil
	}
	for _, st := range rest {
		as, _ := st.(*ast.AssignStmt)
		if ifs, ok := st.(*ast.IfStmt); ok && ifs.Init != nil {
			as, _ = ifs.Init.(*ast.AssignStmt)
		}
		rhsReads := false
		if as != nil {
			for _, r := range as.Rhs {
				rhsReads = rhsReads || readsObj(info, errObj, r)
			}
		}
		if as != nil && as.Tok == token.ASSIGN && !rhsReads {
			for _, l := range as.Lhs {
				if id, ok := ast.Unparen(l).(*ast.Ident); ok && info.ObjectOf(id) == errObj {
					return st
				}
			}
		}
		if readsObj(info, errObj, st) {
			return nil
		}
	}
	return nil
}

// readsObj reports whether any of nodes uses obj (outside its own
// assignments' left-hand sides, which are definitions or stores).
func readsObj(info *types.Info, obj types.Object, nodes ...ast.Node) bool {
	found := false
	for _, n := range nodes {
		ast.Inspect(n, func(m ast.Node) bool {
			if found {
				return false
			}
			if as, ok := m.(*ast.AssignStmt); ok && as.Tok == token.ASSIGN {
				for _, r := range as.Rhs {
					if readsObj(info, obj, r) {
						found = true
					}
				}
				for _, l := range as.Lhs {
					if _, isID := ast.Unparen(l).(*ast.Ident); !isID && readsObj(info, obj, l) {
						found = true
					}
				}
				return false
			}
			if id, ok := m.(*ast.Ident); ok && info.Uses[id] == obj {
				found = true
			}
			return !found
		})
	}
	return found
}

// returnedLater reports whether a statement of rest before ret is an if
// on errObj (`if notifyErr != nil`) that returns an error: the failure
// recorded first (a status, an audit action) is returned there, before the
// nil (field trial, wave 54: EchoBilling's renewal webhook, whose error
// names the audit row and is then returned).
func returnedLater(info *types.Info, errObj types.Object, rest []ast.Stmt, ret *ast.ReturnStmt) bool {
	for _, st := range rest {
		if st.Pos() >= ret.Pos() {
			return false
		}
		if ifs, ok := st.(*ast.IfStmt); ok && readsObj(info, errObj, ifs.Cond) && returnsErrorValue(ifs.Body) {
			return true
		}
	}
	return false
}

// nextReturn returns the first return statement among rest's top-level
// statements, or nil.
func nextReturn(rest []ast.Stmt) *ast.ReturnStmt {
	for _, st := range rest {
		if ret, ok := st.(*ast.ReturnStmt); ok {
			return ret
		}
	}
	return nil
}

// givesUp reports whether an error branch gives the failure up: it returns
// from the function or goes on after it (a log line), rather than retrying
// (continue, break, goto) or crashing the process (panic, os.Exit, a Fatal
// logger: the message is redelivered).
func givesUp(body *ast.BlockStmt) bool {
	if len(body.List) == 0 {
		return false
	}
	switch st := body.List[len(body.List)-1].(type) {
	case *ast.ReturnStmt:
		return true
	case *ast.BranchStmt:
		return false
	case *ast.ExprStmt:
		if call, ok := ast.Unparen(st.X).(*ast.CallExpr); ok && endsProcess(call) {
			return false
		}
	}
	return true
}

// endsProcess reports whether call ends the process or the goroutine:
// panic, os.Exit, a logger's Fatal or Panic.
func endsProcess(call *ast.CallExpr) bool {
	name := types.ExprString(call.Fun)
	return name == "panic" || name == "os.Exit" || strings.Contains(name, "Fatal") || strings.Contains(name, "Panic")
}

// returnsErrorValue reports whether body returns a last result that is
// not the literal nil (a bare return is not counted: in a function with no
// results it carries nothing).
func returnsErrorValue(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok {
			return false
		}
		if ret, ok := m.(*ast.ReturnStmt); ok && len(ret.Results) > 0 {
			if id, ok := ast.Unparen(ret.Results[len(ret.Results)-1]).(*ast.Ident); !ok || id.Name != "nil" {
				found = true
			}
		}
		return !found
	})
	return found
}

// counterCall reports whether call only counts or measures (a metric's
// Inc, Add, Observe, Set, WithLabelValues(...).Inc): its name may say
// "failure" without sending the message anywhere.
func counterCall(call *ast.CallExpr) bool {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	switch sel.Sel.Name {
	case "Inc", "Dec", "Add", "Sub", "Observe", "Set", "WithLabelValues", "With", "Record":
		return true
	}
	return false
}

// deferredAck reports an ack deferred at the top of a function that then
// does work that can fail (`defer msg.Ack()`, or a deferred function
// literal that acks): the message is acked on every return, the failed
// ones included, and a Watermill router's nack after the handler's error
// comes too late (field trial wave 6, devices-api H3,
// message-processing-api H2).
func deferredAck(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, body *ast.BlockStmt) {
	info := pass.TypesInfo
	for i, st := range body.List {
		d, ok := st.(*ast.DeferStmt)
		if !ok {
			continue
		}
		ack := ackOf(info, d.Call)
		if lit, ok := ast.Unparen(d.Call.Fun).(*ast.FuncLit); ok && ack == "" {
			// defer func() { msg.Ack() }(): only an unconditional ack.
			for _, s := range lit.Body.List {
				if call := topCall(s); call != nil && ackOf(info, call) != "" {
					ack = ackOf(info, call)
				}
			}
		}
		if ack == "" {
			ack = c.deferredHelperAck(d)
		}
		if ack == "" {
			continue
		}
		work, at := firstWork(pass, c, body.List[i+1:])
		if work == "" {
			continue
		}
		fix := "nack (or return the error) on failure"
		if strings.Contains(ack, "Delete") {
			fix = "on failure leave the message undeleted (SQS has no nack: it comes back when its visibility timeout ends, or at once with ChangeMessageVisibility to 0)"
		}
		r.report(d, SeverityOf(root.Name, work), fmt.Sprintf(
			"defers %s, so the message is acked on every return, also when the work (%s, line %d) fails: a transient failure loses the message; ack after the work succeeded, and %s",
			ack, work, pass.Fset.Position(at.Pos()).Line, fix))
	}
}

// deferredHelperAck names the ack that a deferred call of the code's own
// function makes (`defer h.deleteMessage(m)` around the client's
// DeleteMessage: in its own body, or in the whole-program mode calls
// down), "" when it makes none or when the call is given an error or a
// pointer to one (`defer h.finish(m, &err)`), which may leave a failure
// unacked, or when it sends the message elsewhere (a dead-letter path).
// Field trial, wave 25: sqs-reader-service H1.
func (c *Consumers) deferredHelperAck(d *ast.DeferStmt) string {
	info, call := c.pass.TypesInfo, d.Call
	for _, a := range call.Args {
		t := info.TypeOf(a)
		if p, ok := types.Unalias(t).(*types.Pointer); ok {
			t = p.Elem()
		}
		if t != nil && isError(t) {
			return ""
		}
	}
	if c.helperSendsElsewhere(call) {
		return "" // a dead-letter path
	}
	if ack, _ := c.helperAck(call); ack != "" {
		return ack
	}
	if lit, ok := ast.Unparen(call.Fun).(*ast.FuncLit); ok {
		// Only an unconditional ack of the literal's own statements: one
		// inside `if r := recover(); r != nil { ... }` acks on a panic,
		// not on every return (field trial, wave 47: fyredocs' workers).
		for _, st := range lit.Body.List {
			if in := topCall(st); in != nil && c.program != nil && c.program.ackSites[in.Lparen] {
				return "a function literal (which acks the message)"
			}
		}
		return ""
	}
	// The call graph places a deferred call at its defer keyword.
	if c.program != nil && (c.program.ackSites[call.Lparen] || c.program.ackSites[d.Defer]) {
		return types.ExprString(call.Fun) + " (which acks the message)"
	}
	return ""
}

// deferredCommitDropped reports a transaction committed in a deferred
// call whose error cannot reach the function's result (`defer
// tx.Commit()`, or a deferred literal that only logs the commit's failure
// and assigns no named result) in a function whose nil result acks the
// message: when the commit fails the writes roll back, the function
// returns nil all the same and the message is acked, so the work is lost
// (field trial, wave 19: payment-processor H2).
func deferredCommitDropped(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, node ast.Node, body *ast.BlockStmt, acker string) {
	info := pass.TypesInfo
	named := namedResults(info, funcType(node))
	for i, st := range body.List {
		d, ok := st.(*ast.DeferStmt)
		if !ok {
			continue
		}
		commit := txCommitOf(info, d.Call)
		if lit, ok := ast.Unparen(d.Call.Fun).(*ast.FuncLit); ok && commit == "" {
			if assignsAny(info, lit.Body, named) || endsProcessIn(lit.Body) {
				continue // the failure reaches the result, or ends the process
			}
			ast.Inspect(lit.Body, func(n ast.Node) bool {
				if _, ok := n.(*ast.FuncLit); ok || commit != "" {
					return false
				}
				if call, ok := n.(*ast.CallExpr); ok {
					commit = txCommitOf(info, call)
				}
				return commit == ""
			})
		}
		if commit == "" {
			continue
		}
		if w, _ := firstWork(pass, c, body.List[i+1:]); w == "" {
			continue // nothing written to lose
		}
		who := acker
		if who == "" {
			who = "the " + root.Kind
		}
		r.report(d, SeverityOf(root.Name), fmt.Sprintf(
			"the deferred %s's error is only logged or dropped: when the commit fails the writes roll back, but the function returns nil and %s acks the message, so its work is lost; commit before returning and return the commit's error (or assign it to a named result in the deferred function)",
			commit, who))
	}
}

// namedResults returns the objects of ft's named results.
func namedResults(info *types.Info, ft *ast.FuncType) []types.Object {
	var out []types.Object
	if ft == nil || ft.Results == nil {
		return nil
	}
	for _, f := range ft.Results.List {
		for _, n := range f.Names {
			if obj := info.Defs[n]; obj != nil {
				out = append(out, obj)
			}
		}
	}
	return out
}

// assignsAny reports whether body assigns one of objs.
func assignsAny(info *types.Info, body *ast.BlockStmt, objs []types.Object) bool {
	for _, obj := range objs {
		if writes(info, body, obj) {
			return true
		}
	}
	return false
}

// endsProcessIn reports whether body panics or ends the process anywhere
// (outside nested literals): see endsProcess.
func endsProcessIn(body *ast.BlockStmt) bool {
	ends := false
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || ends {
			return false
		}
		if call, ok := n.(*ast.CallExpr); ok && endsProcess(call) {
			ends = true
		}
		return !ends
	})
	return ends
}

// batchFailures are the AWS batch operations that answer 200 with a part
// of their entries refused, and the output fields that say which: the
// refused entries are lost unless the caller reads them (AWS API
// references: EventBridge PutEvents FailedEntryCount, SNS PublishBatch and
// SQS SendMessageBatch Failed, Kinesis PutRecords FailedRecordCount,
// Firehose PutRecordBatch FailedPutCount, DynamoDB BatchWriteItem
// UnprocessedItems).
var batchFailures = map[string][]string{
	"PutEvents":        {"FailedEntryCount", "Entries"},
	"PublishBatch":     {"Failed", "Successful"},
	"SendMessageBatch": {"Failed", "Successful"},
	"PutRecords":       {"FailedRecordCount", "Records"},
	"PutRecordBatch":   {"FailedPutCount", "RequestResponses"},
	"BatchWriteItem":   {"UnprocessedItems"},
}

// partialBatch reports, on a consumer path, an AWS batch call whose output
// is never read for its refused entries (nor handed to another function or
// returned): the call succeeds with some entries refused, and the message
// is acked with them lost (field trial wave 6, serverless-sample-app H1).
func partialBatch(pass *analysis.Pass, r *reporter, root *Root, body *ast.BlockStmt) {
	info := pass.TypesInfo
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		var call *ast.CallExpr
		var out ast.Expr
		switch st := n.(type) {
		case *ast.AssignStmt:
			if len(st.Rhs) == 1 && len(st.Lhs) == 2 {
				call, _ = ast.Unparen(st.Rhs[0]).(*ast.CallExpr)
				out = st.Lhs[0]
			}
		case *ast.ExprStmt:
			call, _ = ast.Unparen(st.X).(*ast.CallExpr)
		}
		if call == nil {
			return true
		}
		fn := callee(info, call)
		if fn == nil {
			return true
		}
		path := funcPath(fn)
		if !strings.HasPrefix(path, pathAWSSvc) && !strings.HasPrefix(path, pathAWSv1Svc) && !awsOutputOf(fn) {
			return true
		}
		op := awsV1Op(fn.Name())
		fields, ok := batchFailures[op]
		if !ok {
			return true
		}
		if id, ok := out.(*ast.Ident); ok && id.Name != "_" {
			if obj := info.ObjectOf(id); obj != nil && readsFailures(info, body, obj, fields) {
				return true
			}
		}
		r.report(call, SeverityOf(root.Name, op), fmt.Sprintf(
			"%s can succeed with some entries refused, and the output's %s is never read: the refused entries are lost while the message is acked; read it and fail (or retry) the message when it is not zero",
			qualName(fn), fields[0]))
		return true
	})
}

// errNotNil matches a condition that holds only when err != nil (err an
// error value): `err != nil` alone or as the first operand of an &&.
func errNotNil(info *types.Info, cond ast.Expr) bool {
	bin, ok := ast.Unparen(cond).(*ast.BinaryExpr)
	if !ok {
		return false
	}
	if bin.Op == token.LAND {
		return errNotNil(info, bin.X)
	}
	if bin.Op != token.NEQ {
		return false
	}
	id, ok := ast.Unparen(bin.Y).(*ast.Ident)
	if !ok || id.Name != "nil" {
		return false
	}
	t := info.TypeOf(bin.X)
	return t != nil && isError(t)
}

// awsOutputOf reports whether fn, a function or method of the application
// (an interface over the SDK client, as aws-sdk-go-v2's docs suggest for
// stubbing), returns the SDK's output of the operation it is named after:
// PutEvents returning *eventbridge.PutEventsOutput.
func awsOutputOf(fn *types.Func) bool {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Results().Len() == 0 {
		return false
	}
	ptr, ok := sig.Results().At(0).Type().(*types.Pointer)
	if !ok {
		return false
	}
	named, ok := types.Unalias(ptr.Elem()).(*types.Named)
	if !ok || named.Obj().Pkg() == nil {
		return false
	}
	p := pkgPath(named.Obj().Pkg())
	return (strings.HasPrefix(p, pathAWSSvc) || strings.HasPrefix(p, pathAWSv1Svc)) && named.Obj().Name() == fn.Name()+"Output"
}

// readsFailures reports whether body reads one of fields of v, or hands v
// to a call or returns it (the reader may check it).
func readsFailures(info *types.Info, body *ast.BlockStmt, v types.Object, fields []string) bool {
	found := false
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *ast.IfStmt:
			if errNotNil(info, n.Cond) {
				// The output is nil when the call failed: a read in that
				// branch checks nothing. The init and the else are read.
				if n.Init != nil {
					ast.Inspect(n.Init, visit)
				}
				if n.Else != nil {
					ast.Inspect(n.Else, visit)
				}
				return false
			}
		case *ast.SelectorExpr:
			if id, ok := ast.Unparen(n.X).(*ast.Ident); ok && info.ObjectOf(id) == v && slices.Contains(fields, n.Sel.Name) {
				found = true
			}
		case *ast.CallExpr:
			for _, a := range n.Args {
				if id, ok := ast.Unparen(a).(*ast.Ident); ok && info.ObjectOf(id) == v {
					found = true
				}
			}
		case *ast.ReturnStmt:
			for _, res := range n.Results {
				if id, ok := ast.Unparen(res).(*ast.Ident); ok && info.ObjectOf(id) == v {
					found = true
				}
			}
		}
		return !found
	}
	ast.Inspect(body, visit)
	return found
}

// assignsError reports whether body assigns a value of type error to a
// variable (err = fmt.Errorf(...)), at any depth outside function
// literals: the failure is carried on to a later return.
func assignsError(info *types.Info, body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if t := info.TypeOf(l); t != nil && isError(t) {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// franzSkipsFetch reports, in a franz-go poll loop, a branch on the poll's
// errors (fs.Err(), fs.Errors(), fs.Err0()) that goes to the next poll
// (continue) without handling the poll's records, when what was polled is
// committed: by CommitUncommittedOffsets in the loop, or by the client's
// auto-commit (a kgo.NewClient in the package with neither
// DisableAutoCommit nor AutoCommitMarks). franz-go returns a partition's
// fetch error beside the other partitions' records (PollFetches: "it is
// important to check all partition errors"), and a poll moves the
// uncommitted offsets to what it returned, so the skipped records are
// committed unread (field trial, wave 36: wbTestCase H1). A branch that
// reads the client's closing (IsClientClosed) is not reported: a closed
// client returns no records.
func franzSkipsFetch(pass *analysis.Pass, c *Consumers, r *reporter, root *Root, loopBody *ast.BlockStmt) {
	info := pass.TypesInfo
	fetchesCall := func(n ast.Node, names ...string) bool {
		found := false
		ast.Inspect(n, func(m ast.Node) bool {
			if call, ok := m.(*ast.CallExpr); ok && !found {
				// The client's method, or the same method of the code's own
				// interface over it (rtsa_webgpu's KafkaClient, wave 59).
				if fn := callee(info, call); fn != nil && (funcPath(fn) == pathKgo || abstractMethod(fn)) && slices.Contains(names, fn.Name()) {
					found = true
				}
			}
			return !found
		})
		return found
	}
	if !fetchesCall(loopBody, "PollFetches", "PollRecords") {
		return
	}
	commit := ""
	if fetchesCall(loopBody, "CommitUncommittedOffsets") {
		commit = "CommitUncommittedOffsets"
	} else if made, auto := kgoClientIn(info, funcBody(root.Node)); made && auto || !made && (kgoAutoCommits(pass) || c.program != nil && c.program.kgoAutoCommit) {
		commit = "the client's auto-commit (franz-go's default, every 5 s)"
	} else {
		return
	}
	loopStmts(loopBody, func(st, _ ast.Stmt, _ []ast.Stmt) {
		ifs, ok := st.(*ast.IfStmt)
		if !ok || !continues(ifs.Body) {
			return
		}
		cond := &ast.BlockStmt{List: []ast.Stmt{&ast.ExprStmt{X: ifs.Cond}}}
		if ifs.Init != nil {
			cond.List = append(cond.List, ifs.Init)
		}
		if !fetchesCall(cond, "Err", "Errors", "Err0") || fetchesCall(cond, "IsClientClosed") {
			return
		}
		if fetchesCall(ifs.Body, "EachRecord", "Records", "EachPartition", "EachTopic", "RecordIter", "CommitRecords", "MarkCommitRecords") {
			return // the branch handles (or commits exactly) the records
		}
		r.report(ifs, SeverityOf(root.Name), fmt.Sprintf(
			"a poll whose fetches carry an error (if %s) is skipped whole (continue), and %s commits what the poll returned: franz-go returns one partition's error beside the other partitions' records, which are never handled; log the errors (EachError) and handle the records, or stop without committing",
			types.ExprString(ifs.Cond), commit))
	})
}

// kgoAutoCommits reports whether the package makes a franz-go client
// (kgo.NewClient) and never turns its auto-commit off (DisableAutoCommit)
// or down to marked records (AutoCommitMarks).
func kgoAutoCommits(pass *analysis.Pass) bool {
	return kgoAutoCommitsIn(pass.TypesInfo, pass.Files)
}

// kgoAutoCommitsIn is kgoAutoCommits over a package's files and types.
func kgoAutoCommitsIn(info *types.Info, files []*ast.File) bool {
	made, off := kgoClientOptions(info, files)
	return made && !off
}

// kgoClientIn reports whether body makes a franz-go client itself
// (kgo.NewClient in the loop's own function), and if so whether that
// client runs on its auto-commit (body turns it off nowhere: no
// DisableAutoCommit or AutoCommitMarks). A client made beside the loop
// speaks for it, whatever other clients of the package do (a new user's
// report: a safe twin's DisableAutoCommit hid an unsafe loop).
func kgoClientIn(info *types.Info, body *ast.BlockStmt) (made, auto bool) {
	if body == nil {
		return false, false
	}
	off := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if fn := callee(info, call); fn != nil && funcPath(fn) == pathKgo && recvName(fn) == "" {
				switch fn.Name() {
				case "NewClient":
					made = true
				case "DisableAutoCommit", "AutoCommitMarks":
					off = true
				}
			}
		}
		return true
	})
	return made, made && !off
}

// kgoClientOptions reports whether files make a franz-go client
// (kgo.NewClient), and whether they turn its auto-commit off
// (DisableAutoCommit) or down to marked records (AutoCommitMarks).
func kgoClientOptions(info *types.Info, files []*ast.File) (made, off bool) {
	filesCalls(info, files, func(_ *ast.CallExpr, fn *types.Func) {
		if funcPath(fn) == pathKgo && recvName(fn) == "" {
			switch fn.Name() {
			case "NewClient":
				made = true
			case "DisableAutoCommit", "AutoCommitMarks":
				off = true
			}
		}
	})
	return made, off
}

// naksAfter reports whether stmts, read in order up to the first return,
// branch or nested block, ask the broker for a redelivery of the message:
// a NATS Nak or NakWithDelay, a Watermill Nack, or an AMQP Nack or Reject
// that requeues, as a statement or in an if's init. A failure logged
// before it is not acked (field trial, wave 47: fyredocs' retry branch,
// whose failed status update falls through to `msg.NakWithDelay`).
func naksAfter(info *types.Info, stmts []ast.Stmt) bool {
	for _, st := range stmts {
		call := topCall(st)
		switch st.(type) {
		case *ast.IfStmt:
			if call == nil || !redelivers(info, call) {
				return false
			}
		case *ast.ReturnStmt, *ast.BranchStmt, *ast.BlockStmt, *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
			return false
		}
		if call != nil && redelivers(info, call) {
			return true
		}
	}
	return false
}

// redelivers reports whether call asks the broker to deliver its message
// again: NATS Msg.Nak or NakWithDelay (core or JetStream), Watermill's
// Message.Nack, amqp091's Delivery.Nack or Reject with requeue true.
func redelivers(info *types.Info, call *ast.CallExpr) bool {
	fn := callee(info, call)
	if fn == nil {
		return false
	}
	path, recv, name := funcPath(fn), recvName(fn), fn.Name()
	switch {
	case isNATS(path) && recv == "Msg" && (name == "Nak" || name == "NakWithDelay"):
		return true
	case strings.HasPrefix(path, pathWatermill) && recv == "Message" && name == "Nack":
		return true
	case isAMQP(path) && recv == "Delivery" && (name == "Nack" || name == "Reject") && len(call.Args) > 0:
		b, ok := info.Types[call.Args[len(call.Args)-1]]
		return ok && b.Value != nil && b.Value.Kind() == constant.Bool && constant.BoolVal(b.Value)
	}
	return false
}

// fallsBack reports whether body, a failure branch, assigns errObj anew
// from a call at its top level (`if err != nil { err = fallback(ctx) }`):
// a second attempt whose error the code goes on with.
func fallsBack(info *types.Info, body *ast.BlockStmt, errObj types.Object) bool {
	for _, st := range body.List {
		as, ok := st.(*ast.AssignStmt)
		if !ok || as.Tok != token.ASSIGN || len(as.Rhs) != 1 {
			continue
		}
		if _, isCall := ast.Unparen(as.Rhs[0]).(*ast.CallExpr); !isCall {
			continue
		}
		for _, l := range as.Lhs {
			if id, ok := ast.Unparen(l).(*ast.Ident); ok && info.ObjectOf(id) == errObj {
				return true
			}
		}
	}
	return false
}

// stmtNodes returns stmts as nodes.
func stmtNodes(stmts []ast.Stmt) []ast.Node {
	out := make([]ast.Node, len(stmts))
	for i, st := range stmts {
		out[i] = st
	}
	return out
}

// settlesIn reports whether body, outside function literals, settles the
// message other than with an ack: a redelivery request (see redelivers),
// an AMQP Nack or Reject whatever its requeue flag (a dead-letter exchange
// takes the message when it does not requeue), or a NATS Term.
func settlesIn(info *types.Info, body *ast.BlockStmt) bool {
	return callIn(body, func(call *ast.CallExpr) bool {
		if redelivers(info, call) {
			return true
		}
		fn := callee(info, call)
		if fn == nil {
			return false
		}
		path, recv, name := funcPath(fn), recvName(fn), fn.Name()
		return isAMQP(path) && recv == "Delivery" && (name == "Nack" || name == "Reject") || isNATS(path) && recv == "Msg" && name == "Term"
	})
}
