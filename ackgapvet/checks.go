package ackgapvet

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
)

func newAnalyzer(name, doc string, run func(pass *analysis.Pass, c *Consumers, r *reporter)) *analysis.Analyzer {
	return &analysis.Analyzer{
		Name:     name,
		Doc:      doc,
		URL:      DocsURL + "#" + name,
		Requires: []*analysis.Analyzer{inspect.Analyzer, ConsumersAnalyzer},
		Run: func(pass *analysis.Pass) (any, error) {
			r, err := newReporter(pass)
			if err != nil {
				return nil, err
			}
			run(pass, pass.ResultOf[ConsumersAnalyzer].(*Consumers), r)
			return nil, nil
		},
	}
}

var callNode = []ast.Node{(*ast.CallExpr)(nil)}

// EffectAnalyzer reports external effects on consumer paths and inside open
// transactions.
var EffectAnalyzer = newAnalyzer("effect",
	`report external effects made by a consumer or inside a database transaction

An HTTP request, gRPC call, email, AWS call or publish made directly from a
consumer handler (or while a database transaction is open) repeats on every
redelivery, and inside a transaction it also happens when the transaction
rolls back. A call that carries an idempotency key that is not made afresh
(a field, header or helper named like one, or the incoming message's key)
is not reported: the receiver dedupes it. Neither is a publish through a
publisher made from the handler's transaction (an outbox). Fix: write an outbox row in the handler's transaction and let a
relay make the call with a stable idempotency key.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		walk(pass, c, callNode, func(n ast.Node, s *site) {
			call := n.(*ast.CallExpr)
			if s.Root == nil && !s.InTx {
				return
			}
			d := effectOf(pass.TypesInfo, call)
			if d == "" {
				cf := callee(pass.TypesInfo, call)
				sum := c.Summary(cf)
				// Local callees on a consumer path report inside themselves.
				if sum == nil || sum.Effect == "" || c.checkedInside(cf) && (s.Root != nil || !s.InTx) {
					return
				}
				d = viaDesc(cf, sum.Effect)
			}
			if !harmfulRepeat(pass, funcNodeName(s.Inner()), funcBody(s.Inner()), call, d) {
				return
			}
			if strings.HasPrefix(d, classDesc[ClassKubernetes]) && createsByName(pass) {
				return // a Create of a named object whose AlreadyExists is success: a repeat makes nothing
			}
			if strings.Contains(d, "publish") && slices.ContainsFunc(s.Path, deadLetterTopic.MatchString) {
				return // reached through a dead-letter step: a second record of one failure
			}
			names := append(s.names(), d)
			names = append(names, constStrings(pass.TypesInfo, call)...)
			if s.Root == nil {
				// Off every consumer path: an HTTP handler, a job.
				r.report(call, SeverityOf(names...), fmt.Sprintf(
					"%s inside an open database transaction: it is made even when the transaction rolls back, and again when the caller retries; record it in the outbox in the same transaction and let the relay make it with an idempotency key",
					d))
				return
			}
			if behindGuard(pass, c, s, call) {
				return // a redelivery finds the transition made and skips it
			}
			if me := c.markThenEffect(s.Inner()); me != nil && me.effect == call {
				return // behind a dedupe record written first: lost, not repeated (checkact)
			}
			if loopSetup(pass, s, call) {
				return // runs once per loop, not once per message
			}
			fix := "record it in the outbox in the handler's transaction and let the relay make it with an idempotency key"
			if s.Root.Kind != KindAckgap {
				fix = "give it an idempotency key derived from the message's event id (the receiver then applies it once), or record it in an outbox row in the transaction of the message's state change and make it from there"
			}
			what := d
			if callee, ok := strings.CutPrefix(d, "calls "); ok {
				what = "the call of " + callee + "," // the call of p.Charge, which makes an HTTP request (...), on the consumer path of ...
			}
			r.report(call, SeverityOf(names...), fmt.Sprintf("%s %s repeats on every redelivery; %s", what, s.where(), fix))
		})
	})

// behindGuard reports whether call, at s, runs only when a guarded
// transition was won first: in its own function (see guardedAt) or, in the
// whole-program mode, on every chain of calls that reaches its function.
func behindGuard(pass *analysis.Pass, c *Consumers, s *site, call *ast.CallExpr) bool {
	if len(s.Funcs) == 0 {
		return false
	}
	return c.guarded(s.Inner()) || guardedAt(pass.TypesInfo, s.Funcs[0], call.Pos())
}

// loopSetup reports whether call, at s, lies in a receive loop's own
// function but outside the loop that receives: set-up before it (creating
// or subscribing a queue, resolving a topic) or clean-up after it and in
// defers. Such a call runs once per start of the loop, not once per
// message, so a redelivery does not repeat it. A function is a receive
// loop here when a for statement of its body takes messages (see
// messageLoops).
func loopSetup(pass *analysis.Pass, s *site, call *ast.CallExpr) bool {
	if s.Root == nil || len(s.Funcs) != 1 || s.Funcs[0] != s.Root.Node {
		return false
	}
	return outsideLoops(pass, s.Root, call)
}

// outsideLoops reports whether call lies in root's function but outside
// every loop of it that takes messages (and root has such loops).
func outsideLoops(pass *analysis.Pass, root *Root, call *ast.CallExpr) bool {
	loops := messageLoops(pass, root)
	for _, l := range loops {
		if l.Pos() <= call.Pos() && call.End() <= l.End() {
			return false
		}
	}
	return len(loops) > 0
}

// PoolTxAnalyzer reports writes through a pool where a transaction was given.
var PoolTxAnalyzer = newAnalyzer("pooltx",
	`report database writes through a pool or *sql.DB where a transaction is in scope

A handler given a transaction that writes through the pool instead commits
that write even when the handler fails and rolls back, so a redelivery applies
it twice; on SQLite the pool write waits for the lock the transaction holds
and times out. A write in the branch taken when the transaction is nil (the
else of if tx != nil) is not reported, nor one in a function whose
transaction is used only for its Commit and Rollback. Fix: write through
the transaction (suggested fix).`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		walk(pass, c, callNode, func(n ast.Node, s *site) {
			call := n.(*ast.CallExpr)
			if !s.InTx {
				return
			}
			h, _ := dbCall(pass.TypesInfo, call)
			if h != handlePool || dbWriteOf(pass.TypesInfo, call) == "" {
				return
			}
			sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
			if !ok {
				return
			}
			if s.Tx != "" && nilTxBranch(funcBody(s.Inner()), s.Tx, call) {
				return // if tx != nil { tx.Exec(...) } else { db.Exec(...) }: no transaction there
			}
			if s.Tx == "" && unusedTx(pass.TypesInfo, funcBody(s.Inner())) {
				return // the transaction carries no statement: nothing rolls back with it
			}
			recv := types.ExprString(sel.X)
			names := append(s.names(), constStrings(pass.TypesInfo, call)...)
			if s.Tx == "" {
				r.report(call, SeverityOf(names...), fmt.Sprintf(
					"writes through %s while a database transaction is open in this function: the write does not roll back with it and repeats on redelivery; use the transaction", recv))
				return
			}
			r.report(call, SeverityOf(names...), fmt.Sprintf(
				"writes through %s instead of the transaction %s %s: the write commits even when the handler fails and applies again on redelivery (on SQLite it waits for the transaction's lock); use %s",
				recv, s.Tx, s.where(), s.Tx),
				replaceFix("use the transaction "+s.Tx, sel.X, s.Tx))
		})
	})

// unusedTx reports whether every transaction body begins (a database/sql
// or pgx Begin or BeginTx whose result it keeps in a variable) is used for
// nothing but its Commit and Rollback: `tx, _ := pool.Begin(ctx); defer
// tx.Rollback(ctx); pool.QueryRow(...).Scan(...); tx.Commit(ctx)` writes
// through the pool alone, and there is nothing the transaction could roll
// back with it (field trial, wave 59: notifi's repositories, four false
// pooltx findings).
func unusedTx(info *types.Info, body *ast.BlockStmt) bool {
	if body == nil {
		return false
	}
	txs := map[types.Object]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Rhs) != 1 || len(as.Lhs) == 0 {
			return true
		}
		call, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr)
		fn := callee(info, call)
		if !ok || fn == nil || fn.Name() != "Begin" && fn.Name() != "BeginTx" || recvName(fn) == "" {
			return true
		}
		if path := funcPath(fn); path != "database/sql" && !isPgx(path) && !isPgxpool(path) {
			return true
		}
		if id, ok := as.Lhs[0].(*ast.Ident); ok {
			if obj := identObj(info, id); obj != nil {
				txs[obj] = true
			}
		}
		return true
	})
	if len(txs) == 0 {
		return false
	}
	used := false
	var parents []ast.Node
	ast.Inspect(body, func(n ast.Node) bool {
		if n == nil {
			parents = parents[:len(parents)-1]
			return false
		}
		if used {
			return false
		}
		if id, ok := n.(*ast.Ident); ok && txs[info.Uses[id]] && len(parents) > 0 {
			sel, ok := parents[len(parents)-1].(*ast.SelectorExpr)
			if !ok || sel.X != id || sel.Sel.Name != "Commit" && sel.Sel.Name != "Rollback" {
				used = true
			}
		}
		parents = append(parents, n)
		return true
	})
	return !used
}

// nilTxBranch reports whether call lies in body's branch taken when the
// transaction parameter tx is nil (the else of `if tx != nil`, what follows
// an `if tx != nil { ...; return }`, the body of `if tx == nil`): a
// repository method that writes through the pool when
// it is given no transaction (field trial, wave 42: rider-service's
// repositories, thirteen false findings).
func nilTxBranch(body *ast.BlockStmt, tx string, call *ast.CallExpr) bool {
	in := func(n ast.Node) bool { return n != nil && n.Pos() <= call.Pos() && call.End() <= n.End() }
	txTest := func(st ast.Stmt) (*ast.IfStmt, token.Token) {
		ifs, ok := st.(*ast.IfStmt)
		if !ok {
			return nil, token.ILLEGAL
		}
		bin, ok := ast.Unparen(ifs.Cond).(*ast.BinaryExpr)
		if !ok {
			return nil, token.ILLEGAL
		}
		x, okx := ast.Unparen(bin.X).(*ast.Ident)
		y, oky := ast.Unparen(bin.Y).(*ast.Ident)
		if !okx || !oky || x.Name != tx || y.Name != "nil" {
			return nil, token.ILLEGAL
		}
		return ifs, bin.Op
	}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		blk, ok := stmtBlock(n)
		if !ok || found {
			return !found
		}
		for i, st := range blk.List {
			ifs, op := txTest(st)
			switch {
			case ifs == nil:
			case op == token.NEQ && ifs.Else != nil && in(ifs.Else), op == token.EQL && in(ifs.Body):
				found = true
			case op == token.NEQ && ifs.Else == nil && terminates(ifs.Body):
				// if tx != nil { ...; return }: what follows runs without one.
				for _, later := range blk.List[i+1:] {
					found = found || in(later)
				}
			}
		}
		return !found
	})
	return found
}

// takeMessage opens earlyack's finding on a Redis take that removes the
// message (see destructiveTake); dropAtMostOnce keeps it.
const takeMessage = "takes the message with Redis"

