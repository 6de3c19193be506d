package ackgapvet

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// Acks on a nil result, below the entry point (whole-program mode).
//
// errack reports a `return nil` on a failed write as an ack only where the
// nil is the ack: the entry function of a framework that acks on a nil
// return. A receive loop that commits when its processing function
// returns nil acks on that function's nil as well, and so on down every
// call whose error the caller returns: a callee three calls below the
// loop that logs a failed write and returns nil loses the message just
// the same (field trial, wave 4: cloud-connector H2, H3).

// nilAcks returns, for the functions rw reaches, the name of the function
// that acks their message when they return a nil error: fn is in the map
// when its caller acks right after the call unless its error is non-nil
// (`if err := fn(m); err != nil { return }` then the commit), or when its
// caller is itself in the map (or an entry point that acks on a nil
// return) and returns fn's error. Functions reached through a go
// statement or a channel are not: their result is nobody's.
//
// always lists those of them whose message is acked after they return
// whatever they return: the caller discards their result and acks after
// the call (`h.Handle(m)` then the delete), or returns their error to a
// caller that does, or the function has no result at all and its caller
// acks on its own nil (`u.saveOffline(ctx, m); return nil`).
//
// tail lists those whose error the entry point returns as its own result
// with no branch of its own (`return l.operate(ctx, v)`), so a failure
// branch in them is the entry's (see errack's kq rule).
func (w *wholeProgram) nilAcks(rw *rootWalk) (out map[*ssa.Function]string, always, tail map[*ssa.Function]bool) {
	out = map[*ssa.Function]string{}
	always = map[*ssa.Function]bool{}
	tail = map[*ssa.Function]bool{}
	if returnAcks(rw.root.Kind) {
		out[rw.entry] = rw.root.Name
	}
	autoAcker := w.autoCommitAcker(rw)
	if autoAcker != "" {
		out[rw.entry], always[rw.entry] = autoAcker, true
	}
	for _, fn := range rw.order {
		if fn == rw.entry || !w.inApp(fn) || isWrapper(fn) {
			continue
		}
		// Through a bound-method wrapper, the call site is the wrapper's.
		p, pos := rw.parent[fn], rw.via[fn]
		for p != nil && isWrapper(p) {
			p, pos = rw.parent[p], rw.via[p]
		}
		if p == nil || !w.inApp(p) {
			continue
		}
		if autoAcker != "" && p == rw.entry && rw.async[fn] {
			// A worker the loop starts or hands messages to: the
			// background commit moves past its message whatever it does,
			// so a failure it drops or only logs is lost (field trial,
			// wave 28: email-service's worker, `_ = uc.Execute(...)`).
			out[fn], always[fn] = autoAcker, true
			continue
		}
		body := funcBody(p.Syntax())
		pkg := w.pkgInfo(p)
		if body == nil || pkg == nil || pkg.TypesInfo == nil {
			continue
		}
		stack := callStack(body, pos)
		if len(stack) < 2 {
			continue
		}
		if _, isGo := stack[len(stack)-2].(*ast.GoStmt); isGo || w.libraryCallback(p, pos) {
			continue // its result is nobody's (a go statement, errgroup's Go, go-zero's RoutineGroup.Run)
		}
		info := pkg.TypesInfo
		acker, pAcked := out[p]
		switch {
		case pAcked && always[p] && (discarded(stack) || returnsCallError(info, stack)):
			out[fn], always[fn] = acker, true
		case pAcked && returnsCallError(info, stack):
			out[fn] = acker
			tail[fn] = p == rw.entry && returnedDirectly(stack)
		case pAcked && discarded(stack) && fn.Signature.Results().Len() == 0:
			// A function with no result cannot stop the ack: a failure
			// it only logs is acked with the rest of the message (field
			// trial, waves 24 and 25: IM H3, stablesando H5).
			out[fn], always[fn] = acker, true
		case gatesAck(info, stack, w.acks):
			out[fn] = shortName(p)
		case pAcked && p == rw.entry && isLambda(rw.root.Kind) && listsFailure(info, stack):
			// A Lambda handler's loop over its records names a record as
			// failed when fn fails and returns one response after the
			// loop: fn's nil acks its record (field trial, wave 30:
			// event-driven-ec-shop's HandleEvent).
			out[fn] = acker
		case discarded(stack) && w.acks(info, after(stack), 2):
			out[fn], always[fn] = shortName(p), true
		case autoAcker != "" && p == rw.entry && (discarded(stack) || onlyLogged(info, stack)):
			out[fn], always[fn] = autoAcker, true
		}
	}
	return out, always, tail
}

