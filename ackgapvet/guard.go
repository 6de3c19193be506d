package ackgapvet

import (
	"go/ast"
	"go/token"
	"go/types"
	"regexp"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ssa"
)

// claimVerb matches the names of calls whose boolean (or affected-rows)
// result says whether this caller won a guarded transition: archive,
// claim, reserve, acquire, lock, mark, transition, set-if-absent, an
// insert that may find the row there already.
var claimVerb = regexp.MustCompile(`(?i)^(try)?(archive|claim|reserve|acquire|lock|mark|transition|advance|complete|finish|close|resolve|setnx|setifnotexists|compareandswap|cas|insertifnotexists|createifnotexists)|ifnotexists$|ifabsent$`)

// lostClaim matches the names of the errors a claim answers with when
// another delivery made it first: ErrAlreadyClaimed, ErrExists,
// ErrDuplicate, ErrConflict, ErrTaken.
var lostClaim = regexp.MustCompile(`(?i)already|exists|duplicate|conflict|claimed|taken`)

// guardedAt reports whether the statement of body holding pos runs only
// when an earlier guarded transition in body was won: a statement before
// it in an enclosing block is `if !won { return }` (or continue, break; or
// `won == false`), where won was assigned from a call named like a claim
// (see claimVerb), `if errors.Is(err, ErrAlreadyClaimed) { return }` where
// err was (see lostClaim), or `if n == 0 { return }` where n holds a result's
// RowsAffected. A redelivery then finds the transition made and skips the
// work, so an effect below is not repeated.
func guardedAt(info *types.Info, body ast.Node, pos token.Pos) bool {
	return holdsAt(body, pos, nil, func(st ast.Stmt, prior []ast.Stmt) bool { return guardStmt(info, st, prior) })
}

// holdsAt walks the nodes of body that hold pos: it reports whether at
// holds for one of them (nil: none), or before for a statement that comes
// before pos in an enclosing block (given the statements before it).
func holdsAt(body ast.Node, pos token.Pos, at func(ast.Node) bool, before func(st ast.Stmt, prior []ast.Stmt) bool) bool {
	holds := false
	ast.Inspect(body, func(n ast.Node) bool {
		if holds || n == nil || pos < n.Pos() || pos >= n.End() {
			return false
		}
		if at != nil && at(n) {
			holds = true
			return false
		}
		block, ok := stmtBlock(n)
		if !ok {
			return true
		}
		for i, st := range block.List {
			if st.Pos() <= pos && pos < st.End() {
				break
			}
			if before(st, block.List[:i]) {
				holds = true
				return false
			}
		}
		return true
	})
	return holds
}

// guardStmt matches `if !won { leave }` or `if n == 0 { leave }` at st,
// with won or n assigned from a claim (or RowsAffected) in st's init or in
// one of the statements before it.
func guardStmt(info *types.Info, st ast.Stmt, before []ast.Stmt) bool {
	return guardCall(info, st, before) != nil
}

