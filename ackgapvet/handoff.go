package ackgapvet

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"

	"golang.org/x/tools/go/analysis"
)

// handedOff finds, in the statements before an ack, the last hand-off of
// the message to another goroutine that nothing waits for before the ack:
// a go statement or a channel send whose values include a message (a
// Sarama, kafka-go, franz-go, confluent-kafka-go or Watermill message, an
// SQS message or a Lambda record) or a value made from one (decoded from
// its payload, built from its fields), at the top of the block or in a
// branch of an if before the ack. A Wait call (a WaitGroup, errgroup) or a
// channel receive after it means the ack waits: not reported.
func handedOff(pass *analysis.Pass, before []ast.Stmt) (string, ast.Node) {
	return handedOffWith(pass, before, nil)
}

// handedOffWith is handedOff with more variables that hold the message's
// data: the parameters of a function the loop calls with it.
func handedOffWith(pass *analysis.Pass, before []ast.Stmt, seed map[types.Object]bool) (string, ast.Node) {
	derived := derivedFrom(pass.TypesInfo, before, seed)
	for i := len(before) - 1; i >= 0; i-- {
		if how := handOffIn(pass, before[i], derived); how != "" {
			return how, before[i]
		}
		if waitsVia(pass, before[i]) {
			return "", nil
		}
	}
	return "", nil
}

// pkgDecl returns the declaration of fn when this package declares it.
func pkgDecl(pass *analysis.Pass, fn *types.Func) *ast.FuncDecl {
	if fn == nil || fn.Pkg() != pass.Pkg {
		return nil
	}
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && pass.TypesInfo.Defs[fd.Name] == fn.Origin() {
				return fd
			}
		}
	}
	return nil
}

// waitsVia is waits, also through a function of this package called in
// st whose own statements wait (`r.stop()`, which cancels the reporter
// goroutine and receives from its done channel: field trial, wave 47,
// fyredocs' progress reporter).
func waitsVia(pass *analysis.Pass, st ast.Stmt) bool {
	return waits(st) || callIn(st, func(call *ast.CallExpr) bool {
		d := pkgDecl(pass, callee(pass.TypesInfo, call))
		return d != nil && d.Body != nil && slices.ContainsFunc(d.Body.List, waits)
	})
}

// handOffIn is handOff, also looking into the branches of an if statement
// (`if err := decode(m); err != nil { ... } else { out <- ev }`) that do
// not leave.
func handOffIn(pass *analysis.Pass, st ast.Stmt, derived map[types.Object]bool) string {
	var loop *ast.BlockStmt
	switch l := st.(type) {
	case *ast.RangeStmt:
		loop = l.Body
	case *ast.ForStmt:
		loop = l.Body
	}
	if loop != nil {
		// A goroutine per part of the message (`for _, r := range rows {
		// go s.send(r) }`): the loop's variables are the message's when
		// what it ranges over is (see derivedFrom).
		for _, in := range loop.List {
			if how := handOffIn(pass, in, derived); how != "" {
				return how
			}
		}
		return ""
	}
	ifs, ok := st.(*ast.IfStmt)
	if !ok {
		return handOffOf(pass, st, derived)
	}
	for _, b := range []ast.Stmt{ifs.Body, ifs.Else} {
		switch b := b.(type) {
		case *ast.BlockStmt:
			if terminates(b) {
				// A branch that leaves (`errs <- err; return`) runs only
				// when what follows the if does not: no hand-off before
				// it (field trial, wave 52: score's failure sent on its
				// error channel, the delete after the work).
				continue
			}
			for _, in := range b.List {
				if how := handOffIn(pass, in, derived); how != "" {
					return how
				}
			}
		case *ast.IfStmt:
			if how := handOffIn(pass, b, derived); how != "" {
				return how
			}
		}
	}
	return ""
}

// handOff describes st when it hands a message to another goroutine: a go
// statement or a channel send with a message among its values; "" if not.
func handOff(pass *analysis.Pass, st ast.Stmt) string { return handOffOf(pass, st, nil) }