// EarlyAckAnalyzer reports acks before the work and Watermill's InstantAck.
var EarlyAckAnalyzer = newAnalyzer("earlyack",
	`report a consumer that acknowledges a message before doing its work

An offset mark or commit, an SQS DeleteMessage or a Watermill msg.Ack() that
runs before the handler's database writes or effects tells the broker the
message is done while the work is still ahead: a crash or error in between
loses the message instead of redelivering it. Watermill's InstantAck middleware
does the same for every message. So does an ack right after the message was
handed to another goroutine (go h.apply(msg), jobs <- msg, or a value
decoded from it, in the block or a branch of an if before the ack) when
nothing waits for it, an ack when the message is only appended to a buffer that
another case of the select writes, and work scheduled on a timer (time.AfterFunc) that fires
after the consumer has returned and acknowledged: a crash or restart in the
window, or a shutdown that stops the timer, loses it. Fix: ack after the
work has committed; for deferred work, write it down durably in the
handler's transaction (an outbox row) and let a relay do it.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		walk(pass, c, callNode, func(n ast.Node, s *site) {
			call := n.(*ast.CallExpr)
			fn := callee(pass.TypesInfo, call)
			if s.Root == nil || fn == nil || funcPath(fn) != "time" || fn.Name() != "AfterFunc" || len(call.Args) != 2 {
				return
			}
			if !timerWork(pass, call.Args[1]) {
				return
			}
			r.report(call, SeverityOf(s.names()...), fmt.Sprintf(
				"schedules work on a timer (time.AfterFunc) on the consumer path of %s %s: the message is acknowledged when the consumer returns, before the timer fires, so a crash or restart in the window (or a shutdown that stops the timer) loses the work; write the pending work durably in the handler's transaction (an outbox row) and let a relay do it, or do it before returning",
				s.Root.Kind, s.Root.Name))
		})
		walk(pass, c, []ast.Node{(*ast.Ident)(nil)}, func(n ast.Node, s *site) {
			id := n.(*ast.Ident)
			fn, ok := pass.TypesInfo.Uses[id].(*types.Func)
			if ok && fn.Name() == "InstantAck" && strings.HasPrefix(funcPath(fn), pathWatermill) {
				r.report(id, SeverityOf(s.names()...),
					"middleware.InstantAck acks every message before its handler runs: a handler error or crash loses the message instead of redelivering it; remove it and let the router ack after the handler returned nil")
			}
		})
		if c.program != nil {
			for _, f := range pass.Files {
				ast.Inspect(f, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok || c.program.listTakes[call.Lparen] == "" {
						return true
					}
					cmd := destructiveTake(pass.TypesInfo, call)
					r.report(call, SeverityOf(c.program.listTakes[call.Lparen], cmd), fmt.Sprintf(
						takeMessage+" %s, which removes it as it returns it, before the work of Redis queue loop %s: the take is the ack, so a crash, a failed write or a shutdown in between loses the message (a list or sorted set keeps no unacked copy); move it into a processing list with BLMove and remove it with LRem after the work (Redis docs, LMOVE: \"Pattern: Reliable queue\"), or use a stream read by a consumer group (XReadGroup, XAck)",
						strings.ToUpper(cmd), c.program.listTakes[call.Lparen]))
					return true
				})
			}
		}
		ranges := txRanges(pass)
		for node, root := range c.reach {
			body := funcBody(node)
			if body == nil {
				continue
			}
			inTx := func(pos token.Pos) bool {
				if ft := funcType(node); ft != nil && txParam(pass.TypesInfo, ft) != "" {
					return true
				}
				for _, r := range ranges[node] {
					if r[0] <= pos && pos < r[1] {
						return true
					}
				}
				return false
			}
			if claim, work, at := claimFirst(pass, c, body, inTx); claim != nil {
				what := types.ExprString(claim.Fun)
				if lastName(claim.Fun) == "RowsAffected" {
					what += " (a guarded UPDATE)"
				}
				r.report(claim, SeverityOf(append(callNames(pass, at), root.Name, work)...), fmt.Sprintf(
					"claims the message with %s before the work (%s at line %d), and a redelivery that finds the claim skips the message: a crash (or a failure that does not give the claim back) between them loses the work for good; make the claim in the same transaction as the work's record (an outbox row for the call), or mark the message done only after the work",
					what, work, pass.Fset.Position(at.Pos()).Line))
			}
			selects := selectsOf(body)
			ast.Inspect(body, func(m ast.Node) bool {
				if _, ok := m.(*ast.FuncLit); ok {
					return false // its own function on the path
				}
				block, ok := stmtBlock(m)
				if !ok {
					return true
				}
				for i, st := range block.List {
					acker, _ := c.ackerOf(node)
					if ret, ok := st.(*ast.ReturnStmt); ok && (root.Node == node && returnAcks(root.Kind) || node != root.Node && acker != "") && returnsNoError(pass.TypesInfo, &ast.BlockStmt{List: []ast.Stmt{ret}}) != nil {
						// The framework acks on this return, or the
						// code's own loop that called this function.
						who := "the " + root.Kind
						if node != root.Node {
							who = acker
						}
						var params map[types.Object]bool
						if node != root.Node {
							params = paramObjs(pass.TypesInfo, funcType(node))
						}
						if _, inSelect := m.(*ast.CommClause); inSelect {
							// `case out <- &ev: return nil`: ev was decoded
							// from the message before the select (field
							// trial, wave 32: reservation-worker's process).
							params = derivedFrom(pass.TypesInfo, body.List, params)
						}
						if how, at := handedOffWith(pass, before(m, block.List[:i]), params); how != "" {
							line := pass.Fset.Position(at.Pos()).Line
							if strings.HasPrefix(acker, autoCommitPrefix) {
								r.report(ret, SeverityOf(root.Name), fmt.Sprintf(
									"returns while its work runs in another goroutine (%s at line %d), and %s commits the offset whatever that work does: a crash or error there loses the message, and moving the commit after this function would not wait for it either; do the work before returning (or wait for it and return its error), then commit after it",
									how, line, acker))
								continue
							}
							r.report(ret, SeverityOf(root.Name), fmt.Sprintf(
								"returns without an error, so %s acks the message, while its work runs in another goroutine (%s at line %d): a crash or error there loses the message instead of redelivering it; do the work before returning, or wait for it and return its error",
								who, how, line))
						}
						continue
					}
					call := topCall(st)
					if call == nil {
						call = ackRetryLoop(pass.TypesInfo, st)
					}
					if call == nil {
						call = ackOnlyIf(pass.TypesInfo, st)
					}
					if call == nil {
						continue
					}
					ack := ackOf(pass.TypesInfo, call)
					if ack == "" {
						// The code's own delete in another package, given
						// a receipt handle (field trial, wave 46:
						// video-transcoder's sqsActions.DeleteMessage).
						ack = c.wrappedAck(call)
					}
					if ack == "" {
						continue
					}
					if work, at := ackedWork(pass, c, block.List[i+1:]); work != "" {
						line := pass.Fset.Position(at.Pos()).Line
						r.report(call, SeverityOf(append(callNames(pass, at), root.Name, work)...), fmt.Sprintf(
							"acks with %s before the work (%s at line %d): a crash or error in between loses the message instead of redelivering it; ack after the work has committed",
							ack, work, line))
					} else if how, at := handedOff(pass, before(m, block.List[:i])); how != "" {
						line := pass.Fset.Position(at.Pos()).Line
						r.report(call, SeverityOf(root.Name), fmt.Sprintf(
							"acks with %s while the message's work runs in another goroutine (%s at line %d): a crash or error there loses the message instead of redelivering it; ack from the worker after the work has committed, or wait for it",
							ack, how, line))
					} else if how, at := handOffNext(pass, block.List[i+1:]); how != "" {
						line := pass.Fset.Position(at.Pos()).Line
						r.report(call, SeverityOf(root.Name), fmt.Sprintf(
							"acks with %s before the message is handed to another goroutine for its work (%s at line %d): a crash, a stop or an error there loses the message instead of redelivering it; ack from the worker after the work has committed",
							ack, how, line))
					} else if buf, work, at := bufferedAck(pass, c, selects[m], m, block.List[:i]); buf != nil {
						r.report(call, SeverityOf(append(callNames(pass, at), root.Name, work)...), fmt.Sprintf(
							"acks with %s when the message is only buffered (line %d), and the buffer is written in another case of the select (%s at line %d): a crash or a failed write before then loses every message acked into the buffer; ack the buffered messages after the write has committed",
							ack, pass.Fset.Position(buf.Pos()).Line, work, pass.Fset.Position(at.Pos()).Line))
					}
				}
				return true
			})
		}
	})

// selectsOf maps each select case in body (outside function literals) to
// its select statement.
func selectsOf(body *ast.BlockStmt) map[ast.Node]*ast.SelectStmt {
	out := map[ast.Node]*ast.SelectStmt{}
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if sel, ok := n.(*ast.SelectStmt); ok {
			for _, cl := range sel.Body.List {
				out[cl] = sel
			}
		}
		return true
	})
	return out
}

// bufferedAck matches an ack in a select case that receives a message and
// appends it (or a value made from it) to a buffer, with no work before
// the ack, while another case of the same select writes (a ticker's
// flush): the message is acked when buffered, before its write (field
// trial, wave 32: events-api's batch of Watermill messages, acked as
// they were appended and inserted on the next tick). It returns the
// append, and the other case's work and where it is; nil if none.
func bufferedAck(pass *analysis.Pass, c *Consumers, sel *ast.SelectStmt, clause ast.Node, before []ast.Stmt) (ast.Node, string, ast.Node) {
	cc, ok := clause.(*ast.CommClause)
	if !ok || sel == nil || cc.Comm == nil {
		return nil, "", nil
	}
	as, ok := cc.Comm.(*ast.AssignStmt)
	if !ok || len(as.Rhs) != 1 {
		return nil, "", nil
	}
	if u, ok := ast.Unparen(as.Rhs[0]).(*ast.UnaryExpr); !ok || u.Op != token.ARROW {
		return nil, "", nil
	}
	if work, _ := firstWork(pass, c, before); work != "" {
		return nil, "", nil
	}
	seed := map[types.Object]bool{}
	if id, ok := as.Lhs[0].(*ast.Ident); ok && pass.TypesInfo.ObjectOf(id) != nil {
		seed[pass.TypesInfo.ObjectOf(id)] = true
	}
	derived := derivedFrom(pass.TypesInfo, before, seed)
	var buf ast.Node
	for _, st := range before {
		a, ok := st.(*ast.AssignStmt)
		if !ok || len(a.Rhs) != 1 {
			continue
		}
		if call, ok := ast.Unparen(a.Rhs[0]).(*ast.CallExpr); ok {
			if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok && id.Name == "append" && len(call.Args) > 1 {
				for _, arg := range call.Args[1:] {
					if carriesMessage(pass.TypesInfo, arg) || mentions(pass.TypesInfo, arg, derived) {
						buf = st
					}
				}
			}
		}
	}
	if buf == nil {
		return nil, "", nil
	}
	for _, other := range sel.Body.List {
		if other == clause {
			continue
		}
		if work, at := firstWork(pass, c, other.(*ast.CommClause).Body); work != "" {
			return buf, work, at
		}
	}
	return nil, "", nil
}

// ackOnlyIf returns the ack of an if statement whose body is that ack alone
// and that has no else (if c.autoCommit { sess.MarkMessage(msg, "") }):
// when the condition holds, the message is acked where the if stands.
func ackOnlyIf(info *types.Info, st ast.Stmt) *ast.CallExpr {
	ifs, ok := st.(*ast.IfStmt)
	if !ok || ifs.Else != nil || len(ifs.Body.List) != 1 {
		return nil
	}
	if c := topCall(ifs.Body.List[0]); c != nil && ackOf(info, c) != "" {
		return c
	}
	return nil
}

// paramObjs returns the objects of ft's named parameters.
func paramObjs(info *types.Info, ft *ast.FuncType) map[types.Object]bool {
	out := map[types.Object]bool{}
	if ft == nil || ft.Params == nil {
		return out
	}
	for _, f := range ft.Params.List {
		for _, n := range f.Names {
			if o := info.Defs[n]; o != nil {
				out[o] = true
			}
		}
	}
	return out
}

// ackRetryLoop returns the ack of a loop that only retries it (for msg !=
// nil { if _, err := c.CommitMessage(msg); err != nil { sleep; continue };
// break }): a for statement, not a range, with no receive in it, whose body
// acks at its top level and breaks out. The loop is then the ack statement.
func ackRetryLoop(info *types.Info, st ast.Stmt) *ast.CallExpr {
	loop, ok := st.(*ast.ForStmt)
	if !ok || receivesIn(info, loop.Body) {
		return nil
	}
	var ack *ast.CallExpr
	breaks := false
	for _, b := range loop.Body.List {
		if c := topCall(b); c != nil && ack == nil && ackOf(info, c) != "" {
			ack = c
		}
		if br, ok := b.(*ast.BranchStmt); ok && br.Tok == token.BREAK && br.Label == nil {
			breaks = true
		}
	}
	if !breaks {
		return nil
	}
	return ack
}

// topCall returns the call a statement makes at its top level: an expression
// statement, an assignment from a call, or an if's init.
func topCall(st ast.Stmt) *ast.CallExpr {
	switch st := st.(type) {
	case *ast.ExprStmt:
		c, _ := ast.Unparen(st.X).(*ast.CallExpr)
		return c
	case *ast.AssignStmt:
		if len(st.Rhs) == 1 {
			c, _ := ast.Unparen(st.Rhs[0]).(*ast.CallExpr)
			return c
		}
	case *ast.IfStmt:
		if st.Init != nil {
			return topCall(st.Init)
		}
	}
	return nil
}

// callNames returns the string constants of n's call, for severity.
func callNames(pass *analysis.Pass, n ast.Node) []string {
	if call, ok := n.(*ast.CallExpr); ok {
		return constStrings(pass.TypesInfo, call)
	}
	return nil
}

// firstWork finds the first database write or external effect in stmts
// (directly or through a called function), with its position.
func firstWork(pass *analysis.Pass, c *Consumers, stmts []ast.Stmt) (string, ast.Node) {
	return findWork(pass, c, stmts, true)
}

// ackedWork is firstWork for an ack before it: a dead-letter send
// (k.dlq.SendToDLQs(msg, err)) is a failure's record, not the work the ack
// comes before. (Elsewhere it is work: a failed dead-letter send before an
// ack loses the message.)
func ackedWork(pass *analysis.Pass, c *Consumers, stmts []ast.Stmt) (string, ast.Node) {
	return findWorkIf(pass, c, stmts, true, func(call *ast.CallExpr) bool { return !deadLetterPublish(pass.TypesInfo, "", call) })
}

// firstEffect is the first external effect in stmts, outside function
// literals: a call classified as one, or a call of a function whose
// summary has one.
func firstEffect(pass *analysis.Pass, c *Consumers, stmts []ast.Stmt) (string, ast.Node) {
	return findWork(pass, c, stmts, false)
}

// findWork is firstWork (writes too, function literals included) or
// firstEffect.
func findWork(pass *analysis.Pass, c *Consumers, stmts []ast.Stmt, writes bool) (string, ast.Node) {
	return findWorkIf(pass, c, stmts, writes, nil)
}

// findWorkIf is findWork over the calls keep accepts (nil: all); a call it
// refuses is passed over with its arguments.
func findWorkIf(pass *analysis.Pass, c *Consumers, stmts []ast.Stmt, writes bool, keep func(*ast.CallExpr) bool) (string, ast.Node) {
	var desc string
	var at ast.Node
	for _, st := range stmts {
		ast.Inspect(st, func(m ast.Node) bool {
			if _, lit := m.(*ast.FuncLit); desc != "" || lit && !writes {
				return false
			}
			call, ok := m.(*ast.CallExpr)
			if !ok {
				return true
			}
			if keep != nil && !keep(call) {
				return false
			}
			if d := effectOf(pass.TypesInfo, call); d != "" {
				desc, at = d, call
			} else if d := dbWriteOf(pass.TypesInfo, call); writes && d != "" {
				desc, at = d, call
			} else if d := keyedWriteDesc(pass.TypesInfo, call); writes && d != "" {
				// No effect, but work: lost if the message is acked
				// first and the process dies.
				desc, at = d, call
			} else if cf := callee(pass.TypesInfo, call); cf != nil {
				if sum := c.Summary(cf); sum != nil && (writes && sum.Write != "" || sum.Effect != "") {
					d := sum.Effect
					if d == "" {
						d = sum.Write
					}
					desc, at = viaDesc(cf, d), call
				}
			}
			if desc == "" && writes && c.program != nil && (c.program.workSites[call.Lparen] && dynamicCall(pass.TypesInfo, call) || c.works(callee(pass.TypesInfo, call))) {
				// Through an interface or a function value, or a
				// function that calls one: the whole-program walk knows
				// what it reaches.
				desc, at = "calls "+types.ExprString(call.Fun)+", which reaches a write or an effect (the consumer map names it)", call
			}
			return desc == ""
		})
		if desc != "" {
			return desc, at
		}
	}
	return "", nil
}

// timerWork reports whether f, the function a time.AfterFunc runs, does the
// application's work: a function literal that calls a function or method
// of this package or of a module (not the standard library; an interface
// method included), or such a
// function or method value. A context's cancel, a channel close or a
// timeout flag is not work.
func timerWork(pass *analysis.Pass, f ast.Expr) bool {
	info := pass.TypesInfo
	outside := func(fn *types.Func) bool {
		if fn == nil || fn.Pkg() == nil {
			return false
		}
		if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil && types.IsInterface(sig.Recv().Type()) {
			return true
		}
		first, _, _ := strings.Cut(pkgPath(fn.Pkg()), "/")
		return fn.Pkg() == pass.Pkg || strings.Contains(first, ".")
	}
	if lit, ok := ast.Unparen(f).(*ast.FuncLit); ok {
		found := false
		ast.Inspect(lit.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && outside(callee(info, call)) {
				found = true
			}
			return !found
		})
		return found
	}
	if id, ok := ast.Unparen(f).(*ast.Ident); ok {
		// A function value the helper was given (a debouncer's
		// add(f func()) { time.AfterFunc(d, f) }): what the consumer
		// passes is its work, unless it is a context's cancel.
		if v, ok := info.Uses[id].(*types.Var); ok && !v.IsField() && !isNamed(v.Type(), "context", "CancelFunc") && !timerSignal.MatchString(v.Name()) {
			return true
		}
	}
	return outside(referencedFunc(info, f))
}

// timerSignal matches the names of function values a timer may run that
// only signal: a cancel, stop, close or done.
var timerSignal = regexp.MustCompile(`(?i)cancel|stop|close|done|timeout|expire`)

// AutoCommitAnalyzer reports offset auto-commit left on in loops with work.
var AutoCommitAnalyzer = newAnalyzer("autocommit",
	`report Kafka offsets committed automatically before the work is done

kafka-go's Reader.ReadMessage commits the offset as it returns when the
reader has a GroupID, franz-go commits polled offsets on a timer unless
kgo.DisableAutoCommit (or kgo.AutoCommitMarks) is set (by default only what
an earlier poll returned, so it is reported only with kgo.AutoCommitGreedy
or when the poll loop hands records to other goroutines), and confluent-kafka-go
commits what Poll and ReadMessage returned in the background unless the
ConfigMap sets "enable.auto.commit" (or "enable.auto.offset.store") to false:
in a loop that then writes or calls out, a crash loses the message. Fix:
kafka-go FetchMessage then CommitMessages after the work; franz-go
kgo.DisableAutoCommit and CommitRecords after the work; confluent-kafka-go
"enable.auto.commit": false and CommitMessage after the work. A
watermill-kafka SubscriberConfig without a ConsumerGroup commits nothing at
all: its subscriber reads every partition from Sarama's initial offset
(OffsetNewest by default), so what was published while it was down is never
read, and every replica handles every message; set ConsumerGroup. So does a
kafka-go ReaderConfig without a GroupID in a package with a reader loop:
the reader commits nothing and starts, on every start, at its first offset
(kafka-go's default: every restart handles the partition's retained
messages again) or, after SetOffset(kafka.LastOffset), SetOffsetAt or
StartOffset: kafka.LastOffset, at the newest (what was published while it
was down is never read), and it reads one partition only. A reader whose
offset the application restores itself (SetOffset with a stored value) is
not reported. So does a Sarama partition consumer (ConsumePartition with
OffsetNewest or OffsetOldest) in a package with no offset manager: it
commits nothing, and every start reads from that constant again. RabbitMQ
has the same fault: a Consume with autoAck true (amqp091-go, streadway/amqp)
whose deliveries a consumer loop takes: the broker counts each delivery as
acknowledged when it sends it, so a crash, a restart or a failed step after
that loses the message, and nothing is ever redelivered. Fix: consume with
autoAck false and Ack after the work (Nack or Reject to retry or
dead-letter).`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		amqpAutoAck(pass, c, r)
		confluentAutoCommit(pass, c, r)
		saramaNeverCommits(pass, c, r)
		watermillKafkaNoGroup(pass, r)
		kafkaGoNoGroup(pass, c, r)
		saramaPartitionNoOffset(pass, c, r)
		// kafka-go: skip when no ReaderConfig of the package gets a GroupID
		// (in its literal, or assigned to the config afterwards).
		configs, grouped := 0, 0
		disabled, consumerGroup, greedy := false, false, false
		var newClients []*ast.CallExpr
		for _, f := range pass.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CompositeLit:
					if t := pass.TypesInfo.TypeOf(n); t != nil && isNamed(t, pathKafkaGo, "ReaderConfig") {
						configs++
						for _, e := range n.Elts {
							if kv, ok := e.(*ast.KeyValueExpr); ok && types.ExprString(kv.Key) == "GroupID" {
								grouped++
							}
						}
					}
				case *ast.AssignStmt:
					// cfg.GroupID = group, after the literal.
					for _, l := range n.Lhs {
						if sel, ok := l.(*ast.SelectorExpr); ok && sel.Sel.Name == "GroupID" {
							t := pass.TypesInfo.TypeOf(sel.X)
							if p, ok := t.(*types.Pointer); ok {
								t = p.Elem()
							}
							if t != nil && isNamed(t, pathKafkaGo, "ReaderConfig") {
								grouped++
							}
						}
					}
				case *ast.CallExpr:
					fn := callee(pass.TypesInfo, n)
					if funcPath(fn) == pathKgo && recvName(fn) == "" {
						switch fn.Name() {
						case "DisableAutoCommit", "AutoCommitMarks": // marks: only what the loop marked after its work
							disabled = true
						case "AutoCommitGreedy":
							greedy = true
						case "ConsumerGroup":
							consumerGroup = true
						case "NewClient":
							newClients = append(newClients, n)
						}
					}
				}
				return true
			})
		}
		franzWork := ""
		var handOffAt ast.Node // a poll loop's go statement or channel send
		for node, root := range c.reach {
			body := funcBody(node)
			if body == nil {
				continue
			}
			if root.Kind == KindFranz && franzWork == "" {
				franzWork, _ = firstWork(pass, c, body.List)
			}
			if root.Kind == KindFranz {
				// The earliest of the package's poll loops (c.reach is a map).
				if at := goOrSend(body); at != nil && (handOffAt == nil || at.Pos() < handOffAt.Pos()) {
					handOffAt = at
				}
			}
			if root.Kind != KindKafkaGo || configs > 0 && grouped == 0 {
				continue
			}
			ast.Inspect(body, func(m ast.Node) bool {
				block, ok := stmtBlock(m)
				if !ok {
					return true
				}
				for i, st := range block.List {
					call := topCall(st)
					if call == nil || !kafkaGoReadMessage(pass.TypesInfo, call) && (c.program == nil || !c.program.readMessageSites[call.Lparen]) {
						continue
					}
					if work, at := workOrHandler(pass, c, block.List[i+1:]); work != "" {
						what := "ReadMessage"
						if !kafkaGoReadMessage(pass.TypesInfo, call) {
							what = types.ExprString(call.Fun) + ", the code's wrapper of kafka-go's ReadMessage,"
						}
						r.report(call, SeverityOf(append(callNames(pass, at), root.Name, work)...), fmt.Sprintf(
							"%s commits the offset as it returns (reader with a GroupID), before the work (%s at line %d): a crash in between loses the message; use FetchMessage and CommitMessages after the work",
							what, work, pass.Fset.Position(at.Pos()).Line))
					}
				}
				return true
			})
		}
		// franz-go's default autocommit commits only what an earlier poll
		// returned (kgo.AutoCommitMarks' doc: "autocommitting only commits
		// what is *previously* polled"): a loop that finishes a poll's
		// records before it polls again is behind it. Greedy autocommit,
		// or records handed to other goroutines, are not.
		if disabled || !consumerGroup || franzWork == "" || !greedy && handOffAt == nil {
			return
		}
		why := "kgo.AutoCommitGreedy commits what each poll returned on a timer"
		if !greedy {
			at := pass.Fset.Position(handOffAt.Pos())
			why = fmt.Sprintf("autocommit commits what an earlier poll returned on a timer, and the poll loop hands records to other goroutines (%s:%d), which may not be done by the next poll", filepath.Base(at.Filename), at.Line)
		}
		for _, call := range newClients {
			if group, off, inline := kgoOptions(pass, call); inline && (!group || off) {
				continue // a producer-only client, or auto-commit disabled here
			}
			r.report(call, SeverityOf(franzWork), fmt.Sprintf(
				"kgo.NewClient with a consumer group and no kgo.DisableAutoCommit: %s, before the work (%s) is done: a crash loses messages; add kgo.DisableAutoCommit() and call CommitRecords after the work",
				why, franzWork))
		}
	})

// kafkaGoReadMessage reports whether call is kafka-go's
// Reader.ReadMessage.
func kafkaGoReadMessage(info *types.Info, call *ast.CallExpr) bool {
	fn := callee(info, call)
	return fn != nil && funcPath(fn) == pathKafkaGo && recvName(fn) == "Reader" && fn.Name() == "ReadMessage"
}

// goOrSend returns the first go statement or channel send in body, or nil.
func goOrSend(body *ast.BlockStmt) ast.Node {
	var at ast.Node
	ast.Inspect(body, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.GoStmt, *ast.SendStmt:
			if at == nil {
				at = n
			}
		}
		return at == nil
	})
	return at
}

// kgoOptions looks at the options written in a kgo.NewClient call: whether
// they name a consumer group, disable auto-commit, and whether any kgo option
// is written there at all (else they come from elsewhere: unknown).
func kgoOptions(pass *analysis.Pass, call *ast.CallExpr) (group, disabled, inline bool) {
	ast.Inspect(call, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok || c == call {
			return true
		}
		if fn := callee(pass.TypesInfo, c); funcPath(fn) == pathKgo && recvName(fn) == "" {
			inline = true
			group = group || fn.Name() == "ConsumerGroup"
			disabled = disabled || fn.Name() == "DisableAutoCommit" || fn.Name() == "AutoCommitMarks"
		}
		return true
	})
	return group, disabled, inline
}

// TransitionAnalyzer reports ackgap guarded transitions whose outcome is
// read and then ignored.
var TransitionAnalyzer = newAnalyzer("transition",
	`report an ackgap guarded transition whose result is read and ignored

ackgap.ApplyTransition holds a guarded transition for the message's
transaction. Left unread it is safe: a transition refused by its guard (the
row was not in the expected state) fails the commit and the message is
dead-lettered. Reading it with PendingTransition.Result makes a refusal the
handler's decision, and a refusal is not an error: a handler that drops the
*ackgap.TransitionResult goes on as if the transition applied, and the
message is acked. The same holds for any ackgap call returning a
*ackgap.TransitionResult (the store contract's TransitionIfStateTx).
Reported on consumer paths and where a transaction is open. Fix: check
res.Err() or res.Applied(), or do not call Result.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		walk(pass, c, callNode, func(n ast.Node, s *site) {
			call := n.(*ast.CallExpr)
			fn := callee(pass.TypesInfo, call)
			if fn == nil || !strings.HasPrefix(funcPath(fn), pathAckgap) || s.Root == nil && !s.InTx {
				return // not in a handler: tests and tools may drop it on purpose
			}
			res := fn.Type().(*types.Signature).Results()
			idx := -1
			for i := range res.Len() {
				if isNamed(res.At(i).Type(), pathAckgap, "TransitionResult") {
					idx = i
				}
			}
			if idx < 0 {
				return
			}
			if !transitionDropped(pass, call, idx, s) {
				return
			}
			r.report(call, SeverityOf(s.names()...), fmt.Sprintf(
				"the result of %s is ignored: reading it makes a refusal the handler's decision, and a refusal by the guard is not an error, so the handler goes on as if it applied and the message is acked; check res.Err() or res.Applied(), or leave the transition unread (an unread refusal fails the commit)",
				qualName(fn)))
		})
	})