// guardCall is guardStmt's claim (or RowsAffected) call, nil when st is
// no guard.
func guardCall(info *types.Info, st ast.Stmt, before []ast.Stmt) *ast.CallExpr {
	ifs, ok := st.(*ast.IfStmt)
	if !ok || ifs.Else != nil || !terminates(ifs.Body) {
		return nil
	}
	var v types.Object
	rows := false
	switch c := ast.Unparen(ifs.Cond).(type) {
	case *ast.UnaryExpr:
		if c.Op == token.NOT {
			v = identObj(info, c.X)
		}
	case *ast.CallExpr:
		// errors.Is(err, ErrAlreadyClaimed): the claim's error says
		// another delivery holds it.
		if fn := callee(info, c); fn != nil && funcPath(fn) == "errors" && fn.Name() == "Is" && len(c.Args) == 2 && lostClaim.MatchString(lastName(c.Args[1])) {
			v = identObj(info, c.Args[0])
		}
	case *ast.BinaryExpr:
		if c.Op == token.EQL {
			if id, ok := ast.Unparen(c.Y).(*ast.Ident); ok && id.Name == "false" {
				v = identObj(info, c.X)
			}
			if lit, ok := ast.Unparen(c.Y).(*ast.BasicLit); ok && lit.Value == "0" {
				v, rows = identObj(info, c.X), true
			}
		}
	}
	if v == nil {
		return nil
	}
	stmts := append([]ast.Stmt{}, before...)
	if ifs.Init != nil {
		stmts = append(stmts, ifs.Init)
	}
	for i := len(stmts) - 1; i >= 0; i-- {
		as, ok := stmts[i].(*ast.AssignStmt)
		if !ok || len(as.Rhs) != 1 {
			continue
		}
		assigns := false
		for _, l := range as.Lhs {
			if identObj(info, l) == v {
				assigns = true
			}
		}
		if !assigns {
			continue
		}
		call, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr)
		if !ok {
			return nil
		}
		name := lastName(call.Fun)
		if rows && name == "RowsAffected" || !rows && claimVerb.MatchString(name) {
			return call
		}
		return nil
	}
	return nil
}

// guardedWalk returns the functions of rw's walk that it reaches only
// below a won guarded transition (see guardedAt): some call on the chain
// from the entry point to the function sits behind one.
func (w *wholeProgram) guardedWalk(rw *rootWalk) map[*ssa.Function]bool {
	return w.walkBehind(rw, guardedAt)
}

// absentWalk returns the functions of rw's walk that it reaches only in a
// branch taken when a lookup found no row (see absentAt).
func (w *wholeProgram) absentWalk(rw *rootWalk) map[*ssa.Function]bool {
	return w.walkBehind(rw, absentAt)
}

// notFoundName matches the names a lookup's "no row" outcome goes by:
// gorm.ErrRecordNotFound, sql.ErrNoRows, pgx.ErrNoRows, a DeviceNotFoundError,
// IsNotExist.
var notFoundName = regexp.MustCompile(`(?i)not.?found|no.?rows|not.?exist`)

// absentAt reports whether the statement of body holding pos runs only when
// a lookup found nothing: it is in the body (not the else) of an if whose
// condition names a not-found outcome (`errors.Is(err,
// gorm.ErrRecordNotFound)`, `err == sql.ErrNoRows`, `err.(*NotFoundError)`)
// or negates a variable named found or exists, or it follows `if found {
// return }` in an enclosing block. A create there runs once: a redelivery
// finds the row and skips it (two deliveries at once may both create, which
// is checkact's).
func absentAt(info *types.Info, body ast.Node, pos token.Pos) bool {
	looked := lookupVar(info, body)
	return holdsAt(body, pos, func(n ast.Node) bool {
		ifs, ok := n.(*ast.IfStmt)
		return ok && ifs.Body.Pos() <= pos && pos < ifs.Body.End() && notFoundCond(ifs.Cond, ifs.Init, looked)
	}, func(st ast.Stmt, _ []ast.Stmt) bool {
		ifs, ok := st.(*ast.IfStmt)
		return ok && ifs.Else == nil && terminates(ifs.Body) && foundCond(ifs.Cond, looked)
	})
}

// notFoundCond reports whether cond (with its if's init) holds only when a
// lookup found nothing (see notFoundExpr).
func notFoundCond(cond ast.Expr, init ast.Stmt, looked func(ast.Expr) bool) bool {
	if id, ok := ast.Unparen(cond).(*ast.Ident); ok && init != nil {
		// _, ok := err.(*NotFoundError); if ok {...}
		if as, ok := init.(*ast.AssignStmt); ok && len(as.Lhs) > 0 {
			if l, ok := ast.Unparen(as.Lhs[len(as.Lhs)-1]).(*ast.Ident); ok && l.Name == id.Name {
				for _, r := range as.Rhs {
					if notFoundName.MatchString(types.ExprString(r)) {
						return true
					}
				}
			}
		}
	}
	return notFoundExpr(cond, looked) > 0
}

