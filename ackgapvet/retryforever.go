package ackgapvet

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"

	"golang.org/x/tools/go/analysis"
)

// retriesForever reports, on a consumer path, a retry loop with no bound:
// a `for { ... }` that waits between attempts (time.Sleep, time.After) and
// leaves only when an attempt's error is nil (or on shutdown, ctx.Done()).
// A message whose work can never succeed (a payload the service rejects, a
// resource that is gone, missing rights) is retried in place for good, and
// the messages behind it wait: a stream, a partition or a worker stops on
// it (field trial, wave 59: devpool's withRetry, four Redis stream
// consumers). Not reported in a Lambda handler (its timeout ends the
// attempt), for an attempt given nothing from the message (waiting for a
// dependency, not a message that always fails), before the receive loop
// (set-up), or for an ack or a receive retried until it succeeds.
func retriesForever(pass *analysis.Pass, c *Consumers, r *reporter) {
	info := pass.TypesInfo
	const risk = "the loop leaves only when it succeeds, so a message whose work can never succeed (bad input, a resource that is gone, missing rights) is retried for good and the messages behind it wait (the stream, partition or worker stops on it); bound the attempts, then dead-letter (or record and skip) the message"
	// A helper of the package that retries the function it is given
	// (withRetry(fn func() error)) is reported at each consumer's call.
	helpers := map[*types.Func]bool{}
	for fn, fd := range c.decls {
		if fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if loop, ok := n.(*ast.ForStmt); ok && retriesParam(info, loop) {
				helpers[fn] = true
			}
			return !helpers[fn]
		})
	}
	reported := map[ast.Node]bool{} // one helper call per function: the others share its fix
	walk(pass, c, []ast.Node{(*ast.ForStmt)(nil), (*ast.CallExpr)(nil)}, func(n ast.Node, s *site) {
		if s.Root == nil || isLambda(s.Root.Kind) {
			return
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			fn := callee(info, n)
			if fn == nil || !helpers[fn.Origin()] || reported[s.Inner()] || beforeLoop(pass, s, n) || !slices.ContainsFunc(n.Args, func(a ast.Expr) bool { return isSignature(info.TypeOf(a)) }) {
				return
			}
			reported[s.Inner()] = true
			r.report(n, SeverityOf(s.names()...), fmt.Sprintf("%s retries the work it is given without a bound %s: %s", types.ExprString(n.Fun), s.where(), risk))
		case *ast.ForStmt:
			if retriesParam(info, n) {
				return // reported at the helper's calls
			}
			attempt := unboundedRetry(info, n)
			if attempt == nil || beforeLoop(pass, s, attempt) || takesNoMessage(info, attempt, s.Inner()) {
				return
			}
			if fn := callee(info, attempt); fn != nil && receives(fn) || ackOf(info, attempt) != "" {
				return
			}
			r.report(n, SeverityOf(s.names()...), fmt.Sprintf("retries %s without a bound %s: %s", types.ExprString(attempt.Fun), s.where(), risk))
		}
	})
}

// retriesParam reports whether loop is an unbounded retry (see
// unboundedRetry) of a call of a function-typed parameter: a retry helper.
func retriesParam(info *types.Info, loop *ast.ForStmt) bool {
	attempt := unboundedRetry(info, loop)
	if attempt == nil {
		return false
	}
	id, ok := ast.Unparen(attempt.Fun).(*ast.Ident)
	if !ok {
		return false
	}
	v, ok := info.Uses[id].(*types.Var)
	return ok && !v.IsField() && isSignature(v.Type()) && v.Parent() != nil && v.Parent() != v.Pkg().Scope()
}