func transitionDropped(pass *analysis.Pass, call *ast.CallExpr, idx int, s *site) bool {
	var parent ast.Node
	if f := s.Inner(); f != nil {
		ast.Inspect(f, func(n ast.Node) bool {
			if parent != nil {
				return false
			}
			switch n := n.(type) {
			case *ast.ExprStmt:
				if ast.Unparen(n.X) == call {
					parent = n
				}
			case *ast.AssignStmt:
				if len(n.Rhs) == 1 && ast.Unparen(n.Rhs[0]) == call {
					parent = n
				}
			}
			return true
		})
	}
	switch p := parent.(type) {
	case *ast.ExprStmt:
		return true
	case *ast.AssignStmt:
		if idx < len(p.Lhs) {
			if id, ok := p.Lhs[idx].(*ast.Ident); ok && id.Name == "_" {
				return true
			}
		}
	}
	return false
}

// HTTPClientAnalyzer reports HTTP clients without a timeout on consumer paths.
var HTTPClientAnalyzer = newAnalyzer("httpclient",
	`report HTTP clients without a timeout on a consumer path

http.DefaultClient, the http.Get/Post helpers and an http.Client without
Timeout wait forever for a slow server: the handler outlives the message's
lease (SQS visibility timeout, Kafka session) and the message is delivered
again while the first copy is still in flight. http.DefaultClient in a
function that makes a context with a deadline (context.WithTimeout) is not
reported: the request carries it. Fix: a client with a Timeout
shorter than the handler timeout, or the message context's deadline.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		hasRoots := len(c.Roots) > 0
		const risk = "which has no timeout, %s: a slow server keeps the message past its lease and it is delivered again while in flight; use a client with a Timeout shorter than the handler timeout"
		walk(pass, c, []ast.Node{(*ast.SelectorExpr)(nil), (*ast.CallExpr)(nil), (*ast.CompositeLit)(nil)}, func(n ast.Node, s *site) {
			switch n := n.(type) {
			case *ast.CallExpr:
				fn := callee(pass.TypesInfo, n)
				if s.Root == nil || funcPath(fn) != "net/http" || recvName(fn) != "" {
					return
				}
				switch fn.Name() {
				case "Get", "Post", "PostForm", "Head":
					r.report(n, SeverityOf(append(s.names(), constStrings(pass.TypesInfo, n)...)...),
						fmt.Sprintf("http.%s uses http.DefaultClient, "+risk, fn.Name(), s.where()))
				}
			case *ast.SelectorExpr:
				obj, ok := pass.TypesInfo.Uses[n.Sel].(*types.Var)
				if s.Root == nil || !ok || obj.Pkg() == nil || pkgPath(obj.Pkg()) != "net/http" || obj.Name() != "DefaultClient" {
					return
				}
				if setsDeadline(pass.TypesInfo, funcBody(s.Inner())) {
					return // the request's context carries a deadline made here
				}
				r.report(n, SeverityOf(s.names()...), fmt.Sprintf("http.DefaultClient, "+risk, s.where()))
			case *ast.CompositeLit:
				t := pass.TypesInfo.TypeOf(n)
				if t == nil || !isNamed(t, "net/http", "Client") {
					return
				}
				if s.Root == nil && !(hasRoots && len(s.Funcs) == 0) {
					return
				}
				for _, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok && types.ExprString(kv.Key) == "Timeout" {
						return
					}
				}
				r.report(n, SeverityOf(s.names()...),
					"http.Client without Timeout in a package with consumers: a slow server keeps the message past its lease and it is delivered again while in flight; set Timeout shorter than the handler timeout")
			}
		})
	})

// setsDeadline reports whether body makes a context with a deadline
// (context.WithTimeout, WithDeadline and their Cause forms): a request sent
// with it is bounded even through http.DefaultClient.
func setsDeadline(info *types.Info, body *ast.BlockStmt) bool {
	found := false
	if body == nil {
		return false
	}
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if fn := callee(info, call); fn != nil && funcPath(fn) == "context" && strings.HasPrefix(fn.Name(), "With") && (strings.Contains(fn.Name(), "Timeout") || strings.Contains(fn.Name(), "Deadline")) {
				found = true
			}
		}
		return !found
	})
	return found
}

// ContextAnalyzer reports context.Background/TODO where the message's
// context is available.
var ContextAnalyzer = newAnalyzer("bgcontext",
	`report context.Background() or context.TODO() on a consumer path that has the message's context

A fresh context drops the message's deadline (handler timeout, lease) and
cancellation at shutdown or rebalance: work goes on after the message was
given up and is redelivered. The message's context is the handler's ctx
parameter, Sarama's sess.Context() in ConsumeClaim, or a Watermill handler's
msg.Context(). A context.Background() given its own deadline
(context.WithTimeout, WithDeadline) is not reported: it is detached on
purpose and bounded. Fix: use the handler's context (suggested fix).`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		inert := inertContexts(pass)
		walk(pass, c, callNode, func(n ast.Node, s *site) {
			call := n.(*ast.CallExpr)
			fn := callee(pass.TypesInfo, call)
			if s.Root == nil || fn == nil || funcPath(fn) != "context" || (fn.Name() != "Background" && fn.Name() != "TODO") || inert[call] {
				return
			}
			ctx := s.Ctx
			if ctx == "" && s.Root.Kind == KindSarama && slices.Contains(s.Funcs, s.Root.Node) {
				if fd, ok := s.Root.Node.(*ast.FuncDecl); ok && len(fd.Type.Params.List) > 0 && len(fd.Type.Params.List[0].Names) > 0 {
					ctx = fd.Type.Params.List[0].Names[0].Name + ".Context()"
				}
			}
			if ctx == "" && s.Root.Kind == KindWatermill && slices.Contains(s.Funcs, s.Root.Node) {
				if msg := watermillMsgParam(pass, s.Root.Node); msg != "" {
					ctx = msg + ".Context()"
				}
			}
			if ctx == "" {
				return
			}
			r.report(call, SeverityOf(s.names()...), fmt.Sprintf(
				"context.%s() %s drops the message's deadline and cancellation: work goes on after the message was given up and it is redelivered; use %s",
				fn.Name(), s.where(), ctx),
				replaceFix("use "+ctx, call, ctx))
		})
	})