// autoCommitPrefix starts the acker of a loop whose offsets are committed
// in the background (see autoCommitAcker); errack's fix for it differs.
const autoCommitPrefix = "the auto-commit"

// autoCommitAcker names the background commit of an entry point whose
// offsets are committed whatever its work does, "" for others: a
// confluent-kafka-go poll loop with no commit or offset store anywhere on
// its walk (librdkafka's enable.auto.commit and enable.auto.offset.store,
// both on by default, commit every offset Poll returned), and a kafka-go
// loop that reads with ReadMessage and never commits (with a GroupID it
// commits as it returns). A function the loop calls whose failure is
// dropped there is acked all the same: only a crash stops the commit.
func (w *wholeProgram) autoCommitAcker(rw *rootWalk) string {
	var what string
	switch rw.root.Kind {
	case KindConfluent:
		// A package that turns the commit or the offset store off commits
		// nothing in the background (confluentNeverCommits reports one
		// that then never commits at all).
		if e := rw.entry; e.Pkg != nil && w.info[e.Pkg.Pkg] != nil && commitTurnedOff(w.info[e.Pkg.Pkg].TypesInfo, w.info[e.Pkg.Pkg].Syntax) {
			return ""
		}
		what = autoCommitPrefix + " of librdkafka (enable.auto.commit, on by default, commits every offset Poll returned)"
	case KindKafkaGo:
		what = autoCommitPrefix + " of kafka-go's ReadMessage (with a GroupID it commits the offset as it returns)"
	case KindFranz:
		// A client made with neither DisableAutoCommit nor
		// AutoCommitMarks, in the loop's package, commits every 5 s what
		// the polls returned (field trial, wave 54: JL's rules
		// evaluator, whose failed evaluation was only logged).
		if !w.kgoAutoCommitAt(rw.entry) {
			return ""
		}
		what = autoCommitPrefix + " of franz-go (on by default, it commits every 5 s what the polls returned)"
	default:
		return ""
	}
	acked, reads := w.walkAcks(rw)
	if acked || rw.root.Kind == KindKafkaGo && !reads {
		return ""
	}
	return what
}

// walkCommits reports whether a function of the module on rw's walk
// commits a confluent-kafka-go consumer's offsets (Commit, CommitMessage,
// CommitOffsets: a StoreMessage or StoreOffsets only stores them).
func (w *wholeProgram) walkCommits(rw *rootWalk) bool {
	return w.walkCalls(rw, func(info *types.Info, c *ast.CallExpr) bool {
		f := callee(info, c)
		return f != nil && confluentConsumerMethod(f) && strings.HasPrefix(f.Name(), "Commit")
	})
}

// walkAcks reports whether a function of the module on rw's walk acks (a
// commit, an offset mark or store, a delete: see ackOf), and whether one
// reads with kafka-go's ReadMessage.
func (w *wholeProgram) walkAcks(rw *rootWalk) (acked, reads bool) {
	acked = w.walkCalls(rw, func(info *types.Info, c *ast.CallExpr) bool { return ackOf(info, c) != "" })
	reads = w.walkCalls(rw, func(info *types.Info, c *ast.CallExpr) bool {
		f := callee(info, c)
		return f != nil && funcPath(f) == pathKafkaGo && f.Name() == "ReadMessage"
	})
	return acked, reads
}