// handOffOf is handOff, counting the variables of derived (values made
// from the message) as the message.
func handOffOf(pass *analysis.Pass, st ast.Stmt, derived map[types.Object]bool) string {
	info := pass.TypesInfo
	switch st := st.(type) {
	case *ast.GoStmt:
		if (carriesMessage(info, st.Call) || mentions(info, st.Call, derived)) && !metricsOnly(info, st.Call) {
			return "go " + types.ExprString(st.Call.Fun)
		}
	case *ast.SendStmt:
		if carriesMessage(info, st.Value) || mentions(info, st.Value, derived) {
			return "a send on " + types.ExprString(st.Chan)
		}
	case *ast.ExprStmt, *ast.AssignStmt:
		// pool.Submit(func() { ... msg ... }): a worker pool's goroutine
		// (field trial, wave 39: software-engineering's payment worker).
		if call := topCall(st); call != nil {
			if g := poolSubmit(info, call); g != nil && (carriesMessage(info, g.Call) || mentions(info, g.Call, derived)) {
				return types.ExprString(call.Fun)
			}
			// d.DispatchJSON(body), a function of this package that
			// starts a goroutine on what it is given and returns (field
			// trial, wave 41: posta's webhook dispatcher below an asynq
			// handler).
			if (carriesMessage(info, call) || mentions(info, call, derived)) && startsOnParams(pass, callee(info, call)) {
				return types.ExprString(call.Fun) + ", which starts a goroutine"
			}
		}
	}
	return ""
}

// metricsOnly reports whether a goroutine's call records metrics and does
// nothing else: a call of a metrics package or collector (see metricCall),
// or a function literal whose every call is one (`go func() {
// c.metrics.RecordEvent(m.Topic, d, true) }()`; field trial, wave 45:
// delivery_service). A lost sample is not the message's work.
func metricsOnly(info *types.Info, call *ast.CallExpr) bool {
	if fn := callee(info, call); fn != nil {
		return metricCall(fn)
	}
	lit, ok := ast.Unparen(call.Fun).(*ast.FuncLit)
	if !ok {
		return false
	}
	calls, metrics := 0, 0
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if tv, ok := info.Types[c.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
			return true // a conversion or a builtin
		}
		calls++
		if fn := callee(info, c); fn != nil && metricCall(fn) {
			metrics++
			return false // its arguments are the sample's
		}
		return true
	})
	return calls > 0 && calls == metrics
}

// startsOnParams reports whether fn, declared in pass's package, starts a
// goroutine (a go statement, or a worker pool's Submit: see poolSubmit)
// that reads one of its parameters, and waits for nothing after it (no
// Wait call, no channel receive).
func startsOnParams(pass *analysis.Pass, fn *types.Func) bool {
	decl := pkgDecl(pass, fn)
	if decl == nil || decl.Body == nil {
		return false
	}
	params := paramObjs(pass.TypesInfo, decl.Type)
	for i, st := range decl.Body.List {
		g, ok := st.(*ast.GoStmt)
		if call := topCall(st); !ok && call != nil {
			g = poolSubmit(pass.TypesInfo, call) // a.pool.Submit(func() { a.process(ctx, m) })
		}
		if g == nil || !mentions(pass.TypesInfo, g.Call, params) {
			continue
		}
		for _, later := range decl.Body.List[i+1:] {
			if waits(later) {
				return false
			}
		}
		return true
	}
	return false
}

// derivedFrom returns the variables that stmts fill from a message: the
// left side of an assignment whose right side mentions one, and a
// variable whose address is given to a call with a message among its
// arguments or in its receiver chain (json.Unmarshal(m.Value, &ev),
// json.NewDecoder(bytes.NewReader(m.Value)).Decode(&ev)).
//
// It starts from the variables of seed (the parameters that carry the
// message's data), and counts the variables of a range over a derived
// value (`for _, r := range rows`).
func derivedFrom(info *types.Info, stmts []ast.Stmt, seed map[types.Object]bool) map[types.Object]bool {
	out := map[types.Object]bool{}
	for o := range seed {
		out[o] = true
	}
	for _, st := range stmts {
		ast.Inspect(st, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.RangeStmt:
				if carriesMessage(info, n.X) || mentions(info, n.X, out) {
					for _, e := range []ast.Expr{n.Key, n.Value} {
						if id, ok := e.(*ast.Ident); ok && id.Name != "_" && info.ObjectOf(id) != nil {
							out[info.ObjectOf(id)] = true
						}
					}
				}
			case *ast.AssignStmt:
				if len(n.Rhs) == 1 && (carriesMessage(info, n.Rhs[0]) || mentions(info, n.Rhs[0], out)) {
					for _, l := range n.Lhs {
						if id, ok := l.(*ast.Ident); ok && info.ObjectOf(id) != nil && !isErrorType(info.ObjectOf(id).Type()) {
							out[info.ObjectOf(id)] = true
						}
					}
				}
			case *ast.CallExpr:
				// The message among the arguments, or in the receiver
				// chain (`json.NewDecoder(bytes.NewReader(m.Value)).Decode(&in)`).
				carries := carriesMessage(info, n.Fun) || mentions(info, n.Fun, out)
				for _, a := range n.Args {
					carries = carries || carriesMessage(info, a) || mentions(info, a, out)
				}
				if !carries {
					return true
				}
				for _, a := range n.Args {
					if u, ok := ast.Unparen(a).(*ast.UnaryExpr); ok && u.Op == token.AND {
						if id, ok := ast.Unparen(u.X).(*ast.Ident); ok && info.ObjectOf(id) != nil {
							out[info.ObjectOf(id)] = true
						}
					}
				}
			}
			return true
		})
	}
	return out
}