// inertContexts finds the context.Background() and TODO() calls of the
// package that carry no work or carry a bound of their own: an operand of
// == or != (values == context.Background()), the context an OpenTelemetry
// propagator extracts a remote span context into (Extract(
// context.Background(), carrier), read for its SpanContext only), and the
// parent of context.WithTimeout or WithDeadline (a detached context with
// its own deadline, e.g. a last flush at shutdown), and one made in a
// `case <-ctx.Done():` branch (a flush after the message context ended).
func inertContexts(pass *analysis.Pass) map[*ast.CallExpr]bool {
	out := map[*ast.CallExpr]bool{}
	mark := func(e ast.Expr) {
		if call, ok := ast.Unparen(e).(*ast.CallExpr); ok {
			out[call] = true
		}
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op == token.EQL || n.Op == token.NEQ {
					mark(n.X)
					mark(n.Y)
				}
			case *ast.CommClause:
				// case <-ctx.Done(): the message context is over; a fresh
				// context there flushes on purpose (pending deletes at
				// shutdown), which the cancelled one would fail.
				if es, ok := n.Comm.(*ast.ExprStmt); ok {
					if u, ok := ast.Unparen(es.X).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
						if c, ok := ast.Unparen(u.X).(*ast.CallExpr); ok {
							if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Done" {
								for _, st := range n.Body {
									ast.Inspect(st, func(m ast.Node) bool {
										if call, ok := m.(*ast.CallExpr); ok {
											if fn := callee(pass.TypesInfo, call); fn != nil && funcPath(fn) == "context" && (fn.Name() == "Background" || fn.Name() == "TODO") {
												out[call] = true
											}
										}
										return true
									})
								}
							}
						}
					}
				}
			case *ast.CallExpr:
				if fn := callee(pass.TypesInfo, n); fn != nil && strings.HasPrefix(funcPath(fn), "go.opentelemetry.io/otel") && fn.Name() == "Extract" && len(n.Args) > 0 {
					mark(n.Args[0])
				}
				// A detached context given its own bound on purpose (a
				// flush of pending deletes at shutdown, which the
				// cancelled message context would fail).
				if fn := callee(pass.TypesInfo, n); fn != nil && funcPath(fn) == "context" && (fn.Name() == "WithTimeout" || fn.Name() == "WithDeadline") && len(n.Args) > 0 {
					mark(n.Args[0])
				}
			}
			return true
		})
	}
	return out
}

// watermillMsgParam is the name of fn's *message.Message parameter (a
// Watermill handler or middleware's handler), "" when it has none.
func watermillMsgParam(pass *analysis.Pass, fn ast.Node) string {
	var ft *ast.FuncType
	switch fn := fn.(type) {
	case *ast.FuncDecl:
		ft = fn.Type
	case *ast.FuncLit:
		ft = fn.Type
	}
	if ft == nil || ft.Params == nil {
		return ""
	}
	for _, f := range ft.Params.List {
		t, ok := pass.TypesInfo.TypeOf(f.Type).(*types.Pointer)
		if !ok || !isNamed(t.Elem(), pathWatermill+"/message", "Message") {
			continue
		}
		for _, n := range f.Names {
			if n.Name != "_" {
				return n.Name
			}
		}
	}
	return ""
}

// SleepAnalyzer reports sleeps inside handlers.
var SleepAnalyzer = newAnalyzer("sleep",
	`report time.Sleep inside a consumer handler

A sleep in a handler holds the message's lease (SQS visibility timeout,
Sarama's session, Lambda's timeout) and the consumer's slot while doing
nothing; long enough and the message is delivered again while still in
flight. Not reported: a sleep between polls of an SQS receive loop, and
franz-go and kafka-go loops (they heartbeat in the background, with no lease
to lose). Fix: return an error and let the retry
middleware back off, or nack with a delay.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		walk(pass, c, callNode, func(n ast.Node, s *site) {
			call := n.(*ast.CallExpr)
			fn := callee(pass.TypesInfo, call)
			if s.Root == nil || funcPath(fn) != "time" || fn.Name() != "Sleep" {
				return
			}
			if s.Root.Kind == KindFranz || s.Root.Kind == KindKafkaGo {
				return // no lease: both clients heartbeat in the background
			}
			if s.Root.Kind == KindSQS && s.Inner() == s.Root.Node {
				return // backoff between polls
			}
			r.report(call, SeverityOf(s.names()...), fmt.Sprintf(
				"time.Sleep %s holds the message's lease while doing nothing and it may be delivered again meanwhile; return an error and let the retry back off",
				s.where()))
		})
	})

// VisibilityAnalyzer reports SQS visibility timeouts too short for the
// handler timeout.
var VisibilityAnalyzer = newAnalyzer("visibility",
	`report an SQS visibility timeout under six times the handler timeout, or a step that can outlast it with nothing extending it

AWS recommends a visibility timeout of at least six times the function's
timeout; a shorter one lets the message become visible again while a slow
(or retried) handler still runs, and a second consumer processes it too. The
check compares a literal ReceiveMessageInput.VisibilityTimeout with the
longest literal context.WithTimeout on a consumer path of the package. Fix:
raise the visibility timeout, or shorten the handler timeout. An SQS
receive loop in a package that never calls ChangeMessageVisibility is
reported where its path can wait without bound (an os/exec command with no
deadline, an HTTP client with no timeout, smtp.SendMail): another receive
starts the message again while it runs. Kafka's lease is group membership: a franz-go client with kgo.BlockRebalanceOnPoll in a
package that never calls AllowRebalance holds rebalances off, is removed
from the group, and goes on processing partitions another member owns.
A Redis stream's pending entries are its leases without a timeout: a
consumer loop that reads its group only with ">" in a package that never
reads pending entries (XREADGROUP with "0", XPENDING, XCLAIM, XAUTOCLAIM)
leaves an entry it did not ack (a crash before XACK) pending for good.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		kgoBlockedRebalance(pass, r)
		unboundedUnderVisibility(pass, c, r)
		redisPendingNeverRead(pass, c, r)
		var handler time.Duration
		var lits []*ast.KeyValueExpr
		var vis []int64
		walk(pass, c, []ast.Node{(*ast.CallExpr)(nil), (*ast.CompositeLit)(nil)}, func(n ast.Node, s *site) {
			switch n := n.(type) {
			case *ast.CallExpr:
				fn := callee(pass.TypesInfo, n)
				if s.Root == nil || funcPath(fn) != "context" || fn.Name() != "WithTimeout" || len(n.Args) != 2 {
					return
				}
				if tv := pass.TypesInfo.Types[n.Args[1]]; tv.Value != nil {
					if v, ok := constant.Int64Val(tv.Value); ok && time.Duration(v) > handler {
						handler = time.Duration(v)
					}
				}
			case *ast.CompositeLit:
				t := pass.TypesInfo.TypeOf(n)
				if t == nil || !isNamed(t, pathSQS, "ReceiveMessageInput") {
					return
				}
				for _, e := range n.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok || types.ExprString(kv.Key) != "VisibilityTimeout" {
						continue
					}
					if tv := pass.TypesInfo.Types[kv.Value]; tv.Value != nil {
						if v, ok := constant.Int64Val(tv.Value); ok {
							lits, vis = append(lits, kv), append(vis, v)
						}
					}
				}
			}
		})
		if handler <= 0 {
			return
		}
		for i, kv := range lits {
			if time.Duration(vis[i])*time.Second < 6*handler {
				r.report(kv, SeverityMedium, fmt.Sprintf(
					"VisibilityTimeout %ds is under six times the handler timeout %s: the message becomes visible again while a slow or retried handler still runs and is processed twice; use at least %ds",
					vis[i], handler, int64((6*handler).Seconds())))
			}
		}
	})

// unboundedUnderVisibility reports, on the consumer path of an SQS
// receive loop in a package that never extends a message's visibility
// (no ChangeMessageVisibility call), a step that can wait without bound:
// an external command (os/exec) with no deadline, an HTTP request through
// http.DefaultClient or an http.Client without Timeout, an SMTP send. A
// slow step keeps the message past its visibility timeout (30 s by
// default, SQS's queue attribute otherwise), and another receive starts it
// again while the first still runs (field trial: wave 51, hls-pipeline's
// ffmpeg under a fixed 900 s visibility; wave 50, cm_enrich's
// `(&http.Client{}).Post`; wave 48, form3tech's gateway client). Not
// reported in a function on the path that makes a context with a deadline
// (context.WithTimeout), nor in a Lambda handler, whose own timeout ends
// the wait.
func unboundedUnderVisibility(pass *analysis.Pass, c *Consumers, r *reporter) {
	extends := false
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && strings.HasPrefix(sqsOp(callee(pass.TypesInfo, call)), "ChangeMessageVisibility") {
				extends = true
			}
			return !extends
		})
	}
	if extends {
		return
	}
	const risk = "%s %s, and nothing in the package extends the message's visibility timeout: a slow step keeps the message past it (30 s by default, or the queue's setting) and another receive starts the same message again while this one still runs; give the step a deadline under the visibility timeout (context.WithTimeout, http.Client.Timeout), or extend the visibility with ChangeMessageVisibility while it runs"
	walk(pass, c, []ast.Node{(*ast.CallExpr)(nil), (*ast.CompositeLit)(nil)}, func(n ast.Node, s *site) {
		if s.Root == nil || s.Root.Kind != KindSQS || slices.ContainsFunc(s.Funcs, func(f ast.Node) bool { return setsDeadline(pass.TypesInfo, funcBody(f)) }) {
			return
		}
		what := ""
		switch n := n.(type) {
		case *ast.CallExpr:
			fn := callee(pass.TypesInfo, n)
			if fn == nil || recvName(fn) != "" {
				return
			}
			switch {
			case funcPath(fn) == "os/exec" && (fn.Name() == "Command" || fn.Name() == "CommandContext"):
				what = "exec." + fn.Name() + " runs an external command with no deadline"
			case funcPath(fn) == "net/http" && (fn.Name() == "Get" || fn.Name() == "Post" || fn.Name() == "PostForm" || fn.Name() == "Head"):
				what = "http." + fn.Name() + " uses http.DefaultClient, which has no timeout,"
			case funcPath(fn) == "net/smtp" && fn.Name() == "SendMail":
				what = "smtp.SendMail has no timeout"
			}
		case *ast.CompositeLit:
			if t := pass.TypesInfo.TypeOf(n); t == nil || !isNamed(t, "net/http", "Client") || slices.ContainsFunc(n.Elts, func(e ast.Expr) bool {
				kv, ok := e.(*ast.KeyValueExpr)
				return ok && types.ExprString(kv.Key) == "Timeout"
			}) {
				return
			}
			what = "an http.Client without Timeout waits for a slow server without bound"
		}
		if what != "" {
			r.report(n, SeverityMedium, fmt.Sprintf(risk, what, s.where()))
		}
	})
}

// kgoBlockedRebalance reports a franz-go client made with
// kgo.BlockRebalanceOnPoll in a package that never calls
// Client.AllowRebalance: after the first poll the client holds every
// rebalance off until AllowRebalance, so the group's rebalance waits past
// its timeout, the member is removed from the group, and it goes on
// processing and committing partitions that now belong to another member
// (franz-go's BlockRebalanceOnPoll doc: "you must call AllowRebalance").
func kgoBlockedRebalance(pass *analysis.Pass, r *reporter) {
	var blocks []*ast.CallExpr
	allows := false
	packageCalls(pass, func(call *ast.CallExpr, fn *types.Func) {
		if funcPath(fn) != pathKgo {
			return
		}
		switch {
		case fn.Name() == "BlockRebalanceOnPoll" && recvName(fn) == "":
			blocks = append(blocks, call)
		case fn.Name() == "AllowRebalance":
			allows = true
		}
	})
	if allows {
		return
	}
	for _, b := range blocks {
		r.report(b, SeverityOf("consumer group", "rebalance"), blockedRebalance+": after the first poll the client holds every rebalance off, so the group's rebalance times out, this member is removed from the group, and it goes on processing (and committing) partitions another member now owns: their records are handled twice; call cl.AllowRebalance() after each poll's records are done and committed")
	}
}

// commitsNoOffset is said by the autocommit findings of consumers that
// commit nothing at all (no consumer group): the consumer map's ack line
// for them says so instead of an auto-commit on a timer.
const commitsNoOffset = "commits no offset"