// unboundedRetry returns the call a `for {}` loop retries when the loop
// waits between attempts and its only exits are in a branch where that
// call's error is nil (a return or break under `if err == nil`, or the
// else of `if err != nil`) or on a context's Done; nil otherwise.
func unboundedRetry(info *types.Info, loop *ast.ForStmt) *ast.CallExpr {
	if loop.Cond != nil || loop.Init != nil || loop.Post != nil {
		return nil // a counted loop, or one with a condition of its own
	}
	errCall := map[types.Object]*ast.CallExpr{}
	sleeps, bad, exits := false, false, 0
	var attempt *ast.CallExpr
	// exit counts an exit from the loop: fine in a success branch.
	exit := func(success bool) {
		if success {
			exits++
		} else {
			bad = true
		}
	}
	var visit func(n ast.Node, success, nested bool)
	visit = func(n ast.Node, success, nested bool) {
		ast.Inspect(n, func(m ast.Node) bool {
			if bad || m == nil {
				return false
			}
			switch m := m.(type) {
			case *ast.FuncLit:
				return false
			case *ast.AssignStmt:
				// err := f(...), _, err = f(...)
				if len(m.Rhs) == 1 {
					if call, ok := ast.Unparen(m.Rhs[0]).(*ast.CallExpr); ok {
						for _, l := range m.Lhs {
							if id, ok := l.(*ast.Ident); ok && isError(info.TypeOf(id)) {
								if obj := identObj(info, id); obj != nil {
									errCall[obj] = call
								}
							}
						}
					}
				}
			case *ast.IfStmt:
				if m.Init != nil {
					visit(m.Init, success, nested)
				}
				ok := nilErrCheck(info, m.Cond, token.EQL)
				if ok != nil && errCall[ok] != nil && attempt == nil {
					attempt = errCall[ok]
				}
				visit(m.Body, success || ok != nil && errCall[ok] != nil, nested)
				if m.Else != nil {
					failed := nilErrCheck(info, m.Cond, token.NEQ)
					if failed != nil && errCall[failed] != nil && attempt == nil {
						attempt = errCall[failed]
					}
					visit(m.Else, success || failed != nil && errCall[failed] != nil, nested)
				}
				return false
			case *ast.ForStmt:
				visit(m.Body, success, true)
				return false
			case *ast.RangeStmt:
				visit(m.Body, success, true)
				return false
			case *ast.SwitchStmt:
				visit(m.Body, success, true)
				return false
			case *ast.TypeSwitchStmt:
				visit(m.Body, success, true)
				return false
			case *ast.SelectStmt:
				for _, cc := range m.Body.List {
					cc := cc.(*ast.CommClause)
					if doneCase(info, cc) {
						continue // shutdown
					}
					if cc.Comm != nil {
						visit(cc.Comm, success, true) // <-time.After(d): a wait
					}
					for _, st := range cc.Body {
						visit(st, success, true)
					}
				}
				return false
			case *ast.BranchStmt:
				switch {
				case m.Tok == token.GOTO, m.Tok == token.BREAK && m.Label != nil:
					bad = true
				case m.Tok == token.BREAK && !nested:
					exit(success)
				}
			case *ast.ReturnStmt:
				exit(success)
			case *ast.CallExpr:
				if fn := callee(info, m); fn != nil && funcPath(fn) == "time" && fn.Name() == "Sleep" {
					sleeps = true
				}
				if exitCall(info, m) != "" {
					bad = true
				}
			case *ast.UnaryExpr:
				if m.Op == token.ARROW {
					if call, ok := ast.Unparen(m.X).(*ast.CallExpr); ok {
						if fn := callee(info, call); fn != nil && funcPath(fn) == "time" && fn.Name() == "After" {
							sleeps = true
						}
					}
				}
			}
			return true
		})
	}
	visit(loop.Body, false, false)
	if bad || !sleeps || exits == 0 {
		return nil
	}
	return attempt
}

// nilErrCheck returns the error variable cond compares with nil by op
// (err == nil for token.EQL), or nil.
func nilErrCheck(info *types.Info, cond ast.Expr, op token.Token) types.Object {
	be, ok := ast.Unparen(cond).(*ast.BinaryExpr)
	if !ok || be.Op != op {
		return nil
	}
	x, y := ast.Unparen(be.X), ast.Unparen(be.Y)
	if id, ok := y.(*ast.Ident); !ok || id.Name != "nil" {
		x, y = y, x
	}
	if id, ok := y.(*ast.Ident); !ok || id.Name != "nil" {
		return nil
	}
	id, ok := x.(*ast.Ident)
	if !ok || !isError(info.TypeOf(id)) {
		return nil
	}
	return identObj(info, id)
}

// doneCase reports whether a select case receives from a context's Done.
func doneCase(info *types.Info, cc *ast.CommClause) bool {
	var x ast.Expr
	switch st := cc.Comm.(type) {
	case *ast.ExprStmt:
		x = st.X
	case *ast.AssignStmt:
		if len(st.Rhs) == 1 {
			x = st.Rhs[0]
		}
	}
	u, ok := ast.Unparen(x).(*ast.UnaryExpr)
	if !ok || u.Op != token.ARROW {
		return false
	}
	call, ok := ast.Unparen(u.X).(*ast.CallExpr)
	if !ok {
		return false
	}
	fn := callee(info, call)
	return fn != nil && fn.Name() == "Done" && funcPath(fn) == "context"
}