// foundCond reports whether cond holds only when a lookup found a row: a
// flag named found or exists, or the negation of a not-found test.
func foundCond(cond ast.Expr, looked func(ast.Expr) bool) bool {
	return notFoundExpr(cond, looked) < 0
}

// notFoundExpr is +1 when e holds only if a lookup found nothing
// (`errors.Is(err, gorm.ErrRecordNotFound)`, `err == sql.ErrNoRows`,
// `IsNotFound(err)`, `!found`, or the zero value compared with what a
// lookup returned: `existing == (Status{})`, `dev == nil`, `dev.ID == 0`,
// where looked says the value came from a call named like a read), -1 when
// it holds only if one was found (`found`, `exists`, `err != sql.ErrNoRows`,
// `!errors.Is(err, ErrNotFound)`, `dev != nil`), 0 when it says neither.
func notFoundExpr(e ast.Expr, looked func(ast.Expr) bool) int {
	switch e := ast.Unparen(e).(type) {
	case *ast.UnaryExpr:
		if e.Op == token.NOT {
			return -notFoundExpr(e.X, looked)
		}
	case *ast.Ident:
		switch strings.ToLower(e.Name) {
		case "found", "exists", "exist", "present", "isfound", "alreadyexists":
			return -1
		}
	case *ast.BinaryExpr:
		x, y := notFoundExpr(e.X, looked), notFoundExpr(e.Y, looked)
		switch e.Op {
		case token.LAND:
			if x < 0 || y < 0 {
				return -1
			}
			if x > 0 || y > 0 {
				return 1
			}
		case token.LOR:
			if x > 0 && y > 0 {
				return 1
			}
			if x < 0 && y < 0 {
				return -1
			}
		case token.EQL, token.NEQ:
			if notFoundName.MatchString(types.ExprString(e.X)) || notFoundName.MatchString(types.ExprString(e.Y)) ||
				zeroValue(e.Y) && looked(e.X) || zeroValue(e.X) && looked(e.Y) {
				if e.Op == token.EQL {
					return 1
				}
				return -1
			}
		}
	case *ast.CallExpr:
		// errors.Is(err, ErrNotFound), apierrors.IsNotFound(err), os.IsNotExist(err)
		if notFoundName.MatchString(types.ExprString(e)) {
			return 1
		}
	}
	return 0
}

// zeroValue reports whether e is nil, 0, "" or an empty composite literal.
func zeroValue(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return e.Name == "nil"
	case *ast.BasicLit:
		return e.Value == "0" || e.Value == `""`
	case *ast.CompositeLit:
		return len(e.Elts) == 0
	}
	return false
}

// lookupVar returns a test of whether an expression (x, or a field of x:
// x.ID) is a variable body assigns from a call named like a read (Get,
// Find, Lookup, ...: see readName), other than the call's error.
func lookupVar(info *types.Info, body ast.Node) func(ast.Expr) bool {
	return func(e ast.Expr) bool {
		for {
			sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
			if !ok {
				break
			}
			e = sel.X
		}
		id, ok := ast.Unparen(e).(*ast.Ident)
		if !ok || info == nil {
			return false
		}
		obj := info.ObjectOf(id)
		if obj == nil || isError(obj.Type()) {
			return false // err == nil says the lookup worked, not what it found
		}
		found := false
		ast.Inspect(body, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || found || len(as.Rhs) != 1 {
				return !found
			}
			call, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr)
			if !ok || !readName(lastName(call.Fun)) {
				return true
			}
			for _, l := range as.Lhs {
				if lid, ok := ast.Unparen(l).(*ast.Ident); ok && info.ObjectOf(lid) == obj {
					found = true
				}
			}
			return !found
		})
		return found
	}
}