// packageCalls calls visit for every call in the package's files whose
// callee is known (a function or method, not a function value).
func packageCalls(pass *analysis.Pass, visit func(call *ast.CallExpr, fn *types.Func)) {
	filesCalls(pass.TypesInfo, pass.Files, visit)
}

// filesCalls is packageCalls over a package's files and types (the
// whole-program mode's packages).
func filesCalls(info *types.Info, files []*ast.File, visit func(call *ast.CallExpr, fn *types.Func)) {
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if fn := callee(info, call); fn != nil {
					visit(call, fn)
				}
			}
			return true
		})
	}
}

// blockedRebalance begins kgoBlockedRebalance's message.
const blockedRebalance = "kgo.BlockRebalanceOnPoll without a call of AllowRebalance in this package"

// LambdaBatchAnalyzer reports Lambda queue and stream handlers that fail
// the whole batch for one record.
var LambdaBatchAnalyzer = newAnalyzer("lambdabatch",
	`report a Lambda SQS, Kinesis, DynamoDB Streams or Kafka handler that fails the whole batch for one record

A handler that returns an error while looping over event.Records makes
Lambda fail every record of the batch, the ones already processed included:
SQS delivers them all again. Fix: return events.SQSEventResponse with
BatchItemFailures for the failed records (and enable
ReportBatchItemFailures on the event source mapping). So does an error
returned after the records were worked in goroutines. Returning those
failures together with a non-nil error fails the whole batch as well:
Lambda ignores the response of an invocation that returned an error.

On a stream (Kinesis, DynamoDB Streams, Kafka) the failed batch is retried
in place, and by default until its records expire (MaximumRetryAttempts and
MaximumRecordAgeInSeconds -1; 24 hours on Kinesis and DynamoDB Streams):
the processed records run again on every retry, and a record that can never
succeed (one that does not decode) stops its shard or partition. Fix: return
events.KinesisEventResponse or events.DynamoDBEventResponse with
BatchItemFailures naming the failed record (Lambda resumes from it), set a
retry limit and an on-failure destination; on Kafka, handle or dead-letter
the record inside the handler.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		for _, root := range c.Roots {
			source := lambdaSource(root.Kind)
			if source == "" {
				continue
			}
			if batchResponse(pass.TypesInfo, funcType(root.Node)) || handBuiltResponse(pass.TypesInfo, funcBody(root.Node)) {
				failuresWithError(pass, c, r, root)
				continue
			}
			fanOutReturns(pass, r, root, source)
			derived := recordsDerived(pass.TypesInfo, funcBody(root.Node), source)
			ast.Inspect(funcBody(root.Node), func(m ast.Node) bool {
				switch m := m.(type) {
				case *ast.FuncLit:
					return false
				case *ast.RangeStmt:
					// The batch's records ([]events.SQSMessage...), not the
					// records of an S3 or SNS event inside one message; or
					// a slice the handler built from them.
					if !recordsRange(pass.TypesInfo, m.X, source) && !derived[identObj(pass.TypesInfo, m.X)] {
						return true
					}
					ast.Inspect(m.Body, func(k ast.Node) bool {
						if _, ok := k.(*ast.FuncLit); ok {
							return false
						}
						ret, ok := k.(*ast.ReturnStmt)
						if !ok || len(ret.Results) == 0 {
							return true
						}
						last := ret.Results[len(ret.Results)-1]
						if id, ok := last.(*ast.Ident); ok && id.Name == "nil" {
							return true
						}
						r.report(ret, SeverityOf(root.Name), wholeBatch(source))
						return true
					})
					return false
				}
				return true
			})
		}
	})

// recordsRange reports whether x, a range expression, is the batch's
// records of a Lambda event from source (ev.Records).
func recordsRange(info *types.Info, x ast.Expr, source string) bool {
	sel, ok := ast.Unparen(x).(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Records" && batchRecords(info.TypeOf(x)) == source
}

// recordsDerived returns the local slices body builds from the batch's
// records: `reqs = append(reqs, r)` inside a loop over ev.Records. A later
// loop over such a slice works the batch's records one by one, and an
// error returned from it fails the whole batch (field trial, wave 52:
// squeak's requests decoded first, then generated one by one).
func recordsDerived(info *types.Info, body *ast.BlockStmt, source string) map[types.Object]bool {
	out := map[types.Object]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		loop, ok := n.(*ast.RangeStmt)
		if !ok || !recordsRange(info, loop.X, source) {
			return true
		}
		ast.Inspect(loop.Body, func(k ast.Node) bool {
			as, ok := k.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
				return true
			}
			if call, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr); ok {
				if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok && id.Name == "append" && info.Uses[id] == types.Universe.Lookup("append") {
					if o := identObj(info, as.Lhs[0]); o != nil {
						out[o] = true
					}
				}
			}
			return true
		})
		return true
	})
	return out
}

// fanOutReturns reports, in a Lambda batch handler that works the
// batch's records in goroutines (a go statement or an errgroup's Go in the
// loop over the records), an error returned after that loop: the records
// were worked whatever the error, and Lambda fails, and delivers again,
// the whole batch (field trial, wave 31: strava-wx H3, the first error
// read from the workers' channel after the WaitGroup's Wait).
func fanOutReturns(pass *analysis.Pass, r *reporter, root *Root, source string) {
	info := pass.TypesInfo
	ast.Inspect(funcBody(root.Node), func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok {
			return false
		}
		block, ok := m.(*ast.BlockStmt)
		if !ok {
			return true
		}
		for i, st := range block.List {
			loop, ok := st.(*ast.RangeStmt)
			if !ok {
				continue
			}
			if sel, ok := ast.Unparen(loop.X).(*ast.SelectorExpr); !ok || sel.Sel.Name != "Records" || batchRecords(info.TypeOf(loop.X)) != source || !startsGoroutine(info, loop.Body) {
				continue
			}
			for _, later := range block.List[i+1:] {
				ast.Inspect(later, func(k ast.Node) bool {
					if _, ok := k.(*ast.FuncLit); ok {
						return false
					}
					ret, ok := k.(*ast.ReturnStmt)
					if !ok || len(ret.Results) == 0 {
						return true
					}
					if id, ok := ast.Unparen(ret.Results[len(ret.Results)-1]).(*ast.Ident); ok && id.Name == "nil" {
						return true
					}
					r.report(ret, SeverityOf(root.Name), "returns an error after the batch's records were worked in goroutines, which "+strings.TrimPrefix(wholeBatch(source), "returning an error for one record "))
					return true
				})
			}
		}
		return true
	})
}

// startsGoroutine reports whether body starts a goroutine: a go
// statement, or a call of a method named Go that takes a function (an
// errgroup.Group's, a conc pool's).
func startsGoroutine(info *types.Info, body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			found = true
		case *ast.CallExpr:
			if fn := callee(info, n); fn != nil && fn.Name() == "Go" && recvName(fn) != "" && len(n.Args) == 1 {
				if _, ok := info.TypeOf(n.Args[0]).Underlying().(*types.Signature); ok {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// lambdaSource names the event source of a Lambda root kind ("SQS",
// "Kinesis", "DynamoDB Streams", "Kafka"), "" for other kinds.
func lambdaSource(kind string) string {
	switch kind {
	case KindLambda:
		return "SQS"
	case KindLambdaKinesis:
		return "Kinesis"
	case KindLambdaDynamoDB:
		return "DynamoDB Streams"
	case KindLambdaKafka:
		return "Kafka"
	}
	return ""
}

// wholeBatch is lambdabatch's message for a record's error returned from
// inside the loop over a batch of source. The stream rules are the event
// source mapping's defaults (AWS Lambda Developer Guide, "Lambda event
// source mappings": MaximumRetryAttempts and MaximumRecordAgeInSeconds -1,
// retry until the record expires).
func wholeBatch(source string) string {
	switch source {
	case "SQS":
		return "returning an error for one record fails the whole SQS batch: Lambda redelivers every record in it, the processed ones included; return events.SQSEventResponse with BatchItemFailures for the failed records"
	case "Kafka":
		return "returning an error for one record fails the whole Kafka batch: Lambda retries it in place, the processed records included, by default until the record expires, so a record that can never succeed (one that does not decode) stops its partition; handle or dead-letter a record that cannot succeed inside the handler, and set a retry limit and an on-failure destination on the event source mapping"
	}
	resp := "events.KinesisEventResponse"
	if source == "DynamoDB Streams" {
		resp = "events.DynamoDBEventResponse"
	}
	return fmt.Sprintf("returning an error for one record fails the whole %s batch: Lambda retries it in place, the processed records included, by default until the record expires (24 h), so a record that can never succeed (one that does not decode) stops its shard; return %s with BatchItemFailures naming the failed record (Lambda resumes from it), and set a retry limit and an on-failure destination on the event source mapping", source, resp)
}

// failuresWithError reports, in a Lambda SQS handler that answers with
// events.SQSEventResponse, a return of a response whose BatchItemFailures
// the handler filled together with a non-nil error: Lambda takes an
// invocation that returns an error as a failure of the whole batch and
// ignores the response ("Reporting batch item failures", AWS Lambda
// Developer Guide), so every record is delivered again, those that
// succeeded included.
//
// A handler that reads only the batch's first record (Records[0], never a
// loop over Records) has no other record whose work a retry repeats, so it
// is left alone (field trial, wave 39: Zircon's three stream handlers).
//
// In the whole-program mode it also reports the first return of a filled
// response with a nil error, as failuresIgnored; the command keeps that
// finding only when the repository's event source mappings never enable
// ReportBatchItemFailures (see dropFailuresHeard).
func failuresWithError(pass *analysis.Pass, c *Consumers, r *reporter, root *Root) {
	info := pass.TypesInfo
	body := funcBody(root.Node)
	filled := map[types.Object]bool{} // responses whose BatchItemFailures are assigned
	ast.Inspect(body, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok {
			for i, l := range as.Lhs {
				switch l := ast.Unparen(l).(type) {
				case *ast.SelectorExpr: // resp.BatchItemFailures = ...
					if l.Sel.Name == "BatchItemFailures" {
						if obj := baseObj(info, l.X); obj != nil {
							filled[obj] = true
						}
					}
				case *ast.IndexExpr: // resp["batchItemFailures"] = ...
					if batchFailuresKey(info, l.Index) {
						if obj := baseObj(info, l.X); obj != nil {
							filled[obj] = true
						}
					}
				case *ast.Ident: // resp := map[string]any{"batchItemFailures": ...}
					if i < len(as.Rhs) && len(as.Lhs) == len(as.Rhs) && failuresLiteral(info, as.Rhs[i]) {
						if obj := info.ObjectOf(l); obj != nil {
							filled[obj] = true
						}
					}
				}
			}
		}
		return true
	})
	firstOnly := firstRecordOnly(info, body)
	heard := false
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		ret, ok := n.(*ast.ReturnStmt)
		if !ok {
			return true
		}
		if len(ret.Results) == 1 && !firstOnly {
			// return middleware.GetBatchResult(in): a helper (of any
			// package) that fills the response and joins the errors.
			if call, ok := ast.Unparen(ret.Results[0]).(*ast.CallExpr); ok && c.failsBatch(callee(info, call)) {
				r.report(ret, SeverityOf(root.Name), fmt.Sprintf(
					"returns what %s returns: the batch item failures together with an error, so Lambda takes the error as a failure of the whole batch and ignores the response, and every record is delivered again, those that succeeded included; return the response with a nil error",
					types.ExprString(call.Fun)))
			}
			return true
		}
		if len(ret.Results) != 2 {
			return true
		}
		if obj := baseObj(info, ret.Results[0]); !(obj != nil && filled[obj] || failuresLiteral(info, ret.Results[0])) {
			return true
		}
		if id, ok := ast.Unparen(ret.Results[1]).(*ast.Ident); ok && id.Name == "nil" {
			if c.program != nil && !heard {
				heard = true
				r.report(ret, SeverityOf(root.Name), failuresIgnored)
			}
			return true
		}
		if !firstOnly {
			r.report(ret, SeverityOf(root.Name),
				"returns the batch item failures together with an error: Lambda takes the error as a failure of the whole batch and ignores the response, so every record is delivered again, those that succeeded included; return the response with a nil error")
		}
		return true
	})
}

// failuresIgnored is lambdabatch's message for a partial batch response
// returned with a nil error under event source mappings that do not
// enable it (AWS Lambda Developer Guide, "Reporting batch item failures":
// without ReportBatchItemFailures in FunctionResponseTypes the response is
// ignored and a nil error is success).
const failuresIgnored = "returns the failed records in BatchItemFailures with a nil error, but no event source mapping of the repository enables ReportBatchItemFailures (Terraform's function_response_types, SAM's FunctionResponseTypes, the CDK's reportBatchItemFailures): Lambda ignores the response and takes the nil as success, so the records named as failed are deleted from the queue, or passed over on a stream, and lost; enable ReportBatchItemFailures on the mapping"

// firstRecordOnly reports whether body reads its event's Records only as
// Records[0] (and len(Records)): no range over them, no other index, no
// slice of them, and no Records handed on whole.
func firstRecordOnly(info *types.Info, body *ast.BlockStmt) bool {
	first, other := false, false
	var stack []ast.Node
	ast.Inspect(body, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Records" && batchRecords(info.TypeOf(sel)) != "" {
			switch up := stack[len(stack)-1].(type) {
			case *ast.IndexExpr:
				if tv, ok := info.Types[up.Index]; ok && up.X == sel && tv.Value != nil && tv.Value.String() == "0" {
					first = true
				} else {
					other = true
				}
			case *ast.CallExpr:
				if id, ok := ast.Unparen(up.Fun).(*ast.Ident); !ok || id.Name != "len" {
					other = true
				}
			default:
				other = true
			}
		}
		stack = append(stack, n)
		return true
	})
	return first && !other
}

// batchResponse reports whether a Lambda handler answers with a partial
// batch response: events.SQSEventResponse, KinesisEventResponse or
// DynamoDBEventResponse.
func batchResponse(info *types.Info, ft *ast.FuncType) bool {
	if ft.Results == nil {
		return false
	}
	for _, f := range ft.Results.List {
		t := info.TypeOf(f.Type)
		for _, name := range []string{"SQSEventResponse", "KinesisEventResponse", "DynamoDBEventResponse"} {
			if t != nil && isNamed(t, pathLambdaEvt, name) {
				return true
			}
		}
		if t != nil && hasField(t, "BatchItemFailures") {
			return true // a response type of the code's own (models.BatchResult)
		}
	}
	return false
}

// hasField reports whether t is a struct, or a pointer to one, with a
// field of that name.
func hasField(t types.Type, name string) bool {
	return fieldNamed(t, func(n string) bool { return n == name })
}

// fieldNamed reports whether t is a struct, or a pointer to one, with a
// field whose name match accepts.
func fieldNamed(t types.Type, match func(string) bool) bool {
	if t == nil {
		return false
	}
	if p, ok := types.Unalias(t).Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := types.Unalias(t).Underlying().(*types.Struct)
	if !ok {
		return false
	}
	for f := range st.Fields() {
		if match(f.Name()) {
			return true
		}
	}
	return false
}

// handBuiltResponse reports whether a Lambda handler's body builds its
// partial batch response by hand (a map or a struct of its own with the
// "batchItemFailures" key Lambda reads), instead of events.SQSEventResponse.
func handBuiltResponse(info *types.Info, body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if e, ok := n.(ast.Expr); ok && failuresLiteral(info, e) {
			found = true
		}
		return !found
	})
	return found
}

// failuresLiteral reports whether e is a composite literal (or its
// address) with a batch item failures entry: the key "batchItemFailures"
// of a map, or a field BatchItemFailures.
func failuresLiteral(info *types.Info, e ast.Expr) bool {
	if u, ok := ast.Unparen(e).(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	lit, ok := ast.Unparen(e).(*ast.CompositeLit)
	if !ok {
		return false
	}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "BatchItemFailures" || batchFailuresKey(info, kv.Key) {
			return true
		}
	}
	return false
}

// batchFailuresKey reports whether e is the string constant
// "batchItemFailures", the key of Lambda's partial batch response.
func batchFailuresKey(info *types.Info, e ast.Expr) bool {
	tv, ok := info.Types[e]
	return ok && tv.Value != nil && tv.Value.Kind() == constant.String && constant.StringVal(tv.Value) == "batchItemFailures"
}

var (
	selectFrom = regexp.MustCompile(`\bFROM\s+([A-Z0-9_."]+)`)
	insertInto = regexp.MustCompile(`\bINSERT\s+(?:OR\s+\w+\s+)?INTO\s+([A-Z0-9_."]+)`)
	increment  = regexp.MustCompile(`\bSET\s+(?:[A-Z0-9_"]+\s*=\s*[^,]+,\s*)*([A-Z0-9_"]+)\s*=\s*(?:[A-Z0-9_"]+\.)?([A-Z0-9_"]+)\s*([+-])`)
)

// batchRecords names the source of a Lambda batch's records of type t:
// "SQS" for []events.SQSMessage, "Kinesis" for []events.KinesisEventRecord,
// "DynamoDB Streams" for []events.DynamoDBEventRecord, "Kafka" for
// events.KafkaEvent's map of partitions to records; "" otherwise.
func batchRecords(t types.Type) string {
	if t == nil {
		return ""
	}
	switch u := types.Unalias(t).Underlying().(type) {
	case *types.Slice:
		for name, source := range map[string]string{"SQSMessage": "SQS", "KinesisEventRecord": "Kinesis", "DynamoDBEventRecord": "DynamoDB Streams"} {
			if isNamed(u.Elem(), pathLambdaEvt, name) {
				return source
			}
		}
		return ownRecords(u.Elem())
	case *types.Map:
		if sl, ok := u.Elem().Underlying().(*types.Slice); ok && isNamed(sl.Elem(), pathLambdaEvt, "KafkaRecord") {
			return "Kafka"
		}
	}
	return ""
}

// ownRecords names the source of a Lambda batch's record type that the
// code declares itself instead of importing aws-lambda-go's events (a
// struct decoded from the same JSON): "SQS" for one with a ReceiptHandle
// and a Body (the fields of the SQS event's records, AWS Lambda developer
// guide, "Using Lambda with Amazon SQS"), "Kinesis" for one with a Kinesis
// field holding Data, "DynamoDB Streams" for one with a Dynamodb field
// holding NewImage; "" otherwise (field trial, wave 37: deplio's
// q_receiver, whose SQSEvent and SQSMessage are its own).
func ownRecords(t types.Type) string {
	st, ok := types.Unalias(t).Underlying().(*types.Struct)
	if !ok {
		return ""
	}
	has := func(st *types.Struct, name string) *types.Var {
		for i := range st.NumFields() {
			if strings.EqualFold(st.Field(i).Name(), name) {
				return st.Field(i)
			}
		}
		return nil
	}
	holds := func(name, inner string) bool {
		f := has(st, name)
		if f == nil {
			return false
		}
		t := f.Type()
		if p, ok := t.Underlying().(*types.Pointer); ok {
			t = p.Elem()
		}
		in, ok := t.Underlying().(*types.Struct)
		return ok && has(in, inner) != nil
	}
	switch {
	case has(st, "ReceiptHandle") != nil && has(st, "Body") != nil:
		return "SQS"
	case holds("Kinesis", "Data"):
		return "Kinesis"
	case holds("Dynamodb", "NewImage"):
		return "DynamoDB Streams"
	}
	return ""
}

// counts words an UPDATE's arithmetic on a column by its operator: "+"
// increments, "-" decrements.
func counts(op string) string {
	if op == "-" {
		return "decrements"
	}
	return "increments"
}

// isDBCall reports whether call is a database call whose SQL is read (see
// dbCall).
func isDBCall(info *types.Info, call *ast.CallExpr) bool {
	h, _ := dbCall(info, call)
	return h != handleNone
}

// gormSQL returns, upper-cased, the SQL a GORM call runs when the checks
// can read it: a DB's Exec text (`db.Exec("UPDATE ... SET n = n + 1")`),
// or an Update or UpdateColumn of a column to a gorm.Expr on it
// (`Update("n", gorm.Expr("n + ?", 1))`, rendered "UPDATE SET N = N + ?");
// "" for other calls (a new user's report: GORM counters went unseen).
func gormSQL(info *types.Info, call *ast.CallExpr) string {
	fn := callee(info, call)
	if fn == nil || funcPath(fn) != "gorm.io/gorm" && funcPath(fn) != "github.com/jinzhu/gorm" || recvName(fn) != "DB" {
		return ""
	}
	switch fn.Name() {
	case "Exec":
		return sqlText(info, call)
	case "Update", "UpdateColumn":
		if len(call.Args) != 2 {
			return ""
		}
		col, ok := info.Types[call.Args[0]]
		expr, isCall := ast.Unparen(call.Args[1]).(*ast.CallExpr)
		if !ok || col.Value == nil || col.Value.Kind() != constant.String || !isCall {
			return ""
		}
		if e := callee(info, expr); e == nil || e.Name() != "Expr" || funcPath(e) != funcPath(fn) {
			return ""
		}
		if text := sqlText(info, expr); text != "" {
			return "UPDATE SET " + strings.ToUpper(constant.StringVal(col.Value)) + " = " + text
		}
	}
	return ""
}

// insertTable returns the table an INSERT statement writes, with its
// schema and quotes ("" when sql is none): `INSERT INTO
// public."outbox_events" (...)` gives public."outbox_events".
func insertTable(sql string) string {
	m := insertInto.FindStringSubmatch(strings.ToUpper(sql))
	if m == nil {
		return ""
	}
	return m[1]
}

// outboxTable matches an outbox's table: the event id an insert into it
// carries is the outgoing event's own, made afresh, not the consumed
// message's (field trial, wave 51: e-commerce-platform's outbox rows,
// `EventID: uuid.NewString()` two calls up).
var outboxTable = regexp.MustCompile(`(?i)outbox`)

// recognisesDuplicate reports whether body tests an error for a
// unique-key violation itself (PostgreSQL's 23505, MySQL's 1062, SQLite's
// "UNIQUE constraint failed", or a call or name that says duplicate,
// unique or conflict): an insert there is a dedupe record whose failure
// on a redelivery the code expects and reports as such (field trial, wave
// 51: e-commerce-platform's consumer idempotency marker, mapped to
// ErrConsumerIdempotencyDuplicate and read as a replay by its caller).
func recognisesDuplicate(info *types.Info, body *ast.BlockStmt) bool {
	if body == nil {
		return false
	}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		ifs, ok := n.(*ast.IfStmt)
		if !ok || found {
			return !found
		}
		ast.Inspect(ifs.Cond, func(m ast.Node) bool {
			switch m := m.(type) {
			case *ast.BasicLit:
				found = found || m.Kind == token.STRING && uniqueViolation.MatchString(m.Value) || m.Kind == token.INT && (m.Value == "1062")
			case *ast.Ident:
				found = found || duplicateName.MatchString(m.Name) && isErrorTest(info, ifs.Cond)
			}
			return !found
		})
		return !found
	})
	return found
}