// mentions reports whether e uses a variable of vars.
func mentions(info *types.Info, e ast.Node, vars map[types.Object]bool) bool {
	if len(vars) == 0 {
		return false
	}
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && vars[info.Uses[id]] {
			found = true
		}
		return !found
	})
	return found
}

// before is the statements that run before stmts[len(stmts)] in the
// block of m: stmts, after a select case's send when m is that case (the
// send runs first: `case out <- msg: sess.MarkMessage(msg, "")`).
func before(m ast.Node, stmts []ast.Stmt) []ast.Stmt {
	if cc, ok := m.(*ast.CommClause); ok && cc.Comm != nil {
		return append([]ast.Stmt{cc.Comm}, stmts...)
	}
	return stmts
}

// handOffNext finds a hand-off of the message to another goroutine (a go
// statement or a channel send with a message among its values) in the
// statements right after an ack, before anything else: the ack then
// comes before the work, which the other goroutine does.
func handOffNext(pass *analysis.Pass, after []ast.Stmt) (string, ast.Node) {
	for _, st := range after {
		if how := handOff(pass, st); how != "" {
			return how, st
		}
		switch st := st.(type) {
		case *ast.ExprStmt, *ast.AssignStmt, *ast.DeclStmt:
			continue // a log line, a copy: not yet the work
		case *ast.IfStmt:
			// The ack's own error check that only logs (`if err != nil {
			// log.Println(err) }`) and goes on to the hand-off (field
			// trial, wave 32: nexrad-aws-notifier's delete, then `go`).
			if st.Else == nil && !leaves(st.Body) && onlyLogs(pass.TypesInfo, st.Body) {
				continue
			}
		}
		return "", nil
	}
	return "", nil
}

// waits reports whether st waits for other goroutines: a call of a method
// named Wait, or a channel receive.
func waits(st ast.Stmt) bool {
	found := false
	ast.Inspect(st, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Wait" {
				found = true
			}
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				found = true
			}
		}
		return !found
	})
	return found
}

// carriesMessage reports whether e mentions a value of a message type.
func carriesMessage(info *types.Info, e ast.Node) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if v, ok := info.Uses[id].(*types.Var); ok && isMessageType(v.Type()) {
				found = true
			}
		}
		return !found
	})
	return found
}

// isMessageType matches the message types of the supported clients.
func isMessageType(t types.Type) bool {
	return isNamed(t, "github.com/IBM/sarama", "ConsumerMessage") || isNamed(t, "github.com/Shopify/sarama", "ConsumerMessage") ||
		isNamed(t, pathKafkaGo, "Message") || isNamed(t, pathKgo, "Record") ||
		isNamed(t, pathConfluent, "Message") || isNamed(t, pathConfluent1, "Message") ||
		isNamed(t, pathWatermill+"/message", "Message") ||
		isNamed(t, pathSQS+"/types", "Message") || isNamed(t, pathSQSv1, "Message") ||
		isNamed(t, pathLambdaEvt, "SQSMessage") || isNamed(t, pathGoCDK, "Message") ||
		isNamed(t, "cloud.google.com/go/internal/pubsub", "Message") || isNamed(t, pathPubSub+"/v2", "Message") ||
		isNamed(t, pathAsynq, "Task") || isNATSMsg(t) || isAMQPDelivery(t)
}

// onlyLogs reports whether every call in body (outside function literals)
// is a log line: an ack's error check that only reports the failure.
func onlyLogs(info *types.Info, body *ast.BlockStmt) bool {
	ok := true
	ast.Inspect(body, func(n ast.Node) bool {
		if _, lit := n.(*ast.FuncLit); lit || !ok {
			return false
		}
		if c, isCall := n.(*ast.CallExpr); isCall && !logCall(info, c) {
			ok = false
		}
		return ok
	})
	return ok
}