// walkBehind returns the functions of rw's walk that it reaches only where
// at holds: some call on the chain from the entry point to the function
// sits where at(info, caller, call position) is true.
func (w *wholeProgram) walkBehind(rw *rootWalk, at func(*types.Info, ast.Node, token.Pos) bool) map[*ssa.Function]bool {
	memo := map[*ssa.Function]bool{}
	var guarded func(fn *ssa.Function, depth int) bool
	guarded = func(fn *ssa.Function, depth int) bool {
		if g, ok := memo[fn]; ok {
			return g
		}
		p := rw.parent[fn]
		if p == nil || depth > 64 {
			return false
		}
		g := false
		if node, info := p.Syntax(), w.pkgInfo(p); node != nil && info != nil {
			g = at(info.TypesInfo, node, rw.via[fn])
		}
		g = g || guarded(p, depth+1)
		memo[fn] = g
		return g
	}
	out := map[*ssa.Function]bool{}
	for _, fn := range rw.order {
		if guarded(fn, 0) {
			out[fn] = true
		}
	}
	return out
}

// releaseName matches the calls that give a claim back: a lock's unlock,
// a marker's delete.
var releaseName = regexp.MustCompile(`(?i)^(release|unlock|del|delete|remove|free|drop)`)

// claimFirst reports, in body (a function on a consumer path), a claim
// made before the message's external effect and read as "already done"
// by a redelivery: `ok := store.AcquireLock(k); if !ok { return nil }`,
// then the effect. The claim commits on its own, so a crash (or a failure
// that does not give the claim back) between it and the effect loses the
// effect: the redelivery finds the claim and skips the message. A
// guarded UPDATE read by its affected rows (`UPDATE ... SET status =
// 'sent' WHERE status = 'pending'`, then `if n == 0 { return nil }`) is
// such a claim when an external effect follows it (a new user's report:
// an invoice marked sent before its email). It returns the claim, the
// effect's description and call, or nils. Not reported: a claim inside an
// open transaction (it rolls back with the work), a losing branch that
// returns an error (the message is
// redelivered, not skipped), and a claim given back by a deferred
// release (a mutex held for the work, not a marker).
func claimFirst(pass *analysis.Pass, c *Consumers, body *ast.BlockStmt, inTx func(token.Pos) bool) (claim *ast.CallExpr, work string, at ast.Node) {
	deferredRelease := false
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if d, ok := n.(*ast.DeferStmt); ok && releaseName.MatchString(lastName(d.Call.Fun)) {
			deferredRelease = true
		}
		return !deferredRelease
	})
	if deferredRelease {
		return nil, "", nil
	}
	ast.Inspect(body, func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok || claim != nil {
			return false
		}
		block, ok := stmtBlock(m)
		if !ok {
			return true
		}
		for i, st := range block.List {
			call := guardCall(pass.TypesInfo, st, block.List[:i])
			if call == nil || inTx(call.Pos()) || !skipsMessage(pass.TypesInfo, st.(*ast.IfStmt).Body) {
				continue
			}
			if w, a := firstEffect(pass, c, block.List[i+1:]); w != "" {
				claim, work, at = call, w, a
				return false
			}
		}
		return true
	})
	return claim, work, at
}

// skipsMessage reports whether a guard's losing branch acks the message:
// it ends in `continue`, a bare `return`, or a return of nil values.
func skipsMessage(info *types.Info, b *ast.BlockStmt) bool {
	if len(b.List) == 0 {
		return false
	}
	switch last := b.List[len(b.List)-1].(type) {
	case *ast.BranchStmt:
		return last.Tok == token.CONTINUE
	case *ast.ReturnStmt:
		for _, r := range last.Results {
			if tv, ok := info.Types[r]; !ok || !tv.IsNil() {
				if id, ok := ast.Unparen(r).(*ast.Ident); !ok || id.Name != "true" && id.Name != "false" {
					return false
				}
			}
		}
		return true
	}
	return false
}
