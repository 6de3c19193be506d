package ackgapvet

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// CommitOrderAnalyzer reports Kafka offset commits made out of order by
// concurrent goroutines.
var CommitOrderAnalyzer = newAnalyzer("commitorder",
	`report Kafka offsets marked or committed out of order by concurrent goroutines

Kafka commits an offset per partition, not a set of messages: committing
offset n says every message before n is done. Several goroutines that fetch
from one kafka-go Reader, one franz-go or confluent-kafka-go client or one
Sarama claim and each commit the message they finished, or a goroutine
started per message that marks its own message, commit in the order the
work ends, not the order of the partition: a fast message's commit passes
over a slow one still in work, and a crash or rebalance then loses the slow
one (kafka-go and Sarama keep the highest offset marked; franz-go ignores a
mark below the current one). So do workers started in a loop that all
take messages from one channel and each mark those they finished.
Goroutines that each own a reader or a partition are not reported. Fix: commit from one place in partition order
(a watermark: the lowest offset still in work), or keep one goroutine per
partition and hand work out by key, as ackgap's key-parallel consumer does.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
		ins.WithStack([]ast.Node{(*ast.GoStmt)(nil), (*ast.CallExpr)(nil)}, func(n ast.Node, push bool, stack []ast.Node) bool {
			if !push {
				return true
			}
			g, ok := n.(*ast.GoStmt)
			if !ok {
				if msg := kqProcessors(pass.TypesInfo, n.(*ast.CallExpr), funcBody(starterOf(stack))); msg != "" {
					r.report(n, SeverityOf(enclosingName(stack)), msg)
					return true
				}
				if g = poolSubmit(pass.TypesInfo, n.(*ast.CallExpr)); g == nil {
					return true
				}
			}
			loop := innermostLoop(stack)
			if loop == nil {
				return true
			}
			body, bind := goroutineFunc(pass.TypesInfo, c, g)
			if body == nil {
				// A worker given as a function value: its body is not
				// here, but handing one reader to every goroutine of a
				// loop is the shared-reader pool.
				if src := sharedReaderArg(pass.TypesInfo, g, loop); src != nil {
					r.report(g, SeverityOf(enclosingName(stack)), fmt.Sprintf(
						"starts goroutines in a loop that all get the reader %s: each worker that fetches from it and commits its own messages commits in the order the work ends, so a later offset's commit passes over a message still in work in another worker, and a crash loses it; commit from one place in partition order (the lowest offset still in work), or give each worker its own reader",
						types.ExprString(src)))
				}
				return true
			}
			ack, ackAt := kafkaAckCall(pass.TypesInfo, body)
			if ack == "" {
				return true
			}
			line := pass.Fset.Position(ackAt.Pos()).Line
			if src := kafkaReceiveIn(pass.TypesInfo, body); src != nil {
				// Workers that fetch for themselves: shared when the source
				// they fetch from is one value for every iteration.
				o := origin(pass.TypesInfo, src, body, bind)
				if o == nil || within(o.Pos(), loop) {
					return true
				}
				r.report(g, SeverityOf(enclosingName(stack)), fmt.Sprintf(
					"starts goroutines in a loop that all fetch from %s and each commits its own messages (%s at line %d): commits land in the order the work ends, so a later offset's commit passes over a message still in work in another goroutine, and a crash loses it; commit from one place in partition order (the lowest offset still in work), or give each goroutine its own partitions",
					types.ExprString(src), ack, line))
				return true
			}
			if ch := sharedChanRecv(pass.TypesInfo, body, bind, loop); ch != nil && kafkaReceiveIn(pass.TypesInfo, loop) == nil {
				// A pool of workers fed by one channel: the loop that
				// starts them is not the one that receives.
				r.report(g, SeverityOf(enclosingName(stack)), fmt.Sprintf(
					"starts workers in a loop that all take messages from the channel %s and each marks or commits those it finished (%s at line %d): one partition's messages are spread over the workers, so a later offset's mark passes over a message still in work (or failing) in another worker, and a crash or rebalance loses it; commit from one place in partition order (the lowest offset still in work), or route each partition (or key) to one worker",
					types.ExprString(ch), ack, line))
				return true
			}
			if kafkaReceiveIn(pass.TypesInfo, funcBody(starterOf(stack))) == nil || !carriesLoopMessage(pass.TypesInfo, g, loop) {
				return true
			}
			r.report(g, SeverityOf(enclosingName(stack)), fmt.Sprintf(
				"starts a goroutine per message that marks or commits its own message (%s at line %d): marks land in the order the work ends, so a later message's commit passes over an earlier one still in work, and a crash loses it; commit in partition order (the lowest offset still in work) from the loop, or process a partition's messages in order",
				ack, line))
			return true
		})
	})

// kqProcessors returns the finding for a go-queue kq queue made with
// more than one processor and commits out of order, "" for any other
// call. kq hands each fetched message to KqConf.Processors goroutines (8
// by default: its json tag's default) that each commit the message they
// finished; v1.2's KqConf.CommitInOrder commits in partition order
// instead. A KqConf literal (in the call, or in a variable of body, the
// function around it, with the fields body assigns after it) with
// Processors: 1 or CommitInOrder: true is not reported; a KqConf from
// anywhere else (go-zero's conf.MustLoad) is judged by the configuration
// files near the call (see dropKqInOrder). Field trials, waves 14 to 37:
// Go-zero-IM, kk-forum, TikTok, easy-chat.
func kqProcessors(info *types.Info, call *ast.CallExpr, body *ast.BlockStmt) string {
	fn := callee(info, call)
	if fn == nil || len(call.Args) < 2 || fn.Name() != "MustNewQueue" && fn.Name() != "NewQueue" {
		return ""
	}
	if path := funcPath(fn); path != pathGoQueueKq && path != "github.com/tal-tech/go-queue/kq" {
		return ""
	}
	conf := info.TypeOf(call.Args[0])
	if conf == nil {
		return ""
	}
	st, ok := conf.Underlying().(*types.Struct)
	if !ok {
		return ""
	}
	inOrder := false
	for i := range st.NumFields() {
		inOrder = inOrder || st.Field(i).Name() == "CommitInOrder"
	}
	fix := "set KqConf.CommitInOrder (go-queue v1.2 and later) so offsets are committed in partition order, or Processors: 1"
	if !inOrder {
		fix = "set KqConf.Processors to 1, or move to go-queue v1.2 and set CommitInOrder"
	}
	fields, literal := kqConfFields(info, call.Args[0], body)
	if fields["Processors"] == "1" || fields["CommitInOrder"] == "true" {
		return ""
	}
	how := kqFromConfig
	if literal {
		how = "this KqConf, built in the code, sets neither Processors: 1 nor CommitInOrder"
	}
	return fmt.Sprintf(
		"go-queue's kq consumes this queue with KqConf.Processors goroutines (8 by default; %s), each committing the message it finished: commits land in the order the work ends, so a later offset's commit passes over a message still in work, and a crash or rebalance loses it; %s",
		how, fix)
}

// kqFromConfig marks the kq finding whose KqConf comes from configuration
// (see dropKqInOrder).
const kqFromConfig = "its KqConf comes from configuration, and no file near this call sets Processors: 1 or CommitInOrder"

// kqConfFields returns the constant values of the KqConf fields conf sets
// (Processors, CommitInOrder: "1", "true"), and whether conf is built in
// the code: a composite literal, or a local variable of body declared from
// one, with the field assignments body makes to it (c.Processors = 1).
func kqConfFields(info *types.Info, conf ast.Expr, body *ast.BlockStmt) (map[string]string, bool) {
	fields := map[string]string{}
	set := func(key string, v ast.Expr) {
		if tv := info.Types[v]; tv.Value != nil {
			fields[key] = tv.Value.String()
		} else {
			fields[key] = "?"
		}
	}
	read := func(lit *ast.CompositeLit) {
		for _, e := range lit.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				if key, ok := kv.Key.(*ast.Ident); ok {
					set(key.Name, kv.Value)
				}
			}
		}
	}
	if lit, ok := ast.Unparen(conf).(*ast.CompositeLit); ok {
		read(lit)
		return fields, true
	}
	obj := identObj(info, conf)
	if obj == nil || body == nil {
		return fields, false
	}
	literal := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if i >= len(n.Rhs) || len(n.Lhs) != len(n.Rhs) {
					break
				}
				if identObj(info, l) == obj {
					if lit, ok := ast.Unparen(n.Rhs[i]).(*ast.CompositeLit); ok {
						read(lit)
						literal = true
					}
				} else if sel, ok := l.(*ast.SelectorExpr); ok && identObj(info, sel.X) == obj {
					set(sel.Sel.Name, n.Rhs[i])
				}
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if info.Defs[name] == obj && i < len(n.Values) {
					if lit, ok := ast.Unparen(n.Values[i]).(*ast.CompositeLit); ok {
						read(lit)
						literal = true
					}
				}
			}
		}
		return true
	})
	return fields, literal
}

// poolSubmitNames are the methods that run a function in a goroutine of
// their own: a worker pool's Submit (alitto/pond, panjf2000/ants,
// gammazero/workerpool), errgroup's and sourcegraph/conc's Go.
var poolSubmitNames = map[string]bool{"Submit": true, "TrySubmit": true, "SubmitErr": true, "Go": true, "TryGo": true}

// poolSubmit returns, for a call that hands a function literal to a
// worker pool (see poolSubmitNames; go-zero's RoutineGroup.Run and
// RunSafe too), a go statement that starts that
// literal at the call, for the rules written for go statements; nil for
// any other call.
func poolSubmit(info *types.Info, call *ast.CallExpr) *ast.GoStmt {
	fn := callee(info, call)
	if fn == nil || !poolSubmitNames[fn.Name()] && !goZeroGoroutine(fn) || recvName(fn) == "" || len(call.Args) != 1 {
		return nil
	}
	lit, ok := ast.Unparen(call.Args[0]).(*ast.FuncLit)
	if !ok {
		return nil
	}
	return &ast.GoStmt{Go: call.Pos(), Call: &ast.CallExpr{Fun: lit, Lparen: lit.End(), Rparen: lit.End()}}
}

// innermostLoop returns the innermost for or range statement around the
// top of stack inside the same function, or nil.
func innermostLoop(stack []ast.Node) ast.Node {
	for i := len(stack) - 2; i >= 0; i-- {
		switch n := stack[i].(type) {
		case *ast.ForStmt, *ast.RangeStmt:
			return n
		case *ast.FuncLit, *ast.FuncDecl:
			return nil
		}
	}
	return nil
}

// starterOf returns the function declaration or literal on stack
// nearest its top.
func starterOf(stack []ast.Node) ast.Node {
	for i := len(stack) - 1; i >= 0; i-- {
		switch stack[i].(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			return stack[i]
		}
	}
	return stack[0]
}

// enclosingName returns the name of the function declaration on stack, for
// severity.
func enclosingName(stack []ast.Node) string {
	for i := len(stack) - 1; i >= 0; i-- {
		if fd, ok := stack[i].(*ast.FuncDecl); ok {
			return fd.Name.Name
		}
	}
	return ""
}

// goroutineFunc returns the body of the function g starts (a function
// literal, or a function or method declared in this package) and a binding
// from that function's parameters and receiver to the expressions g passes.
func goroutineFunc(info *types.Info, c *Consumers, g *ast.GoStmt) (*ast.BlockStmt, map[types.Object]ast.Expr) {
	bind := map[types.Object]ast.Expr{}
	var ft *ast.FuncType
	var body *ast.BlockStmt
	switch f := ast.Unparen(g.Call.Fun).(type) {
	case *ast.FuncLit:
		ft, body = f.Type, f.Body
	default:
		fn := callee(info, g.Call)
		if fn == nil {
			return nil, nil
		}
		d := c.decls[fn.Origin()]
		if d == nil {
			return nil, nil
		}
		ft, body = d.Type, d.Body
		if sel, ok := f.(*ast.SelectorExpr); ok && d.Recv != nil && len(d.Recv.List) == 1 && len(d.Recv.List[0].Names) == 1 {
			if o := info.Defs[d.Recv.List[0].Names[0]]; o != nil {
				bind[o] = sel.X
			}
		}
	}
	i := 0
	for _, field := range ft.Params.List {
		for _, name := range field.Names {
			if o := info.Defs[name]; o != nil && i < len(g.Call.Args) {
				bind[o] = g.Call.Args[i]
			}
			i++
		}
		if len(field.Names) == 0 {
			i++
		}
	}
	return body, bind
}

// sharedReaderArg returns the argument of g that is a Kafka reader, claim
// or consumer client (kafka-go *Reader, Sarama ConsumerGroupClaim,
// franz-go *Client, confluent-kafka-go *Consumer) made outside loop, or
// nil.
func sharedReaderArg(info *types.Info, g *ast.GoStmt, loop ast.Node) ast.Expr {
	for _, a := range g.Call.Args {
		t := info.TypeOf(a)
		if t == nil {
			continue
		}
		if !isNamed(t, pathKafkaGo, "Reader") && !isNamed(t, "github.com/IBM/sarama", "ConsumerGroupClaim") && !isNamed(t, "github.com/Shopify/sarama", "ConsumerGroupClaim") &&
			!isNamed(t, pathKgo, "Client") && !isNamed(t, pathConfluent, "Consumer") && !isNamed(t, pathConfluent1, "Consumer") {
			continue
		}
		if o := rootObject(info, a); o != nil && !within(o.Pos(), loop) {
			return a
		}
	}
	return nil
}

// kafkaAckCall returns the first Kafka offset mark or commit in body
// (outside nested function literals) and the call.
func kafkaAckCall(info *types.Info, body *ast.BlockStmt) (string, ast.Node) {
	var at ast.Node
	name := ""
	ast.Inspect(body, func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok || name != "" {
			return false
		}
		if call, ok := m.(*ast.CallExpr); ok {
			if fn := callee(info, call); fn != nil && ackOf(info, call) != "" && (isKafkaClient(funcPath(fn)) || appKafkaMethod(fn)) {
				name, at = qualName(fn), call
			}
		}
		return name == ""
	})
	return name, at
}

// sharedChanRecv returns the channel a goroutine's body ranges over or
// receives from (outside nested function literals) when it is one value
// for every goroutine the loop starts: a variable of the starter bound or
// captured from outside loop. A channel picked per iteration (chans[p],
// one made in the loop) is the goroutine's own; nil then, and when the body
// receives from no channel.
func sharedChanRecv(info *types.Info, body *ast.BlockStmt, bind map[types.Object]ast.Expr, loop ast.Node) ast.Expr {
	var ch ast.Expr
	ast.Inspect(body, func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok || ch != nil {
			return false
		}
		var x ast.Expr
		switch m := m.(type) {
		case *ast.RangeStmt:
			x = m.X
		case *ast.UnaryExpr:
			if m.Op == token.ARROW {
				x = m.X
			}
		}
		if x == nil {
			return true
		}
		if _, isChan := types.Unalias(info.TypeOf(x)).Underlying().(*types.Chan); !isChan {
			return true
		}
		switch ast.Unparen(x).(type) {
		case *ast.Ident, *ast.SelectorExpr:
		default:
			return true
		}
		if o := origin(info, x, body, bind); o != nil && !within(o.Pos(), loop) {
			if e, bound := bind[rootObject(info, x)]; !bound || plainRef(e) {
				ch = x
			}
		}
		return ch == nil
	})
	return ch
}

// plainRef reports whether e names a value (an identifier or a field), not
// one picked by an index or made by a call.
func plainRef(e ast.Expr) bool {
	switch ast.Unparen(e).(type) {
	case *ast.Ident, *ast.SelectorExpr:
		return true
	}
	return false
}

// kafkaReceiveIn returns the value n fetches Kafka messages from (outside
// nested function literals): the receiver of a kafka-go FetchMessage or
// ReadMessage, a franz-go PollFetches or PollRecords, a confluent-kafka-go
// Poll or ReadMessage, or the claim or partition consumer whose Messages()
// channel a range or receive reads. It returns nil when n fetches nothing.
func kafkaReceiveIn(info *types.Info, n ast.Node) ast.Expr {
	var src ast.Expr
	ast.Inspect(n, func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok || src != nil {
			return false
		}
		call, ok := m.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		fn := callee(info, call)
		if !ok || fn == nil {
			return true
		}
		path, recv, name := funcPath(fn), recvName(fn), fn.Name()
		switch {
		case path == pathKafkaGo && recv == "Reader" && (name == "FetchMessage" || name == "ReadMessage"),
			path == pathKgo && recv == "Client" && (name == "PollFetches" || name == "PollRecords"),
			isConfluent(path) && recv == "Consumer" && (name == "Poll" || name == "ReadMessage"),
			isSaramaPath(path) && name == "Messages" && (recv == "ConsumerGroupClaim" || recv == "PartitionConsumer"):
			src = sel.X
		}
		return src == nil
	})
	return src
}

// origin returns the object in the goroutine's starter that src (an
// expression inside the goroutine's body) comes from: the variable a
// parameter or receiver was bound to at the go statement, or a variable the
// body captures. It returns nil when src is made inside the body (each
// goroutine has its own).
func origin(info *types.Info, src ast.Expr, body *ast.BlockStmt, bind map[types.Object]ast.Expr) types.Object {
	o := rootObject(info, src)
	if o == nil {
		return nil
	}
	if e, ok := bind[o]; ok {
		return rootObject(info, e)
	}
	if o.Pos() >= body.Pos() && o.Pos() < body.End() {
		return nil
	}
	return o
}

// rootObject returns the variable at the base of a selector, index or
// dereference chain (c in c.reader, r in *r), or nil.
func rootObject(info *types.Info, e ast.Expr) types.Object {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			if v, ok := info.Uses[x].(*types.Var); ok {
				return v
			}
			if v, ok := info.Defs[x].(*types.Var); ok {
				return v
			}
			return nil
		case *ast.SelectorExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.CallExpr:
			e = x.Fun
		default:
			return nil
		}
	}
}

// within reports whether pos lies inside n.
func within(pos token.Pos, n ast.Node) bool {
	return pos >= n.Pos() && pos < n.End()
}

// carriesLoopMessage reports whether g hands the goroutine a message
// received in loop: an argument of a message type, or a message variable
// declared in the loop that a function literal captures.
func carriesLoopMessage(info *types.Info, g *ast.GoStmt, loop ast.Node) bool {
	for _, a := range g.Call.Args {
		if carriesMessage(info, a) {
			return true
		}
	}
	lit, ok := ast.Unparen(g.Call.Fun).(*ast.FuncLit)
	if !ok {
		return false
	}
	found := false
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if v, ok := info.Uses[id].(*types.Var); ok && within(v.Pos(), loop) && !within(v.Pos(), lit) && (isMessageType(v.Type()) || isMessageType(elemType(v.Type()))) {
				found = true
			}
		}
		return !found
	})
	return found
}

// elemType returns what a pointer or slice type holds, or t.
func elemType(t types.Type) types.Type {
	switch u := t.Underlying().(type) {
	case *types.Pointer:
		return u.Elem()
	case *types.Slice:
		return u.Elem()
	}
	return t
}