// uniqueViolation matches the text of a unique-key violation: its
// SQLSTATE (23505), MySQL's error number (1062) or SQLite's message.
var uniqueViolation = regexp.MustCompile(`23505|1062|(?i)unique constraint|duplicate key`)

// isErrorTest reports whether cond reads an error value.
func isErrorTest(info *types.Info, cond ast.Expr) bool {
	found := false
	ast.Inspect(cond, func(n ast.Node) bool {
		if e, ok := n.(ast.Expr); ok && !found {
			if t := info.TypeOf(e); t != nil && isError(t) {
				found = true
			}
		}
		return !found
	})
	return found
}

// dedupeInsert reports whether an INSERT records an event by itself: it
// dedupes (see guardedInsert) and is not an upsert that counts (ON
// CONFLICT DO UPDATE SET n = n + 1 applies a redelivery again).
func dedupeInsert(sql string) bool {
	return strings.Contains(sql, "INSERT") && guardedInsert(sql) && increment.FindStringSubmatch(sql) == nil
}

// guardedInsert reports whether an INSERT dedupes by itself.
func guardedInsert(sql string) bool {
	return strings.Contains(sql, "ON CONFLICT") || strings.Contains(sql, "OR IGNORE") || strings.Contains(sql, "ON DUPLICATE")
}

// CheckActAnalyzer reports check-then-act dedupe and Watermill's in-memory
// Deduplicator.
var CheckActAnalyzer = newAnalyzer("checkact",
	`report a dedupe that checks then acts

A SELECT (or EXISTS) for an id followed by an INSERT of it lets two
concurrent deliveries both pass the check. A plain INSERT of the message's
own id (Watermill's UUID, an SQS MessageId, an event id field) without ON
CONFLICT fails on the unique key when the message is redelivered (it is
retried until dead-lettered, or blocks its partition), or inserts a second
row when there is no unique key. A dedupe done in two steps around the work
(IsProcessed(id), the work, then MarkProcessed(id)) lets two concurrent
deliveries both pass, and a crash between the work and the mark does the
work again. The other order loses work: a record that a redelivery is
skipped on, written before the external call it guards, makes a crash or a
failed call after the write skip the redelivery, so the call is never made;
so does an INSERT whose unique-key failure is taken for "seen".
So does a claim taken in Redis before the work (SADD or SETNX, a skip when
it was already there, then a database write or an external call) that is
never given back: the work's failure leaves the claim, and the redelivery
skips the message. Watermill's Deduplicator keeps its
keys in memory (lost on restart, not shared between instances) and records a
key before the handler runs, so a failed handler's retry is dropped. Fix: make
the insert the check (INSERT ... ON CONFLICT DO NOTHING under a unique
constraint, in the handler's transaction), as ackgap's inbox does.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		usesInbox := false
		walk(pass, c, []ast.Node{(*ast.CallExpr)(nil), (*ast.CompositeLit)(nil)}, func(n ast.Node, s *site) {
			if call, ok := n.(*ast.CallExpr); ok {
				if fn := callee(pass.TypesInfo, call); fn != nil && strings.HasPrefix(funcPath(fn), pathAckgap) && (fn.Name() == "Inbox" || fn.Name() == "New" || fn.Name() == "Middlewares") {
					usesInbox = true
				}
			}
		})
		walk(pass, c, []ast.Node{(*ast.CompositeLit)(nil), (*ast.CallExpr)(nil)}, func(n ast.Node, s *site) {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if t := pass.TypesInfo.TypeOf(n); t != nil && isNamed(t, pathWatermill+"/message/router/middleware", "Deduplicator") && !usesInbox {
					r.report(n, SeverityOf(s.names()...),
						"Watermill's Deduplicator as the only guard keeps keys in memory (lost on restart, not shared between instances) and records a key before the handler runs, so a failed handler's retry is dropped; dedupe with an inbox row in the handler's transaction (ackgap's inbox middleware)")
				}
			case *ast.CallExpr:
				if s.Root == nil {
					return
				}
				h, name := dbCall(pass.TypesInfo, n)
				if h != handleNone && s.Root.Kind != KindAckgap && !usesInbox {
					if sql := sqlText(pass.TypesInfo, n); strings.HasPrefix(strings.TrimSpace(sql), "INSERT") && !guardedInsert(sql) && !(s.InTx && dedupeInsertBefore(pass, funcBody(s.Inner()), n.Pos())) &&
						!outboxTable.MatchString(insertTable(sql)) && !recognisesDuplicate(pass.TypesInfo, funcBody(s.Inner())) {
						if id := messageIDArg(pass.TypesInfo, n); id != "" {
							r.report(n, SeverityOf(s.names()...), fmt.Sprintf(
								"inserts the message's id (%s) %s without ON CONFLICT: a redelivery either fails on the unique key (and is retried until it is dead-lettered or blocks its partition) or, with no unique key, inserts a second row; use INSERT ... ON CONFLICT DO NOTHING (INSERT IGNORE on MySQL) and treat no row inserted as a duplicate",
								id, s.where()))
						}
					}
				}
				if h == handleNone || !strings.HasPrefix(name, "Query") {
					return
				}
				sql := sqlText(pass.TypesInfo, n)
				m := selectFrom.FindStringSubmatch(sql)
				if !strings.HasPrefix(strings.TrimSpace(sql), "SELECT") || m == nil {
					return
				}
				table := strings.Trim(m[1], `"`)
				body := funcBody(s.Inner())
				var insert *ast.CallExpr
				ast.Inspect(body, func(k ast.Node) bool {
					call, ok := k.(*ast.CallExpr)
					if !ok || insert != nil || call.Pos() < n.End() {
						return insert == nil
					}
					if h, _ := dbCall(pass.TypesInfo, call); h != handleNone {
						ins := sqlText(pass.TypesInfo, call)
						if im := insertInto.FindStringSubmatch(ins); im != nil && strings.Trim(im[1], `"`) == table && !guardedInsert(ins) {
							insert = call
						}
					}
					return true
				})
				if insert == nil {
					return
				}
				r.report(n, SeverityOf(append(s.names(), table)...), fmt.Sprintf(
					"checks for the id in %s, then inserts it at line %d: two concurrent deliveries both pass the check and both apply; make the insert the check (INSERT ... ON CONFLICT DO NOTHING under a unique constraint) and act on rows affected",
					strings.ToLower(table), pass.Fset.Position(insert.Pos()).Line))
			}
		})
		if !usesInbox {
			checkThenMark(pass, c, r)
			markBeforeWork(pass, c, r)
			claimBeforeWork(pass, c, r)
		}
	})