// walkCalls reports whether a function of the module on rw's walk makes,
// in its body (function literals in it included), a call that accepts
// takes.
func (w *wholeProgram) walkCalls(rw *rootWalk, accepts func(*types.Info, *ast.CallExpr) bool) bool {
	for _, fn := range rw.order {
		if !w.inApp(fn) {
			continue
		}
		body := funcBody(fn.Syntax())
		p := w.pkgInfo(fn)
		if body == nil || p == nil || p.TypesInfo == nil {
			continue
		}
		found := false
		ast.Inspect(body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok && !found && accepts(p.TypesInfo, c) {
				found = true
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// onlyLogged reports whether the error of the call at the end of stack is
// checked by a branch that does not leave the loop or the function (it
// logs, counts, and the loop goes on to its next message).
func onlyLogged(info *types.Info, stack []ast.Node) bool {
	ifs, neq, _ := errCheck(info, stack)
	return ifs != nil && neq && !hasReturn(ifs.Body) && !stopsLoop(ifs.Body)
}

// discarded reports whether the call at the end of stack is a statement of
// its own, or assigned to blanks only (`_ = svc.Fanout(ctx, m)`): whatever
// it returns is dropped.
func discarded(stack []ast.Node) bool {
	switch st := stack[len(stack)-2].(type) {
	case *ast.ExprStmt:
		return true
	case *ast.AssignStmt:
		return len(st.Rhs) == 1 && ast.Unparen(st.Rhs[0]) == stack[len(stack)-1] && !slices.ContainsFunc(st.Lhs, func(e ast.Expr) bool { return !isBlank(e) })
	}
	return false
}

// callStack returns the nodes from body down to the call whose left
// parenthesis is at pos (an SSA call's position), the call last; nil if
// there is none outside nested function literals.
func callStack(body *ast.BlockStmt, pos token.Pos) []ast.Node {
	var stack, found []ast.Node
	ast.Inspect(body, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		stack = append(stack, n)
		if c, ok := n.(*ast.CallExpr); ok && c.Lparen == pos {
			found = append([]ast.Node(nil), stack...)
		}
		return true
	})
	return found
}

// errCheck finds, for the call at the end of stack, the check of its error:
// `if err := call; err != nil {...}` or `err := call` followed by `if err
// != nil {...}` (also `== nil`). It returns the if statement, whether the
// condition is `!= nil`, and the statements after the if in its block.
func errCheck(info *types.Info, stack []ast.Node) (*ast.IfStmt, bool, []ast.Stmt) {
	call := stack[len(stack)-1].(*ast.CallExpr)
	if len(stack) < 3 {
		return nil, false, nil
	}
	as, ok := stack[len(stack)-2].(*ast.AssignStmt)
	if !ok || len(as.Rhs) != 1 || ast.Unparen(as.Rhs[0]) != call {
		return nil, false, nil
	}
	errVar := errorLHS(info, as)
	if errVar == nil {
		return nil, false, nil
	}
	var ifs *ast.IfStmt
	var rest []ast.Stmt
	if s, ok := stack[len(stack)-3].(*ast.IfStmt); ok && s.Init == as {
		ifs = s
		rest = following(stack[:len(stack)-3], s)
	} else {
		next := following(stack[:len(stack)-2], as)
		if len(next) == 0 {
			return nil, false, nil
		}
		s, ok := next[0].(*ast.IfStmt)
		if !ok || s.Init != nil {
			return nil, false, nil
		}
		ifs, rest = s, next[1:]
	}
	be, ok := ast.Unparen(ifs.Cond).(*ast.BinaryExpr)
	if !ok || (be.Op != token.NEQ && be.Op != token.EQL) {
		return nil, false, nil
	}
	id, ok := ast.Unparen(be.X).(*ast.Ident)
	if !ok || info.ObjectOf(id) != errVar {
		return nil, false, nil
	}
	if nilID, ok := ast.Unparen(be.Y).(*ast.Ident); !ok || nilID.Name != "nil" {
		return nil, false, nil
	}
	return ifs, be.Op == token.NEQ, rest
}

// errorLHS returns the variable an assignment gives the call's last
// result to when that result is an error, or nil.
func errorLHS(info *types.Info, as *ast.AssignStmt) types.Object {
	if len(as.Lhs) == 0 {
		return nil
	}
	id, ok := ast.Unparen(as.Lhs[len(as.Lhs)-1]).(*ast.Ident)
	if !ok || id.Name == "_" {
		return nil
	}
	obj := info.ObjectOf(id)
	if obj == nil || !types.Identical(obj.Type(), types.Universe.Lookup("error").Type()) {
		return nil
	}
	return obj
}

// following returns the statements after st in the block that holds it,
// the innermost block of stack (the nodes above st).
func following(stack []ast.Node, st ast.Stmt) []ast.Stmt {
	if len(stack) == 0 {
		return nil
	}
	block, ok := stack[len(stack)-1].(*ast.BlockStmt)
	if !ok {
		return nil
	}
	for i, s := range block.List {
		if s == st {
			return block.List[i+1:]
		}
	}
	return nil
}

// after returns the statements that run after the call statement at the
// end of stack: those after it in its block or case, then those after each
// enclosing statement in its own block or case, up to the function body
// (`switch kind { case "a": h.A(m) }` then the delete). It stops at a
// block whose rest leaves it (a return, break, continue or goto): what
// follows the enclosing statement does not run after the call
// (`if err != nil { h.fail(m); return }` then the ack: field trial, wave
// 47, fyredocs' handleFailure).
func after(stack []ast.Node) []ast.Stmt {
	var out []ast.Stmt
	for i := len(stack) - 2; i >= 1; i-- {
		st, ok := stack[i].(ast.Stmt)
		if !ok {
			continue
		}
		var list []ast.Stmt
		switch b := stack[i-1].(type) {
		case *ast.BlockStmt:
			list = b.List
		case *ast.CaseClause:
			list = b.Body
		case *ast.CommClause:
			list = b.Body
		default:
			continue
		}
		for j, s := range list {
			if s == st {
				out = append(out, list[j+1:]...)
				if slices.ContainsFunc(list[j+1:], func(s ast.Stmt) bool {
					switch s.(type) {
					case *ast.ReturnStmt, *ast.BranchStmt:
						return true
					}
					return false
				}) {
					return out
				}
			}
		}
	}
	return out
}

// returnsCallError reports whether the function returns the error of the
// call at the end of stack: `return call(...)`, or a check of its error
// whose branch returns an error (the error itself or a wrapped one).
func returnsCallError(info *types.Info, stack []ast.Node) bool {
	call := stack[len(stack)-1]
	if returnedDirectly(stack) {
		return true
	}
	ifs, neq, _ := errCheck(info, stack)
	if ifs != nil && neq && returnsError(info, ifs.Body) {
		return true
	}
	// err = call(...) in one branch, `return err` (or a wrap of it) later.
	if as, ok := stack[len(stack)-2].(*ast.AssignStmt); ok && len(as.Rhs) == 1 && ast.Unparen(as.Rhs[0]) == call {
		if errVar := errorLHS(info, as); errVar != nil {
			return returnsVar(info, stack[0], errVar)
		}
	}
	return false
}

// returnedDirectly reports whether the call at the end of stack is the
// last result of the return statement around it: `return call(...)`.
func returnedDirectly(stack []ast.Node) bool {
	if len(stack) < 2 {
		return false
	}
	ret, ok := stack[len(stack)-2].(*ast.ReturnStmt)
	return ok && len(ret.Results) > 0 && ast.Unparen(ret.Results[len(ret.Results)-1]) == stack[len(stack)-1]
}

// returnsVar reports whether a return statement in body (outside function
// literals) returns v as its last result, or a call of which v is an
// argument (fmt.Errorf("...: %w", v)).
func returnsVar(info *types.Info, body ast.Node, v types.Object) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || found {
			return false
		}
		ret, ok := n.(*ast.ReturnStmt)
		if !ok || len(ret.Results) == 0 {
			return true
		}
		last := ast.Unparen(ret.Results[len(ret.Results)-1])
		if id, ok := last.(*ast.Ident); ok && info.ObjectOf(id) == v {
			found = true
		}
		if c, ok := last.(*ast.CallExpr); ok {
			for _, a := range c.Args {
				if id, ok := ast.Unparen(a).(*ast.Ident); ok && info.ObjectOf(id) == v {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// gatesAck reports whether the call at the end of stack decides an ack:
// its error is checked, the failing branch leaves without acking, and the
// statements after the check (or, for `err == nil`, the branch) ack.
func gatesAck(info *types.Info, stack []ast.Node, acks func(*types.Info, []ast.Stmt, int) bool) bool {
	ifs, neq, rest := errCheck(info, stack)
	if ifs == nil {
		return false
	}
	if !neq {
		return acks(info, ifs.Body.List, 2)
	}
	// A failure branch that dead-letters the message and acks it gates
	// the ack as well: fn's nil acks the message with no dead-letter
	// record (field trial, wave 30: echoride's process, which commits
	// after its DLQ step and after a nil alike).
	return terminates(ifs.Body) && (!acks(info, ifs.Body.List, 2) || sendsElsewhere(info, ifs.Body)) && acks(info, rest, 2)
}

// listsFailure reports whether the error check of the call at the end of
// stack (see errCheck) names the record as failed: its `!= nil` branch
// appends to a slice of a Lambda batch item failure type
// (events.SQSBatchItemFailure, events.KinesisBatchItemFailure, ...).
func listsFailure(info *types.Info, stack []ast.Node) bool {
	ifs, neq, _ := errCheck(info, stack)
	if ifs == nil || !neq {
		return false
	}
	found := false
	ast.Inspect(ifs.Body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok && !found {
			if id, ok := ast.Unparen(c.Fun).(*ast.Ident); ok && id.Name == "append" {
				if sl, ok := types.Unalias(info.TypeOf(c)).Underlying().(*types.Slice); ok && strings.HasSuffix(typeName(sl.Elem()), "BatchItemFailure") {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// acks reports whether any of stmts (outside function literals) acks: an
// ack call, or, up to depth calls down, a call of a function of the
// checked module that acks (`c.deleteMessage(ctx, m)` around the
// client's DeleteMessage).
func (w *wholeProgram) acks(info *types.Info, stmts []ast.Stmt, depth int) bool {
	found := false
	for _, st := range stmts {
		ast.Inspect(st, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok || found {
				return false
			}
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if ackOf(info, c) != "" {
				found = true
				return false
			}
			if depth == 0 {
				return true
			}
			fn := callee(info, c)
			if fn == nil || fn.Pkg() == nil || !w.app[fn.Pkg()] {
				return true
			}
			sf := w.prog.FuncValue(fn)
			if sf == nil || sf.Pkg == nil {
				return true
			}
			body := funcBody(sf.Syntax())
			if p := w.info[sf.Pkg.Pkg]; body != nil && p != nil && p.TypesInfo != nil && w.acks(p.TypesInfo, body.List, depth-1) {
				found = true
			}
			return !found
		})
	}
	return found
}

// doesWork returns the functions of rw that write to a database (an AWS
// write by key too: see keyedWriteOf) or make an effect, in their own body
// or in a function they reach on the walk by a call that waits for it (not
// a go statement or a channel hand-off), and the calls below which they do.
func (w *wholeProgram) doesWork(rw *rootWalk) (map[*ssa.Function]bool, map[token.Pos]*ssa.Function) {
	return w.below(rw, func(info *types.Info, c *ast.CallExpr) bool {
		return effectOf(info, c) != "" || dbWriteOf(info, c) != "" || keyedWriteOf(info, c)
	})
}

// nilErrCalls returns the static calls (by position, with the calling
// function) that the functions of rw make to the module's own functions
// whose every return gives a nil error (see nilErrorOnly): JudgeLogic.Judge
// turning each failure into a response code (field trial wave 33, YunOJ).
func (w *wholeProgram) nilErrCalls(rw *rootWalk) map[token.Pos]*ssa.Function {
	sites := map[token.Pos]*ssa.Function{}
	for _, fn := range rw.order {
		if !w.inApp(fn) || fn.Syntax() == nil {
			continue
		}
		for _, b := range fn.Blocks {
			for _, instr := range b.Instrs {
				call, ok := instr.(ssa.CallInstruction)
				if !ok {
					continue
				}
				if _, isGo := call.(*ssa.Go); isGo {
					continue
				}
				g := call.Common().StaticCallee()
				if g == nil || !w.inApp(g) || g.Origin() != nil {
					continue
				}
				if info := w.pkgInfo(g); info != nil && info.TypesInfo != nil && nilErrorOnly(info.TypesInfo, g.Syntax()) {
					sites[call.Pos()] = fn
				}
			}
		}
	}
	return sites
}

// commitsBelow returns the functions of rw that commit a database
// transaction, in their own body or below a call that waits, and the calls
// (by position) below which one is reached, with the function making them.
func (w *wholeProgram) commitsBelow(rw *rootWalk) (map[*ssa.Function]bool, map[token.Pos]*ssa.Function) {
	return w.below(rw, func(info *types.Info, c *ast.CallExpr) bool { return txCommitOf(info, c) != "" })
}

// below returns the functions of rw whose own body has a call that own
// accepts, or that reach one by calls that wait for their callee (call
// graph edges other than go statements, and the walk's own edges through
// function values), to a fixed point; and the call sites through which
// they reach it, with the calling function.
func (w *wholeProgram) below(rw *rootWalk, own func(*types.Info, *ast.CallExpr) bool) (map[*ssa.Function]bool, map[token.Pos]*ssa.Function) {
	in := map[*ssa.Function]bool{}
	for _, fn := range rw.order {
		in[fn] = true
	}
	out := map[*ssa.Function]bool{}
	for _, fn := range rw.order {
		if !w.inApp(fn) {
			continue
		}
		p := w.pkgInfo(fn)
		body := funcBody(fn.Syntax())
		if p == nil || p.TypesInfo == nil || body == nil {
			continue
		}
		ast.Inspect(body, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok || out[fn] {
				return false
			}
			if c, ok := n.(*ast.CallExpr); ok && own(p.TypesInfo, c) {
				out[fn] = true
			}
			return !out[fn]
		})
	}
	type edge struct {
		from, to *ssa.Function
		pos      token.Pos
	}
	var edges []edge
	for _, fn := range rw.order {
		if n := w.cg.Nodes[fn]; n != nil {
			for _, e := range n.Out {
				if _, isGo := e.Site.(*ssa.Go); !isGo && in[e.Callee.Func] {
					edges = append(edges, edge{fn, e.Callee.Func, e.Pos()})
				}
			}
		}
		if p := rw.parent[fn]; p != nil && (!rw.async[fn] || rw.async[p]) && !w.libraryCallback(p, rw.via[fn]) {
			edges = append(edges, edge{p, fn, rw.via[fn]})
		}
	}
	sites := map[token.Pos]*ssa.Function{}
	for changed := true; changed; {
		changed = false
		for _, e := range edges {
			if out[e.to] {
				if e.pos.IsValid() && sites[e.pos] == nil {
					sites[e.pos] = e.from
				}
				if !out[e.from] {
					out[e.from] = true
					changed = true
				}
			}
		}
	}
	return out, sites
}

// libraryCallback reports whether the call of p at pos is a call of a
// library function (outside the checked module) that the walk entered
// through a function value given to it and that runs it in another
// goroutine or later (sync.WaitGroup.Go, errgroup's Go, a pool's Submit,
// time.AfterFunc, go-zero's RoutineGroup.Run: see poolSubmitNames), so what it does is not below the
// call. A library that calls it before returning (gorm's Transaction,
// pgx.BeginFunc, a retry helper) keeps it below.
func (w *wholeProgram) libraryCallback(p *ssa.Function, pos token.Pos) bool {
	if p == nil {
		return false
	}
	info := w.pkgInfo(p)
	body := funcBody(p.Syntax())
	if info == nil || info.TypesInfo == nil || body == nil {
		return false
	}
	stack := callStack(body, pos)
	if stack == nil {
		return false
	}
	fn := callee(info.TypesInfo, stack[len(stack)-1].(*ast.CallExpr))
	return fn != nil && fn.Pkg() != nil && !w.app[fn.Pkg()] && (poolSubmitNames[fn.Name()] || fn.Name() == "AfterFunc" || goZeroGoroutine(fn))
}
