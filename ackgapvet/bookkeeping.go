package ackgapvet

import (
	"go/ast"
	"go/token"
	"go/types"
	"regexp"

	"golang.org/x/tools/go/ast/astutil"
)

// bookkeepingName matches the calls, and the functions, that keep a
// record about the message's work rather than do it: a status, progress,
// metadata, failure reason, attempt or history write, a last-seen touch
// (`UpdateStatus`, `Update("status", ...)`, `mergeMetadata`,
// `clearFailure`, `publishStatusEvent`).
var bookkeepingName = regexp.MustCompile(`(?i)status|progress|metadata|failure|attempt|history|touch`)

// bookkeepingAfterWork reports whether call, a failing step whose error
// errack would report as acked, is bookkeeping done after the message's
// work has already succeeded: its text (or the name of the function it is
// in, when some call of that function in this package is so placed)
// names a status, progress, metadata, failure, attempt or history record,
// and an earlier step of the same function did work (a write or an
// external call) whose failure leaves before the ack. Redelivering such a
// message repeats the work that succeeded to mend a record about it, so
// errack leaves it alone (field trial, waves 40 to 47: 30 of the 105
// findings reviewers found true but not worth acting on, or false, were
// such writes: posta's status after the SMTP send, fyredocs'
// updateJobStatus("completed") after the upload, raisin's status after
// the SES send; none of the actionable ones).
func (c *Consumers) bookkeepingAfterWork(call *ast.CallExpr) bool {
	if bookkeepingName.MatchString(types.ExprString(call)) && c.afterDoneWork(call.Pos()) {
		return true
	}
	fd := c.enclosingDecl(call.Pos())
	if fd == nil || !bookkeepingName.MatchString(fd.Name.Name) || c.reach[fd] != nil && c.reach[fd].Node == ast.Node(fd) {
		return false // not a bookkeeping function, or the entry point itself
	}
	fn, _ := c.pass.TypesInfo.Defs[fd.Name].(*types.Func)
	if fn == nil {
		return false
	}
	found := false
	for _, f := range c.pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			if site, ok := n.(*ast.CallExpr); ok && !found && callee(c.pass.TypesInfo, site) == fn && c.afterDoneWork(site.Pos()) {
				found = true
			}
			return !found
		})
	}
	return found
}

// enclosingDecl returns the function declaration of this package that
// holds pos, or nil.
func (c *Consumers) enclosingDecl(pos token.Pos) *ast.FuncDecl {
	for _, f := range c.pass.Files {
		if f.Pos() > pos || pos > f.End() {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil && fd.Pos() <= pos && pos < fd.End() {
				return fd
			}
		}
	}
	return nil
}

// afterDoneWork reports whether, in the function that holds pos, a
// statement before it (in its block or an enclosing one) did work whose
// failure leaves the function or the loop: `if err := send(m); err != nil
// { return err }`, `out, err := upload(f)` then `if err != nil { fail(m);
// return }`. The work is a write or an external call (or a call through a
// function value), not itself bookkeeping, and carries no idempotency key:
// a keyed call's repeat is deduped by its receiver, so a redelivery would
// mend the record at no cost (a new user's report: a carrier POST with a
// stable key, then the failed "shipped" write).
func (c *Consumers) afterDoneWork(pos token.Pos) bool {
	info := c.pass.TypesInfo
	var file *ast.File
	for _, f := range c.pass.Files {
		if f.Pos() <= pos && pos <= f.End() {
			file = f
		}
	}
	if file == nil {
		return false
	}
	path, _ := astutil.PathEnclosingInterval(file, pos, pos)
	var fnBody *ast.BlockStmt
	for _, n := range path {
		if fnBody = funcBody(n); fnBody != nil {
			break
		}
	}
	for i := 1; i < len(path); i++ {
		switch path[i].(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			return false
		}
		block, ok := stmtBlock(path[i])
		if !ok {
			continue
		}
		var prev ast.Stmt
		for _, st := range block.List {
			if st == path[i-1] {
				break
			}
			if ifs, w := errBranch(info, st, prev); ifs != nil && terminates(ifs.Body) && !bookkeepingName.MatchString(types.ExprString(w)) &&
				(isWork(c.pass, c, w) || dynamicCall(info, w)) && !keyedCall(c.pass, fnBody, w) {
				return true
			}
			prev = st
		}
	}
	return false
}