// IdemKeyAnalyzer reports non-idempotent effects without a key.
var IdemKeyAnalyzer = newAnalyzer("idemkey",
	`report non-idempotent effects without an idempotency key on a consumer path

An HTTP POST or PATCH sent without an Idempotency-Key header lets the
receiver apply a redelivered message twice; an UPDATE ... SET n = n + 1 with
no dedupe record in the same transaction counts a redelivery twice, and so
does a value read, changed by arithmetic in Go and written back, and a DynamoDB UpdateExpression "SET n = n + :x" or "ADD n :x" without a
condition. An idempotency or deduplication key made afresh per delivery
(uuid.New, ulid, rand, time.Now) defeats the receiver's dedupe. Fix: send a
key derived from the event id (set directly or through a helper that takes
the request), and record the event in an inbox row in the same transaction.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		walk(pass, c, callNode, func(n ast.Node, s *site) {
			call := n.(*ast.CallExpr)
			if s.Root == nil {
				return
			}
			fn := callee(pass.TypesInfo, call)
			if fn == nil {
				return
			}
			if funcPath(fn) == "net/http" && recvName(fn) == "" && (fn.Name() == "NewRequest" || fn.Name() == "NewRequestWithContext") {
				checkRequestKey(pass, c, r, call, fn, s)
				return
			}
			if redisIncrCmd[redisCmd(pass.TypesInfo, call)] && s.Root.Kind != KindAckgap && !hasDedupeInsert(pass, funcBody(s.Inner())) && !c.deduped(s.Root, s.Inner()) && !redisGated(pass.TypesInfo, funcBody(s.Inner())) && !redisExpires(pass.TypesInfo, funcBody(s.Inner())) {
				r.report(call, SeverityOf(append(s.names(), constStrings(pass.TypesInfo, call)...)...), fmt.Sprintf(
					"increments a Redis counter (%s) %s with no dedupe record: each redelivery counts again; claim the event id first (SETNX, or SADD read as a claim) or keep the count in the transaction that records the message",
					qualName(fn), s.where()))
				return
			}
			if sql := gormSQL(pass.TypesInfo, call); (sql != "" || isDBCall(pass.TypesInfo, call)) && s.Root.Kind != KindAckgap {
				if sql == "" {
					sql = sqlText(pass.TypesInfo, call)
				}
				m := increment.FindStringSubmatch(sql)
				// A Redis claim gate in the same function is checkact's
				// (claimBeforeWork): the count itself is deduped.
				if m == nil || m[1] != m[2] || guardedUpdate(sql) || dedupedBefore(pass, funcBody(s.Inner()), call) || redisGated(pass.TypesInfo, funcBody(s.Inner())) {
					return
				}
				r.report(call, SeverityOf(append(s.names(), sql)...), fmt.Sprintf(
					"%s %s with no dedupe record in the same transaction: each redelivery counts again; insert an inbox row (consumer, event id) under a unique constraint in the same transaction and skip on conflict",
					counts(m[3]), strings.ToLower(m[1])))
			}
			if k := constStrings(pass.TypesInfo, call); fn.Name() == "Set" || fn.Name() == "Add" {
				if recvName(fn) == "Header" && len(k) > 0 && idemKeyName.MatchString(k[0]) && len(call.Args) == 2 {
					at, where := ast.Node(call), s
					g := freshRandom(pass.TypesInfo, call.Args[1])
					if g == "" {
						// Made by a caller: reported where it is made, on
						// that caller's consumer path only (a new user's
						// report: a helper shared with a keyed caller).
						var pc *paramCall
						g, pc = freshFromCallers(pass, funcBody(s.Inner()), call.Args[1], 2, func(n ast.Node) bool { return c.reach[n] != nil })
						if pc != nil {
							at, where = pc.arg, &site{Funcs: []ast.Node{pc.decl}, Root: c.RootOf(pc.decl), Path: c.PathOf(pc.decl)}
						}
					}
					if g != "" {
						reportFreshKey(r, at, where, k[0], g)
					}
				}
			}
		})
		readModifyWrite(pass, c, r)
		walk(pass, c, []ast.Node{(*ast.CompositeLit)(nil)}, func(n ast.Node, s *site) {
			if s.Root == nil {
				return
			}
			lit := n.(*ast.CompositeLit)
			if field := mongoInc(pass.TypesInfo, lit); field != "" && !hasDedupeInsert(pass, funcBody(s.Inner())) {
				r.report(lit, SeverityOf(append(s.names(), field)...), fmt.Sprintf(
					"increments %s with a MongoDB $inc %s and no dedupe record: each redelivery counts again; record the message id in the same transaction (a processed-events document under a unique index, inserted first) or write the total, not the change",
					field, s.where()))
				return
			}
			var update, condition string
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, ok := kv.Key.(*ast.Ident)
				if !ok {
					continue
				}
				switch {
				case idemKeyName.MatchString(key.Name):
					if g := freshRandom(pass.TypesInfo, kv.Value); g != "" {
						reportFreshKey(r, kv, s, key.Name, g)
					}
				case key.Name == "UpdateExpression":
					update = stringValue(pass.TypesInfo, kv.Value)
				case key.Name == "ConditionExpression":
					condition = "set"
				}
			}
			if update == "" || condition != "" {
				return
			}
			attr, op := "", "+"
			if m := increment.FindStringSubmatch(strings.ToUpper(update)); m != nil && m[1] == m[2] {
				attr, op = strings.ToLower(m[1]), m[3]
			} else if m := dynamoAdd.FindStringSubmatch(update); m != nil {
				attr = m[1]
			}
			if attr == "" {
				return
			}
			r.report(lit, SeverityOf(append(s.names(), update)...), fmt.Sprintf(
				"%s %s with a DynamoDB update (%q) %s and no condition: each redelivery counts again; write a processed-event item keyed by the message id with attribute_not_exists in the same TransactWriteItems, or make the update conditional on it",
				counts(op), attr, update, s.where()))
		})
	})

// redisExpires reports whether body sets a Redis key's expiry (EXPIRE,
// PEXPIRE, EXPIREAT): a counter in a time window (a rate or velocity
// limit), approximate by design, is not reported as a count.
func redisExpires(info *types.Info, body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && strings.Contains(redisCmd(info, call), "Expire") {
			found = true
		}
		return !found
	})
	return found
}

// redisIncrCmd names the Redis commands that add to a counter.
var redisIncrCmd = map[string]bool{"Incr": true, "IncrBy": true, "IncrByFloat": true, "HIncrBy": true, "HIncrByFloat": true, "ZIncrBy": true}

// mongoInc returns the field a MongoDB update document increments
// (bson.M{"$inc": bson.M{"total": n}}, or the bson.D form), or "".
func mongoInc(info *types.Info, lit *ast.CompositeLit) string {
	n, ok := types.Unalias(info.TypeOf(lit)).(*types.Named)
	if !ok || n.Obj().Pkg() == nil || !strings.HasPrefix(pkgPath(n.Obj().Pkg()), "go.mongodb.org/mongo-driver") {
		return "" // bson.M, bson.D, primitive.M of the v1 or v2 driver
	}
	for _, e := range lit.Elts {
		key, val := bsonElem(e)
		if key == nil || stringValue(info, key) != "$inc" {
			continue
		}
		if inner, ok := ast.Unparen(val).(*ast.CompositeLit); ok {
			for _, f := range inner.Elts {
				if k, _ := bsonElem(f); k != nil {
					if name := stringValue(info, k); name != "" {
						return name
					}
				}
			}
		}
		return "a field"
	}
	return ""
}

// bsonElem returns the key and value of one element of a bson document
// literal: "k": v of a bson.M, {"k", v} or {Key: "k", Value: v} of a
// bson.D.
func bsonElem(e ast.Expr) (key, val ast.Expr) {
	switch e := e.(type) {
	case *ast.KeyValueExpr:
		return e.Key, e.Value
	case *ast.CompositeLit:
		if len(e.Elts) != 2 {
			return nil, nil
		}
		k, kok := e.Elts[0].(*ast.KeyValueExpr)
		v, vok := e.Elts[1].(*ast.KeyValueExpr)
		if kok && vok {
			return k.Value, v.Value
		}
		if !kok && !vok {
			return e.Elts[0], e.Elts[1]
		}
	}
	return nil, nil
}

// messageIDName matches the fields that carry a message's own id.
var messageIDName = regexp.MustCompile(`^(UUID|MessageId|MessageID|EventID|EventId|EventUUID)$`)

// messageIDArg returns the argument expression of a database call that is
// (or holds, in a map or struct literal) the message's id, or "".
func messageIDArg(info *types.Info, call *ast.CallExpr) string {
	found := ""
	for _, a := range call.Args {
		ast.Inspect(a, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && found == "" && messageIDName.MatchString(sel.Sel.Name) {
				if _, isField := info.Uses[sel.Sel].(*types.Var); isField {
					found = types.ExprString(sel)
				}
			}
			return found == ""
		})
	}
	return found
}

// idemKeyName matches the names of idempotency and deduplication keys:
// header names and struct fields (IdempotencyKey, MessageDeduplicationId,
// Idempotency-Key, and the AWS APIs' ClientToken and ClientRequestToken,
// with which EC2, ECS and others run a request once per token; X-Request-Id
// used as a dedupe key is not included).
var idemKeyName = regexp.MustCompile(`(?i)^(x-)?idempoten|dedup|^client(request)?token$`)

// dynamoAdd matches a DynamoDB update expression's ADD action on an
// attribute (a number added to itself).
var dynamoAdd = regexp.MustCompile(`(?i)(?:^|\s)ADD\s+([A-Za-z_#][\w.]*)\s+:`)

// freshRandom returns the random generator a key expression calls (uuid,
// ulid, ksuid, xid, math/rand, crypto/rand, Watermill's NewUUID/NewULID,
// time.Now): a key made afresh on each delivery, so a redelivery carries a
// new key and the receiver cannot recognise it. "" when there is none.
func freshRandom(info *types.Info, e ast.Expr) string {
	if id, ok := ast.Unparen(e).(*ast.Ident); ok {
		return localFresh(info, id, id.Pos())
	}
	found := ""
	ast.Inspect(e, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found != "" {
			return found == ""
		}
		fn := callee(info, call)
		if fn == nil {
			return true
		}
		path, name := funcPath(fn), fn.Name()
		switch {
		case strings.HasSuffix(path, "/uuid") && (strings.HasPrefix(name, "New") || name == "Must"),
			strings.HasSuffix(path, "/ulid") || strings.HasSuffix(path, "/ulid/v2") || strings.HasSuffix(path, "/ksuid") || strings.HasSuffix(path, "/xid"),
			path == "math/rand" || path == "math/rand/v2" || path == "crypto/rand",
			path == pathWatermill && (name == "NewUUID" || name == "NewULID" || name == "NewShortUUID"),
			path == "time" && name == "Now":
			found = qualName(fn)
		}
		return found == ""
	})
	return found
}

// reportFreshKey reports an idempotency key made afresh per delivery.
func reportFreshKey(r *reporter, n ast.Node, s *site, key, gen string) {
	r.report(n, SeverityOf(append(s.names(), key)...), fmt.Sprintf(
		"%s is made with %s %s: every redelivery carries a new key, so the receiver applies it again; derive the key from the message (its event id, or a hash of it)",
		key, gen, s.where()))
}

// stringValue returns a constant string expression's value, "" otherwise.
func stringValue(info *types.Info, e ast.Expr) string {
	if tv, ok := info.Types[e]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
		return constant.StringVal(tv.Value)
	}
	// aws.String("...")
	if call, ok := ast.Unparen(e).(*ast.CallExpr); ok && len(call.Args) == 1 {
		return stringValue(info, call.Args[0])
	}
	return ""
}

func checkRequestKey(pass *analysis.Pass, c *Consumers, r *reporter, call *ast.CallExpr, fn *types.Func, s *site) {
	mi := 0
	if fn.Name() == "NewRequestWithContext" {
		mi = 1
	}
	if len(call.Args) <= mi {
		return
	}
	tv := pass.TypesInfo.Types[call.Args[mi]]
	if tv.Value == nil || tv.Value.Kind() != constant.String {
		return
	}
	method := strings.ToUpper(constant.StringVal(tv.Value))
	if method != "POST" && method != "PATCH" {
		return // PUT and DELETE are idempotent methods (RFC 9110, 9.2.2): a repeat leaves what the first made
	}
	// Find the variable the request is assigned to.
	body := funcBody(s.Inner())
	if tokenRequest(pass.TypesInfo, body, call) || behindGuard(pass, c, s, call) {
		return // an OAuth token fetch, or a request a redelivery skips
	}
	if queryVerb.MatchString(funcNodeName(s.Inner())) || len(call.Args) > mi+1 && urlNames(pass.TypesInfo, body, call.Args[mi+1], queryEndpoint) {
		return // a question (validate, predict, search): a repeat changes nothing
	}
	var req types.Object
	ast.Inspect(body, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok && len(as.Rhs) == 1 && ast.Unparen(as.Rhs[0]) == call && len(as.Lhs) > 0 {
			if id, ok := as.Lhs[0].(*ast.Ident); ok {
				req = pass.TypesInfo.ObjectOf(id)
			}
		}
		return req == nil
	})
	if req == nil {
		return
	}
	keyed := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			cf := callee(pass.TypesInfo, n)
			if cf != nil && funcPath(cf) == "net/http" && recvName(cf) == "Header" && (cf.Name() == "Set" || cf.Name() == "Add") {
				for _, k := range constStrings(pass.TypesInfo, n) {
					if strings.EqualFold(k, "Idempotency-Key") {
						keyed = true
					}
				}
				return true
			}
			if cf != nil && funcPath(cf) == "net/http" && recvName(cf) == "Client" {
				return true
			}
			for _, a := range n.Args { // handed to a helper: assume it sets the key
				if id, ok := ast.Unparen(a).(*ast.Ident); ok && pass.TypesInfo.Uses[id] == req {
					keyed = true
				}
			}
		case *ast.IndexExpr: // req.Header["Idempotency-Key"] = ...
			if tv := pass.TypesInfo.Types[n.Index]; tv.Value != nil && tv.Value.Kind() == constant.String && strings.EqualFold(constant.StringVal(tv.Value), "Idempotency-Key") {
				keyed = true
			}
		}
		return true
	})
	if keyed {
		return
	}
	r.report(call, SeverityOf(append(s.names(), constStrings(pass.TypesInfo, call)...)...), fmt.Sprintf(
		"HTTP %s %s without an Idempotency-Key header: the receiver applies a redelivered message twice; set Idempotency-Key to a key derived from the event id",
		method, s.where()))
}

