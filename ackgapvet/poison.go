package ackgapvet

import (
	"fmt"
	"go/ast"
	"go/types"
	"regexp"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// PoisonAnalyzer reports consumers that a message which can never succeed
// stops for good: Watermill routers that redeliver it without end (no
// poison queue, or one inside Retry), a consumer that ends the process on a
// message's failure, and a receive loop that returns when a message does
// not decode.
var PoisonAnalyzer = newAnalyzer("poison",
	`report a consumer that a message which can never succeed stops for good: a Watermill router with no poison queue (or one inside Retry), a process that ends on a message's failure, a receive loop that returns when a message does not decode

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
that adds PoisonQueue after Retry. A router handed to Watermill's CQRS
processors is checked (they add no middleware). Not reported when the router is handed
to another function (which may add the middlewares), or stored in a struct
when the package adds middlewares to a router elsewhere, or when a middleware
named like a poison queue or dead-letter queue is added. A router made and
returned by a constructor (an application's NewRouter) is checked where the
handlers are registered on it, with the middlewares the constructor added. Fix:
router.AddMiddleware(poisonQueue, middleware.Retry{MaxRetries: 3, ...}.Middleware).

Outside the router, the same message stops a consumer for good in two more
ways, both reported. The process ends on a message's failure: log.Fatal,
os.Exit, panic or a logger's Fatal in the branch of a failed call on the
consumer path (not the receive's or the commit's failure, not a call given
nothing from the message, not the loop's
set-up; below the entry point, only a failed decode of what the function
was given). The message is not acked, so it is the first one back after the
restart (a Kafka partition resumes at its committed offset, an SQS message
returns after its visibility timeout, Lambda retries the batch) and ends
the process again. And a receive loop (a poll or receive loop, a Sarama
ConsumeClaim) returns when a message does not decode: the loop stops at it,
and a Sarama session ends and starts again at it. Fix: retry what is
transient without ending the process, and dead-letter (or log and ack)
what can never succeed. A third way: the work retried in place without a
bound (a for loop with no condition that sleeps between attempts and leaves
only on success), by the consumer or by a retry helper of the package it
calls; reported at the loop or at the consumer's call of the helper.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		if strings.HasPrefix(pass.Pkg.Path(), pathAckgap) {
			return // ackgap's router dead-letters by itself
		}
		exportRouterMakers(pass, c)
		poisonConsumers(pass, c, r)
		retriesForever(pass, c, r)
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
					checkRouters(pass, c, r, body)
				}
				return true
			})
		}
	})

func init() { PoisonAnalyzer.FactTypes = []analysis.Fact{new(routerFact)} }

// poisonName matches a custom middleware that dead-letters.
var poisonName = regexp.MustCompile(`(?i)poison|dlq|dead.?letter`)

// routerFact marks a function that makes a Watermill router and returns it
// (a constructor such as an application's NewRouter): the middlewares it
// added, so that the function that registers the handlers on the router it
// returns is checked as if it had made the router itself.
type routerFact struct {
	// Retry, Poison and PoisonAfterRetry describe the middlewares the
	// constructor added, in order (see routerState).
	Retry, Poison, PoisonAfterRetry bool
}

// AFact marks routerFact as an analysis fact.
func (*routerFact) AFact() {}

// String renders the fact for fact logs and test output.
func (f *routerFact) String() string {
	return fmt.Sprintf("router maker (retry %v, poison %v, poison after retry %v)", f.Retry, f.Poison, f.PoisonAfterRetry)
}

// routerState is the middleware order seen so far on one router: Retry
// added, a poison queue added, and whether the first poison queue came
// after the first Retry.
type routerState struct {
	retry, poison, poisonAfterRetry bool
	poisonAt                        *ast.CallExpr // the AddMiddleware that added the poison queue, if in this function
}

// add records one middleware kind added by the AddMiddleware call mw.
func (st *routerState) add(kind string, mw *ast.CallExpr) {
	switch kind {
	case "retry":
		st.retry = true
	case "poison":
		if !st.poison {
			st.poison, st.poisonAfterRetry, st.poisonAt = true, st.retry, mw
		}
	}
}

// madeRouter tells whether call makes a Watermill router: message.NewRouter,
// or a function with a routerFact (a constructor in this package or another);
// it returns the state the router starts with.
func madeRouter(pass *analysis.Pass, call *ast.CallExpr) (routerState, bool) {
	fn := callee(pass.TypesInfo, call)
	if fn == nil {
		return routerState{}, false
	}
	if fn.Name() == "NewRouter" && funcPath(fn) == pathWatermill+"/message" {
		return routerState{}, true
	}
	var f routerFact
	if pass.ImportObjectFact(fn, &f) {
		return routerState{retry: f.Retry, poison: f.Poison, poisonAfterRetry: f.PoisonAfterRetry}, true
	}
	return routerState{}, false
}

// exportRouterMakers exports a routerFact for every function of the package
// that returns a router it made (or got from another maker), with the
// middlewares it added; rounds so that a maker calling a maker of the same
// package is found whatever the file order.
func exportRouterMakers(pass *analysis.Pass, c *Consumers) {
	for range 3 {
		more := false
		for fn, fd := range c.decls {
			var f routerFact
			if pass.ImportObjectFact(fn, &f) {
				continue
			}
			if st, ok := returnedRouter(pass, c, fd.Body); ok {
				pass.ExportObjectFact(fn, &routerFact{Retry: st.retry, Poison: st.poison, PoisonAfterRetry: st.poisonAfterRetry})
				more = true
			}
		}
		if !more {
			return
		}
	}
}

// returnedRouter reports whether body returns a router it made, directly
// (return message.NewRouter(...)) or through a variable that escapes no
// other way, and the middlewares added to it in body.
func returnedRouter(pass *analysis.Pass, c *Consumers, body *ast.BlockStmt) (routerState, bool) {
	var st routerState
	found := false
	inspectOwn(body, func(n ast.Node) {
		if found {
			return
		}
		switch n := n.(type) {
		case *ast.ReturnStmt:
			for _, e := range n.Results {
				if call, ok := ast.Unparen(e).(*ast.CallExpr); ok {
					if s, ok := madeRouter(pass, call); ok {
						st, found = s, true
					}
				}
			}
		case *ast.AssignStmt:
			u, ok := routerUse(pass, c, body, n)
			if ok && u.returned && !u.escapes {
				st, found = u.state, true
			}
		}
	})
	return st, found
}

// routerUsage is what a function does with a router it made.
type routerUsage struct {
	call              *ast.CallExpr // the call that made it
	state             routerState   // middlewares: the maker's, then this function's
	handlers          int           // handlers registered on it
	returned, escapes bool          // returned; handed to another function or stored
}

// routerUse reads the router made by the assignment as (nil if as makes
// none) through body (not through function literals inside it).
func routerUse(pass *analysis.Pass, c *Consumers, body *ast.BlockStmt, as *ast.AssignStmt) (routerUsage, bool) {
	info := pass.TypesInfo
	if len(as.Rhs) != 1 || len(as.Lhs) == 0 {
		return routerUsage{}, false
	}
	call, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr)
	if !ok {
		return routerUsage{}, false
	}
	st, ok := madeRouter(pass, call)
	if !ok {
		return routerUsage{}, false
	}
	router := identObj(info, as.Lhs[0])
	if router == nil {
		return routerUsage{}, false
	}
	u := routerUsage{call: call, state: st}
	inspectOwn(body, func(m ast.Node) {
		switch m := m.(type) {
		case *ast.CallExpr:
			sel, ok := ast.Unparen(m.Fun).(*ast.SelectorExpr)
			onRouter := ok && identObj(info, sel.X) == router
			switch {
			case ok && sel.Sel.Name == "AddMiddleware" && (onRouter || isNamed(info.TypeOf(sel.X), pathWatermill+"/message", "Handler")):
				for _, a := range m.Args {
					for _, k := range middlewareKinds(pass, c, body, a) {
						u.state.add(k, m)
					}
				}
			case onRouter && registrars[sel.Sel.Name]:
				u.handlers++
			}
			fn := callee(info, m)
			toCQRS := fn != nil && funcPath(fn) == pathWatermill+"/components/cqrs"
			for _, a := range m.Args {
				if identObj(info, a) == router {
					if toCQRS {
						u.handlers++ // Watermill's CQRS processors register handlers and add no middleware
					} else {
						u.escapes = true // another function may add middlewares
					}
				}
			}
		case *ast.ReturnStmt:
			for _, e := range m.Results {
				if identObj(info, e) == router {
					u.returned = true
				}
			}
		case *ast.CompositeLit:
			for _, e := range m.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					e = kv.Value
				}
				if identObj(info, e) != router {
					continue
				}
				if t := info.TypeOf(m); t != nil && cqrsType(t) {
					u.handlers++ // cqrs.FacadeConfig{Router: r}: the facade registers handlers, adds no middleware
				} else if addsMiddlewareElsewhere(pass, body) {
					u.escapes = true // kept in a struct whose methods add middlewares
				}
			}
		}
	})
	return u, true
}

// cqrsType reports whether t is a named type of Watermill's CQRS
// package (a processor's or the facade's config).
func cqrsType(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == pathWatermill+"/components/cqrs"
}

// addsMiddlewareElsewhere reports whether the package adds a middleware to
// a Watermill router outside body: a router stored in a struct (an
// application's App{router: router}) may get its middlewares there.
func addsMiddlewareElsewhere(pass *analysis.Pass, body *ast.BlockStmt) bool {
	found := false
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			if found || n == body {
				return false
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "AddMiddleware" && isNamed(pass.TypesInfo.TypeOf(sel.X), pathWatermill+"/message", "Router") {
				found = true
			}
			return !found
		})
	}
	return found
}

// checkRouters checks the routers made in body (not in function literals
// inside it, which are checked on their own), by message.NewRouter or by a
// constructor that returns one.
func checkRouters(pass *analysis.Pass, c *Consumers, r *reporter, body *ast.BlockStmt) {
	inspectOwn(body, func(n ast.Node) {
		as, ok := n.(*ast.AssignStmt)
		if !ok {
			return
		}
		u, ok := routerUse(pass, c, body, as)
		if !ok || u.escapes || u.returned || u.handlers == 0 {
			return
		}
		made := ""
		if fn := callee(pass.TypesInfo, u.call); fn.Name() != "NewRouter" || funcPath(fn) != pathWatermill+"/message" {
			made = " (made by " + fn.Name() + ", which adds no poison queue)"
		}
		switch {
		case !u.state.poison:
			r.report(u.call, SeverityOf("poison"),
				"this Watermill router"+made+" has no poison queue: a message whose handler keeps failing is nacked and delivered again without end (requeued at the head on AMQP, its partition held on Kafka, resent every ResendInterval on SQL) and the messages behind it wait; add middleware.PoisonQueue as the outermost middleware, with middleware.Retry (MaxRetries) inside it")
		case u.state.poisonAfterRetry:
			var at ast.Node = u.call // both added by the constructor
			if u.state.poisonAt != nil {
				at = u.state.poisonAt
			}
			r.report(at, SeverityOf("poison"),
				"PoisonQueue is added after Retry, so it runs inside it (the first middleware added is the outermost): the first failure goes to the poison topic and is acked, and Retry never retries; add PoisonQueue first")
		}
	})
}

// middlewareKinds classifies an AddMiddleware argument (see middlewareKind);
// a call to a function of this package spread into AddMiddleware
// (defaultMiddleware()...) is read through the slice literal it returns.
func middlewareKinds(pass *analysis.Pass, c *Consumers, body *ast.BlockStmt, a ast.Expr) []string {
	if call, ok := ast.Unparen(a).(*ast.CallExpr); ok {
		if fn := callee(pass.TypesInfo, call); fn != nil && c.decls[fn] != nil {
			var kinds []string
			inspectOwn(c.decls[fn].Body, func(n ast.Node) {
				ret, ok := n.(*ast.ReturnStmt)
				if !ok {
					return
				}
				for _, e := range ret.Results {
					if lit, ok := ast.Unparen(e).(*ast.CompositeLit); ok {
						for _, el := range lit.Elts {
							kinds = append(kinds, middlewareKind(pass.TypesInfo, c.decls[fn].Body, el))
						}
					}
				}
			})
			return kinds
		}
	}
	return []string{middlewareKind(pass.TypesInfo, body, a)}
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
