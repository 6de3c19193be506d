package ackgapvet

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// readModifyWrite reports, in a function on a consumer path, a value read
// from the database, changed in Go by arithmetic (`bal := acct.Balance +
// amount`, `acct.Balance += amount`, `n++`) and written back with no dedupe
// record in the same function or elsewhere on the consumer's path (see
// Consumers.deduped; wave 33's zfeed inserts it in a callee, in the same
// transaction): each redelivery adds again, and two
// concurrent deliveries lose one of the updates (the SQL counter form,
// `SET n = n + 1`, is idemkey's other rule). A write whose WHERE clause
// tests a column it sets (a version or state guard) is not reported; nor is
// an ackgap handler (its inbox dedupes first).
func readModifyWrite(pass *analysis.Pass, c *Consumers, r *reporter) {
	info := pass.TypesInfo
	for node, root := range c.reach {
		body := funcBody(node)
		if body == nil || root.Kind == KindAckgap || hasDedupeInsert(pass, body) || c.deduped(root, node) {
			continue
		}
		read := map[types.Object]token.Pos{}    // variables holding what was read
		changed := map[types.Object]token.Pos{} // read, then changed by arithmetic
		done := false
		markRead := func(e ast.Expr, at token.Pos) {
			if u, ok := ast.Unparen(e).(*ast.UnaryExpr); ok && u.Op == token.AND {
				e = u.X
			}
			if id, ok := ast.Unparen(e).(*ast.Ident); ok {
				if obj := info.ObjectOf(id); obj != nil && !isErrorType(obj.Type()) {
					read[obj] = at
				}
			}
		}
		ast.Inspect(body, func(m ast.Node) bool {
			if _, ok := m.(*ast.FuncLit); ok || done {
				return false
			}
			switch m := m.(type) {
			case *ast.AssignStmt:
				if len(m.Rhs) == 1 {
					if call, ok := ast.Unparen(m.Rhs[0]).(*ast.CallExpr); ok && isDBRead(info, call) {
						for _, l := range m.Lhs {
							markRead(l, call.Pos())
						}
						return true
					}
				}
				for i, l := range m.Lhs {
					base := baseObj(info, l)
					if m.Tok == token.ADD_ASSIGN || m.Tok == token.SUB_ASSIGN {
						if _, ok := read[base]; ok {
							changed[base] = m.Pos()
						}
						continue
					}
					if i >= len(m.Rhs) {
						continue
					}
					if src := arithmeticOn(info, m.Rhs[i], read); src != nil {
						if obj := baseObj(info, l); obj != nil {
							changed[obj] = m.Pos()
							if obj != src {
								read[obj] = read[src] // where its value came from
							}
						}
					}
				}
			case *ast.IncDecStmt:
				if base := baseObj(info, m.X); base != nil {
					if _, ok := read[base]; ok {
						changed[base] = m.Pos()
					}
				}
			case *ast.CallExpr:
				if isDBRead(info, m) {
					// db.QueryRow(...).Scan(&v), db.Get(&v, ...), gorm First(&v)
					for _, a := range m.Args {
						markRead(a, m.Pos())
					}
				}
				if calledName(m) == "Scan" {
					if sel, ok := m.Fun.(*ast.SelectorExpr); ok {
						if inner, ok := ast.Unparen(sel.X).(*ast.CallExpr); ok && isDBRead(info, inner) {
							for _, a := range m.Args {
								markRead(a, m.Pos())
							}
						}
					}
				}
				if len(changed) == 0 && !slices.ContainsFunc(m.Args, func(a ast.Expr) bool { return arithmeticOn(info, a, read) != nil }) || dbWriteOf(info, m) == "" {
					return true
				}
				// SQL text is read only where the call runs SQL: a GORM
				// Update's first argument is a column name.
				sql := ""
				if isDBCall(info, m) || gormSQL(info, m) != "" || calledName(m) == "Exec" {
					sql = sqlText(info, m)
				}
				if sql != "" && (guardedUpdate(sql) || !strings.HasPrefix(strings.TrimSpace(sql), "UPDATE")) {
					return true
				}
				for _, a := range m.Args {
					obj := baseObj(info, a)
					at, ok := changed[obj]
					if !ok {
						// Changed inline in the write: Updates(map[string]any{"n": c.N + 1}).
						if src := arithmeticOn(info, a, read); src != nil {
							obj, at, ok = src, m.Pos(), true
						}
					}
					if !ok {
						continue
					}
					r.report(m, SeverityOf(root.Name, types.ExprString(m.Fun), sql), fmt.Sprintf(
						"writes back %s, read from the database (line %d) and changed in Go (line %d), with no dedupe record in the same transaction: each redelivery applies the change again, and two concurrent deliveries lose one; make the change in SQL under a guard (or with an inbox row (consumer, event id) inserted in the same transaction, skipping on conflict)",
						obj.Name(), pass.Fset.Position(read[obj]).Line, pass.Fset.Position(at).Line))
					done = true
					return false
				}
			}
			return true
		})
	}
}