// setColumn matches one assignment of an UPDATE's SET list.
var setColumn = regexp.MustCompile(`(?:SET|,)\s*"?([A-Z0-9_]+)"?\s*=`)

// guardedUpdate reports whether an UPDATE's WHERE clause tests a column its
// SET list assigns (SET seq = $1 ... WHERE seq = $1 - 1, SET state = 'paid'
// WHERE state = 'pending'): a guarded transition, which a redelivery finds
// already made and leaves alone, so its increments do not repeat.
func guardedUpdate(sql string) bool {
	set, where, ok := strings.Cut(sql, " WHERE ")
	if !ok {
		return false
	}
	for _, m := range setColumn.FindAllStringSubmatch(set, -1) {
		if regexp.MustCompile(`\b` + m[1] + `\b`).MatchString(where) {
			return true
		}
	}
	return false
}

// hasDedupeInsert reports whether body inserts a row that dedupes by itself.
// dedupedBefore reports whether body makes a dedupe insert (see
// hasDedupeInsert) before at on every path to it: earlier, in a block that
// also holds at (not in the other branch of an if: wave 35, TrackBox's
// failure counter beside the ok branch's ON CONFLICT insert of a tracking
// event).
func dedupedBefore(pass *analysis.Pass, body *ast.BlockStmt, at ast.Node) bool {
	if body == nil {
		return false
	}
	found := false
	var blocks []*ast.BlockStmt
	ast.Inspect(body, func(n ast.Node) bool {
		if found {
			return false
		}
		if n == nil {
			return true
		}
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if b, ok := n.(*ast.BlockStmt); ok {
			blocks = append(blocks, b)
		}
		call, ok := n.(*ast.CallExpr)
		if !ok || call.Pos() >= at.Pos() {
			return true
		}
		if h, _ := dbCall(pass.TypesInfo, call); h == handleNone || !dedupeInsert(sqlText(pass.TypesInfo, call)) {
			return true
		}
		// The innermost block around the insert must hold at too.
		for i := len(blocks) - 1; i >= 0; i-- {
			if b := blocks[i]; b.Pos() <= call.Pos() && call.End() <= b.End() {
				found = b.Pos() <= at.Pos() && at.End() <= b.End()
				break
			}
		}
		return !found
	})
	return found
}

func hasDedupeInsert(pass *analysis.Pass, body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if h, _ := dbCall(pass.TypesInfo, call); h != handleNone {
				if dedupeInsert(sqlText(pass.TypesInfo, call)) {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// dedupeInsertBefore reports whether body makes, before pos, an insert
// that dedupes by itself (an inbox row: INSERT ... ON CONFLICT DO
// NOTHING): with a transaction open, a plain insert of the event's id
// after it belongs to an event the inbox let through (field trial, wave
// 51: omniflow's processed_events then inventory_movements_log).
func dedupeInsertBefore(pass *analysis.Pass, body *ast.BlockStmt, pos token.Pos) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if n == nil || found || n.Pos() >= pos {
			return false
		}
		if call, ok := n.(*ast.CallExpr); ok {
			if h, _ := dbCall(pass.TypesInfo, call); h != handleNone && dedupeInsert(sqlText(pass.TypesInfo, call)) {
				found = true
			}
		}
		return !found
	})
	return found
}

// Analyzers returns every ackgapvet check, in a stable order.
func Analyzers() []*analysis.Analyzer {
	return []*analysis.Analyzer{
		EffectAnalyzer, PoolTxAnalyzer, EarlyAckAnalyzer, AutoCommitAnalyzer,
		CheckActAnalyzer, IdemKeyAnalyzer, TransitionAnalyzer,
		HTTPClientAnalyzer, ContextAnalyzer, SleepAnalyzer, VisibilityAnalyzer, LambdaBatchAnalyzer,
		ErrAckAnalyzer, CommitOrderAnalyzer, MultiTxAnalyzer, AppendAnalyzer, PoisonAnalyzer,
	}
}

// kafkaGoNoGroup reports kafka-go ReaderConfig literals without a GroupID
// in a package that has a kafka-go reader loop (see AutoCommitAnalyzer):
// nothing is committed, so where the reader starts decides what a restart
// repeats or loses. A package that assigns a GroupID anywhere, or calls
// SetOffset with a non-constant offset (its own stored position), is left
// alone.
func kafkaGoNoGroup(pass *analysis.Pass, c *Consumers, r *reporter) {
	if !slices.ContainsFunc(c.Roots, func(rt *Root) bool { return rt.Kind == KindKafkaGo }) {
		return
	}
	var lits []*ast.CompositeLit
	atNewest, leaveAlone := false, false
	newest := func(e ast.Expr) bool { // kafka.LastOffset (-1)
		tv, ok := pass.TypesInfo.Types[e]
		return ok && tv.Value != nil && constant.Compare(tv.Value, token.EQL, constant.MakeInt64(-1))
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if t := pass.TypesInfo.TypeOf(n); t == nil || !isNamed(t, pathKafkaGo, "ReaderConfig") {
					return true
				}
				grouped := false
				for _, e := range n.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						return true // positional: every field is set
					}
					switch types.ExprString(kv.Key) {
					case "GroupID":
						grouped = true
					case "StartOffset":
						atNewest = atNewest || newest(kv.Value)
					}
				}
				if !grouped {
					lits = append(lits, n)
				}
			case *ast.SelectorExpr:
				if n.Sel.Name == "GroupID" {
					if t := pass.TypesInfo.TypeOf(n.X); t != nil && isNamed(elemType(t), pathKafkaGo, "ReaderConfig") {
						leaveAlone = true // set somewhere: a group after all
					}
				}
			case *ast.CallExpr:
				fn := callee(pass.TypesInfo, n)
				if fn == nil || funcPath(fn) != pathKafkaGo || recvName(fn) != "Reader" {
					return true
				}
				switch fn.Name() {
				case "SetOffsetAt":
					atNewest = true
				case "SetOffset":
					if len(n.Args) == 1 {
						if tv, ok := pass.TypesInfo.Types[n.Args[0]]; ok && tv.Value != nil {
							atNewest = atNewest || newest(n.Args[0])
						} else {
							leaveAlone = true // the application's stored position
						}
					}
				}
			}
			return true
		})
	}
	if leaveAlone {
		return
	}
	where := "at its first offset on every start (kafka-go's default), so every restart handles the partition's retained messages again"
	if atNewest {
		where = "at the newest offset (or a time) on every start, so what was published while it was down is never read"
	}
	for _, lit := range lits {
		r.report(lit, SeverityOf("consumer group", "offset"), "kafka-go ReaderConfig without a GroupID, read in a loop: the reader "+commitsNoOffset+" and starts "+where+", and it reads one partition only; set GroupID and commit after the work (FetchMessage, then CommitMessages)")
	}
}

// saramaPartitionNoOffset reports, in a package with a loop over a Sarama
// partition consumer's Messages(), a ConsumePartition call (IBM or Shopify
// Sarama; not sarama-cluster) given a constant offset, OffsetNewest (-1) or
// OffsetOldest (-2), when nothing in the package manages offsets (no
// offset manager: NewOffsetManagerFromClient, ManagePartition, a
// PartitionOffsetManager's MarkOffset). A partition consumer belongs to no
// consumer group and commits nothing, so every start begins at that
// constant: at OffsetNewest what arrived while the process was down is never
// read, at OffsetOldest every retained message is handled again (field
// trial, wave 36: WBTech_L0 H1). An offset the code computes (its own stored
// position) is not reported.
func saramaPartitionNoOffset(pass *analysis.Pass, c *Consumers, r *reporter) {
	if !slices.ContainsFunc(c.Roots, func(rt *Root) bool { return rt.Kind == KindSaramaPartition }) {
		return
	}
	var calls []*ast.CallExpr
	managed := false
	packageCalls(pass, func(call *ast.CallExpr, fn *types.Func) {
		if !isSaramaPath(funcPath(fn)) || funcPath(fn) == pathSaramaCluster {
			return
		}
		switch {
		case strings.HasPrefix(fn.Name(), "NewOffsetManager"), fn.Name() == "ManagePartition",
			recvName(fn) == "PartitionOffsetManager":
			managed = true
		case fn.Name() == "ConsumePartition" && len(call.Args) == 3:
			if tv, ok := pass.TypesInfo.Types[call.Args[2]]; ok && tv.Value != nil {
				calls = append(calls, call)
			}
		}
	})
	if managed {
		return
	}
	for _, call := range calls {
		where := "at the newest offset (OffsetNewest): what was published while it was down is never read"
		if tv := pass.TypesInfo.Types[call.Args[2]]; constant.Compare(tv.Value, token.EQL, constant.MakeInt64(-2)) {
			where = "at the oldest retained offset (OffsetOldest): every restart handles every retained message again"
		} else if !constant.Compare(tv.Value, token.EQL, constant.MakeInt64(-1)) {
			where = "at offset " + tv.Value.String() + " again"
		}
		r.report(call, SeverityOf("consumer group", "offset"), "Sarama ConsumePartition with a constant offset and no stored position: a partition consumer belongs to no consumer group and "+commitsNoOffset+", so every start reads "+where+"; join a consumer group (sarama.NewConsumerGroup, MarkMessage after the work) or store the offset after the work and pass it here")
	}
}

// watermillKafkaNoGroup reports a watermill-kafka SubscriberConfig literal
// without a ConsumerGroup (or with an empty one): the subscriber then
// consumes each partition without a group (Subscriber.consumeWithoutConsumerGroups
// in watermill-kafka), from Sarama's Consumer.Offsets.Initial
// (OffsetNewest unless overwritten), and commits no offset. A
// watermill-redisstream SubscriberConfig without one reads in fan-out
// mode: XREAD from FanOutOldestId ("$" unless set), no XACK.
func watermillKafkaNoGroup(pass *analysis.Pass, r *reporter) {
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			named, ok := types.Unalias(pass.TypesInfo.TypeOf(lit)).(*types.Named)
			if !ok || named.Obj().Pkg() == nil || named.Obj().Name() != "SubscriberConfig" {
				return true
			}
			kafka, redis := strings.HasPrefix(pkgPath(named.Obj().Pkg()), pathWatermill+"-kafka"), strings.HasPrefix(pkgPath(named.Obj().Pkg()), pathWatermill+"-redisstream")
			if !kafka && !redis {
				return true
			}
			fromFirst := false // redisstream's FanOutOldestId "0"
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					return true // positional: every field is set
				}
				k, ok := kv.Key.(*ast.Ident)
				if !ok {
					continue
				}
				tv, known := pass.TypesInfo.Types[kv.Value]
				switch k.Name {
				case "ConsumerGroup":
					if !known || tv.Value == nil || constant.StringVal(tv.Value) != "" {
						return true
					}
				case "FanOutOldestId":
					if !known || tv.Value == nil {
						return true // the application's stored position
					}
					fromFirst = constant.StringVal(tv.Value) == "0"
				}
			}
			msg := "watermill-kafka SubscriberConfig without a ConsumerGroup: the subscriber reads every partition from Sarama's initial offset (OffsetNewest by default) and " + commitsNoOffset + ", so messages published while it is down are never read and every replica handles every message; set ConsumerGroup"
			if redis {
				// Fan-out mode (watermill-redisstream's SubscriberConfig:
				// "When empty, fan-out mode will be used"): XREAD from
				// FanOutOldestId, "$" by default, and no XACK (field
				// trial, wave 49: event-driven-go's splitter).
				msg = "watermill-redisstream SubscriberConfig without a ConsumerGroup: the subscriber reads in fan-out mode (XREAD, no consumer group, no XACK) from the stream's newest entry (FanOutOldestId \"$\" by default), so messages added while it is down are never read, a failed handler's message is not read again after a restart, and every replica handles every message; set ConsumerGroup"
				if fromFirst {
					msg = "watermill-redisstream SubscriberConfig without a ConsumerGroup and FanOutOldestId \"0\": the subscriber reads in fan-out mode (XREAD, no consumer group, no XACK) from the stream's first entry on every start, so every restart handles the stream's retained messages again, and every replica handles every message; set ConsumerGroup"
				}
			}
			r.report(lit, SeverityOf("consumer group", "offset"), msg)
			return true
		})
	}
}

// amqpAutoAckArg returns, for a call of a RabbitMQ channel's Consume or
// ConsumeWithContext (amqp091-go, streadway/amqp), whether its autoAck
// argument is the constant true. A wrapper of the application's that
// returns the deliveries' channel and takes its own autoAck parameter
// counts as Consume (field trial, wave 51: order-processing-demo's
// RabbitMQ.Consume passes it straight through).
func amqpAutoAckArg(info *types.Info, call *ast.CallExpr) bool {
	fn := callee(info, call)
	if fn == nil {
		return false
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok {
		return false
	}
	channel := isAMQP(funcPath(fn)) && recvName(fn) == "Channel" && (fn.Name() == "Consume" || fn.Name() == "ConsumeWithContext")
	if !channel && !returnsDeliveries(sig) {
		return false
	}
	for i := range sig.Params().Len() {
		if strings.EqualFold(sig.Params().At(i).Name(), "autoAck") && i < len(call.Args) {
			tv, ok := info.Types[call.Args[i]]
			return ok && tv.Value != nil && tv.Value.Kind() == constant.Bool && constant.BoolVal(tv.Value)
		}
	}
	return false
}

// returnsDeliveries reports whether sig returns a channel of RabbitMQ
// deliveries (see isAMQPDelivery).
func returnsDeliveries(sig *types.Signature) bool {
	for i := range sig.Results().Len() {
		if ch, ok := sig.Results().At(i).Type().Underlying().(*types.Chan); ok && isAMQPDelivery(ch.Elem()) {
			return true
		}
	}
	return false
}

// amqpAutoAck reports a RabbitMQ Consume with autoAck true in a function on
// a consumer path (a loop over its deliveries, or the set-up that hands
// them to one): each delivery is acknowledged as it is sent, so the work
// after it is at most once (field trial, wave 50: apphook's webhook
// requests, `ch.Consume(q, "", true, ...)` then `go work(d.Body)`).
func amqpAutoAck(pass *analysis.Pass, c *Consumers, r *reporter) {
	walk(pass, c, callNode, func(n ast.Node, s *site) {
		call := n.(*ast.CallExpr)
		if s.Root == nil || !amqpAutoAckArg(pass.TypesInfo, call) {
			return
		}
		r.report(call, SeverityOf(s.names()...), fmt.Sprintf(
			"consumes with autoAck true %s: RabbitMQ counts each delivery as acknowledged when it sends it, so a crash, a restart or a failed step after that loses the message, and nothing is redelivered; consume with autoAck false and Ack after the work (Nack or Reject to retry or dead-letter)",
			s.where()))
	})
}
