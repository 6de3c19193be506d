package ackgapvet

import (
	"go/ast"
	"go/types"
	"regexp"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// PoisonAnalyzer reports Watermill routers that redeliver a failing message
// without end, and a poison queue that runs inside Retry.
var PoisonAnalyzer = newAnalyzer("poison",
	`report a Watermill router with no poison queue, or one inside Retry

A Watermill handler's error nacks the message, and the subscriber delivers
it again: AMQP requeues it at the head of the queue, Kafka holds its
partition, watermill-sql resends it every ResendInterval, GoChannel resends
at once. Without middleware.PoisonQueue a message that can never succeed (a
payload the handler rejects, a duplicate it refuses, a recipient that is
gone) is delivered again without end and the messages behind it wait.
Middlewares run in the order they are added, the first outermost: a
PoisonQueue added after Retry runs inside it, so the first failure goes to
the poison topic and is acked, and Retry never retries. Reported at the
NewRouter call (no poison queue among the middlewares added in the
function that makes the router, or on its handlers) and at the AddMiddleware
that adds PoisonQueue after Retry. Not reported when the router is handed
to another function (which may add the middlewares), or when a middleware
named like a poison queue or dead-letter queue is added. Fix:
router.AddMiddleware(poisonQueue, middleware.Retry{MaxRetries: 3, ...}.Middleware).`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		if strings.HasPrefix(pass.Pkg.Path(), pathAckgap) {
			return // ackgap's router dead-letters by itself
		}
		for _, f := range pass.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				var body *ast.BlockStmt
				switch n := n.(type) {
				case *ast.FuncDecl:
					body = n.Body
				case *ast.FuncLit:
					body = n.Body
				}
				if body != nil {
					checkRouters(pass, r, body)
				}
				return true
			})
		}
	})

// poisonName matches a custom middleware that dead-letters.
var poisonName = regexp.MustCompile(`(?i)poison|dlq|dead.?letter`)

// checkRouters checks the routers made in body (not in function literals
// inside it, which are checked on their own).
func checkRouters(pass *analysis.Pass, r *reporter, body *ast.BlockStmt) {
	info := pass.TypesInfo
	inspectOwn(body, func(n ast.Node) {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Rhs) != 1 || len(as.Lhs) == 0 {
			return
		}
		call, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr)
		if !ok {
			return
		}
		fn := callee(info, call)
		if fn == nil || fn.Name() != "NewRouter" || funcPath(fn) != pathWatermill+"/message" {
			return
		}
		id, ok := as.Lhs[0].(*ast.Ident)
		if !ok {
			return
		}
		router := info.ObjectOf(id)
		if router == nil {
			return
		}
		var mws []*ast.CallExpr // AddMiddleware calls, router's and handlers', in order
		handlers, escapes := 0, false
		inspectOwn(body, func(m ast.Node) {
			switch m := m.(type) {
			case *ast.CallExpr:
				sel, ok := ast.Unparen(m.Fun).(*ast.SelectorExpr)
				onRouter := ok && identObj(info, sel.X) == router
				switch {
				case ok && sel.Sel.Name == "AddMiddleware" && (onRouter || isNamed(info.TypeOf(sel.X), pathWatermill+"/message", "Handler")):
					mws = append(mws, m)
				case onRouter && registrars[sel.Sel.Name]:
					handlers++
				}
				for _, a := range m.Args {
					if identObj(info, a) == router {
						escapes = true // another function may add middlewares
					}
				}
			case *ast.ReturnStmt:
				for _, e := range m.Results {
					if identObj(info, e) == router {
						escapes = true
					}
				}
			case *ast.CompositeLit:
				for _, e := range m.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						e = kv.Value
					}
					if identObj(info, e) == router {
						escapes = true
					}
				}
			}
		})
		if escapes || handlers == 0 {
			return
		}
		retryAt := -1
		var poison *ast.CallExpr
		poisonAfterRetry := false
		for _, mw := range mws {
			for _, a := range mw.Args {
				switch middlewareKind(info, body, a) {
				case "retry":
					if retryAt < 0 {
						retryAt = int(mw.Pos())
					}
				case "poison":
					if poison == nil {
						poison = mw
						poisonAfterRetry = retryAt >= 0
					}
				}
			}
		}
		switch {
		case poison == nil:
			r.report(call, SeverityOf("poison"),
				"this Watermill router has no poison queue: a message whose handler keeps failing is nacked and delivered again without end (requeued at the head on AMQP, its partition held on Kafka, resent every ResendInterval on SQL) and the messages behind it wait; add middleware.PoisonQueue as the outermost middleware, with middleware.Retry (MaxRetries) inside it")
		case poisonAfterRetry:
			r.report(poison, SeverityOf("poison"),
				"PoisonQueue is added after Retry, so it runs inside it (the first middleware added is the outermost): the first failure goes to the poison topic and is acked, and Retry never retries; add PoisonQueue first")
		}
	})
}

// middlewareKind classifies an AddMiddleware argument: "retry" for
// middleware.Retry's Middleware method value, "poison" for a value made by
// middleware.PoisonQueue or PoisonQueueWithFilter (assigned in body) or a
// middleware named like a poison or dead-letter queue, "" otherwise.
func middlewareKind(info *types.Info, body *ast.BlockStmt, a ast.Expr) string {
	a = ast.Unparen(a)
	if sel, ok := a.(*ast.SelectorExpr); ok && sel.Sel.Name == "Middleware" && isNamed(info.TypeOf(sel.X), pathWatermill+"/message/router/middleware", "Retry") {
		return "retry"
	}
	if poisonName.MatchString(types.ExprString(a)) {
		return "poison"
	}
	obj := identObj(info, a)
	if obj == nil {
		return ""
	}
	kind := ""
	inspectOwn(body, func(n ast.Node) {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Rhs) != 1 {
			return
		}
		for _, l := range as.Lhs {
			if identObj(info, l) != obj {
				continue
			}
			if call, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr); ok {
				if fn := callee(info, call); fn != nil && strings.HasPrefix(fn.Name(), "PoisonQueue") && funcPath(fn) == pathWatermill+"/message/router/middleware" {
					kind = "poison"
				}
			}
		}
	})
	return kind
}

// identObj is the object an identifier expression names, or nil.
func identObj(info *types.Info, e ast.Expr) types.Object {
	if id, ok := ast.Unparen(e).(*ast.Ident); ok {
		return info.ObjectOf(id)
	}
	return nil
}

// inspectOwn calls f for every node of body outside nested function
// literals.
func inspectOwn(body *ast.BlockStmt, f func(ast.Node)) {
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if n != nil {
			f(n)
		}
		return true
	})
}
