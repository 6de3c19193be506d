package ackgapvet

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"

	"golang.org/x/tools/go/analysis"
)

// MultiTxAnalyzer reports a message's path that commits more than one
// database transaction.
var MultiTxAnalyzer = newAnalyzer("multitx",
	`report a consumer that commits more than one database transaction for one message

Each transaction is atomic by itself, but a message whose writes are split
over two commits is applied by halves: when the second transaction fails
after the first committed, the message is half-applied. If the consumer
acks anyway the half is never repaired; if the message is redelivered, the
first transaction's writes apply again unless they are guarded (an upsert,
a conditional UPDATE, an inbox row). Reported in a function on a consumer
path with two calls, one after the other, that each commit a transaction:
a Tx's Commit (database/sql, pgx, sqlx), gorm's Transaction or Commit,
pgx's BeginFunc, or a call of a function that does one of these. Calls in
alternative branches, inside a branch or loop body of their own, or
deferred are not reported, nor is one call in a loop (a transaction per
item). Fix: do the message's writes in one transaction (pass the
transaction to the helpers), with the inbox row in it.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		for node, root := range c.reach {
			body := funcBody(node)
			if body == nil {
				continue
			}
			first, second := secondCommit(pass.TypesInfo, c, body, gormTxParam(pass.TypesInfo, node))
			if second == nil {
				continue
			}
			names := []string{root.Name, funcNodeName(node), calledName(first.call), calledName(second.call)}
			names = append(names, constStrings(pass.TypesInfo, first.call)...)
			names = append(names, constStrings(pass.TypesInfo, second.call)...)
			r.report(second.call, SeverityOf(names...), fmt.Sprintf(
				"%s commits a second database transaction for the same message (the first commits at line %d: %s): if this one fails the message is half-applied, and its redelivery applies the first one's writes again unless they are guarded; do the message's writes in one transaction",
				second.desc, pass.Fset.Position(first.call.Pos()).Line, first.desc))
		}
	})

// commitSite is a call that commits a database transaction, with the nodes
// from the function's body down to it.
type commitSite struct {
	call  *ast.CallExpr
	desc  string
	stack []ast.Node
}

// txCommitOf describes a call that commits a database transaction by
// itself: Commit of a transaction type (database/sql, pgx, sqlx, or any
// named type Tx), gorm's DB.Transaction and DB.Commit, pgx's BeginFunc and
// BeginTxFunc. It returns "" for any other call.
func txCommitOf(info *types.Info, call *ast.CallExpr) string {
	fn := callee(info, call)
	if fn == nil {
		return ""
	}
	path, name := funcPath(fn), fn.Name()
	sig, _ := fn.Type().(*types.Signature)
	switch {
	case name == "Commit" && sig != nil && sig.Recv() != nil && (isTxType(sig.Recv().Type()) || isNamedTx(sig.Recv().Type())):
		return qualName(fn)
	case (path == "gorm.io/gorm" || path == "github.com/jinzhu/gorm") && recvName(fn) == "DB" && (name == "Transaction" || name == "Commit"):
		return qualName(fn)
	case (isPgx(path) || isPgxpool(path)) && (name == "BeginFunc" || name == "BeginTxFunc"):
		return qualName(fn)
	}
	return ""
}

// secondCommit returns the first pair of calls in body that commit a
// transaction each, one after the other for one run of the function: both
// run whenever the statement list that holds them runs (neither is inside
// a branch, a loop body, a deferred call, a goroutine or a function
// literal of its own below that list). It returns nils when there is none.
func secondCommit(info *types.Info, c *Consumers, body *ast.BlockStmt, tx types.Object) (first, second *commitSite) {
	var sites []*commitSite
	var stack []ast.Node
	ast.Inspect(body, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		switch n.(type) {
		case *ast.FuncLit, *ast.DeferStmt, *ast.GoStmt:
			return false
		}
		stack = append(stack, n)
		if call, ok := n.(*ast.CallExpr); ok {
			desc := txCommitOf(info, call)
			// A call given a transaction runs inside it (a helper's body,
			// fn(tx), before the helper's own Commit): what the call
			// graph says it commits below is another caller's closure.
			if desc == "" && !passesTx(info, call, tx) {
				if cf := callee(info, call); cf != nil && c.Commits(cf) || c.commitsBelow(call) {
					desc = types.ExprString(call.Fun)
				}
			}
			if desc != "" {
				sites = append(sites, &commitSite{call: call, desc: desc, stack: slices.Clone(stack)})
			}
		}
		return true
	})
	for j, b := range sites {
		for _, a := range sites[:j] {
			if sequential(a.stack, b.stack) {
				return a, b
			}
		}
	}
	return nil, nil
}

// sequential reports whether the calls at the ends of stacks a and b (a
// first) are in different statements of one statement list and each runs
// whenever its statement does.
func sequential(a, b []ast.Node) bool {
	k := 0
	for k < len(a) && k < len(b) && a[k] == b[k] {
		k++
	}
	if k == 0 || k >= len(a) || k >= len(b) {
		return false // one call is inside the other's arguments
	}
	switch a[k-1].(type) {
	case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause:
	default:
		return false
	}
	for _, n := range []ast.Node{a[k], b[k]} {
		switch n.(type) {
		case *ast.CaseClause, *ast.CommClause:
			return false // alternatives of one switch or select
		}
	}
	return unconditional(a[k-1:]) && unconditional(b[k-1:])
}

// unconditional reports whether the last node of stack runs whenever the
// second does: no branch body, loop body, right operand of && or ||, or
// select clause lies between them.
func unconditional(stack []ast.Node) bool {
	for i := 1; i+1 < len(stack); i++ {
		p, ch := stack[i], stack[i+1]
		switch p := p.(type) {
		case *ast.IfStmt:
			if ch == p.Body || ch == p.Else {
				return false
			}
		case *ast.ForStmt:
			if ch != p.Init {
				return false
			}
		case *ast.RangeStmt:
			if ch != p.X {
				return false
			}
		case *ast.SwitchStmt:
			if ch == p.Body {
				return false
			}
		case *ast.TypeSwitchStmt:
			if ch == p.Body {
				return false
			}
		case *ast.SelectStmt:
			return false
		case *ast.BinaryExpr:
			if (p.Op == token.LAND || p.Op == token.LOR) && ch == p.Y {
				return false
			}
		}
	}
	return true
}

// gormTxParam returns the *gorm.DB parameter of node when node is a
// function literal of the shape GORM's Transaction takes (func(tx
// *gorm.DB) error): that handle is the transaction, and a helper given it
// writes inside it (a new user's report: two helpers given tx were read
// as two commits); nil otherwise.
func gormTxParam(info *types.Info, node ast.Node) types.Object {
	lit, ok := node.(*ast.FuncLit)
	if !ok || lit.Type.Params == nil || len(lit.Type.Params.List) != 1 || len(lit.Type.Params.List[0].Names) != 1 {
		return nil
	}
	if lit.Type.Results == nil || len(lit.Type.Results.List) != 1 || !isErrorType(info.TypeOf(lit.Type.Results.List[0].Type)) {
		return nil
	}
	obj := info.Defs[lit.Type.Params.List[0].Names[0]]
	if obj == nil {
		return nil
	}
	t := obj.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if !isNamed(t, "gorm.io/gorm", "DB") && !isNamed(t, "github.com/jinzhu/gorm", "DB") {
		return nil
	}
	return obj
}

// passesTx reports whether one of call's arguments carries a transaction
// (a database/sql, pgx or sqlx transaction, a named type Tx, or tx, a GORM
// Transaction callback's handle: see gormTxParam): the value
// itself, or an expression built from it (WithTx(ctx, tx), &Txn{Tx: tx});
// not a function literal, whose transaction parameter is the callee's.
func passesTx(info *types.Info, call *ast.CallExpr, tx types.Object) bool {
	found := false
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && tx != nil && baseObj(info, sel.X) == tx {
		return true // a method of the transaction's own handle: tx.Save(&c)
	}
	for _, a := range call.Args {
		ast.Inspect(a, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok {
				return false // a function given the call opens its own
			}
			if id, ok := n.(*ast.Ident); ok && tx != nil && info.Uses[id] == tx {
				found = true
			}
			if e, ok := n.(ast.Expr); ok && !found {
				if t := info.TypeOf(e); t != nil && (isTxType(t) || isNamedTx(t)) {
					found = true
				}
			}
			return !found
		})
	}
	return found
}