// isDBRead reports whether call reads from a database: a query of a
// supported driver whose text is not a write, or gorm's First, Find, Take,
// Last or Scan.
func isDBRead(info *types.Info, call *ast.CallExpr) bool {
	fn := callee(info, call)
	if fn == nil {
		return false
	}
	if (funcPath(fn) == "gorm.io/gorm" || funcPath(fn) == "github.com/jinzhu/gorm") && recvName(fn) == "DB" {
		switch fn.Name() {
		case "First", "Find", "Take", "Last":
			return true
		}
		return false
	}
	h, _ := dbCall(info, call)
	if h == handleNone || dbWriteOf(info, call) != "" {
		return false
	}
	sql := sqlText(info, call)
	return strings.HasPrefix(strings.TrimSpace(sql), "SELECT")
}

// dbLookup reports whether call reads rows: isDBRead, a query whose text
// selects after a comment (sqlc's `-- name: GetCustomer :one` header), or a
// MongoDB FindOne or Find.
func dbLookup(info *types.Info, call *ast.CallExpr) bool {
	if isDBRead(info, call) {
		return true
	}
	fn := callee(info, call)
	if fn == nil {
		return false
	}
	if strings.HasPrefix(funcPath(fn), "go.mongodb.org/mongo-driver") && recvName(fn) == "Collection" && (fn.Name() == "FindOne" || fn.Name() == "Find") {
		return true
	}
	h, _ := dbCall(info, call)
	return h != handleNone && dbWriteOf(info, call) == "" && strings.Contains(strings.ToUpper(sqlText(info, call)), "SELECT")
}

// baseObj returns the variable at the root of e (v in v, v.f, v.f.g, &v,
// *v), or nil.
func baseObj(info *types.Info, e ast.Expr) types.Object {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			return info.ObjectOf(x)
		case *ast.SelectorExpr:
			e = x.X
		case *ast.UnaryExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// arithmeticOn returns the read variable that e adds to or subtracts
// from, or nil.
func arithmeticOn(info *types.Info, e ast.Expr, read map[types.Object]token.Pos) types.Object {
	var found types.Object
	ast.Inspect(e, func(n ast.Node) bool {
		if b, ok := n.(*ast.BinaryExpr); ok && (b.Op == token.ADD || b.Op == token.SUB) {
			if t := info.TypeOf(b); t != nil {
				if basic, ok := t.Underlying().(*types.Basic); ok && basic.Info()&types.IsNumeric != 0 {
					for _, side := range []ast.Expr{b.X, b.Y} {
						if _, ok := read[baseObj(info, side)]; ok && found == nil {
							found = baseObj(info, side)
						}
					}
				}
			}
		}
		return found == nil
	})
	return found
}
