package ackgapvet

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
)

// ackChanFields finds the commit channels of the module's hand-offs: a
// receive loop that sends a message value to its workers (out <- msg),
// waits on one of the value's channel fields (<-msg.CommitCh) and then
// acks (commits the offset, deletes the message, or closes another such
// field: job.Done, then msg.CommitCh) lets a worker ack by closing that
// field. The result maps each field to the ack it releases (field trial,
// wave 37: kubev2v/migration-event-streamer's router and pipelines).
func (w *wholeProgram) ackChanFields() map[*types.Var]string {
	type body struct {
		info *types.Info
		body *ast.BlockStmt
	}
	var bodies []body
	for pkg := range w.app {
		p := w.info[pkg]
		if p == nil || p.TypesInfo == nil {
			continue
		}
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncDecl:
					if n.Body != nil {
						bodies = append(bodies, body{p.TypesInfo, n.Body})
					}
				case *ast.FuncLit:
					bodies = append(bodies, body{p.TypesInfo, n.Body})
				}
				return true
			})
		}
	}
	out := map[*types.Var]string{}
	// A field released by another field's ack needs a second round, and
	// so on down a chain of hand-offs; three are plenty.
	for range 3 {
		changed := false
		for _, b := range bodies {
			for f, ack := range replyAcks(b.info, b.body, out) {
				if prev, ok := out[f]; !ok || ack < prev { // the same answer whatever the order
					out[f], changed = ack, true
				}
			}
		}
		if !changed {
			break
		}
	}
	return out
}

// replyAcks returns the channel fields body waits on after sending their
// struct on a channel and before an ack (see ackChanFields), each with
// that ack; known are the fields found so far. Closures in body are
// bodies of their own.
func replyAcks(info *types.Info, body *ast.BlockStmt, known map[*types.Var]string) map[*types.Var]string {
	sent := map[types.Object]token.Pos{}
	type wait struct {
		field *types.Var
		pos   token.Pos
	}
	var waits []wait
	type ack struct {
		name string
		pos  token.Pos
	}
	var acks []ack
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.SendStmt:
			if obj := sentObj(info, n.Value); obj != nil && hasChanField(obj.Type()) {
				if _, ok := sent[obj]; !ok {
					sent[obj] = n.Pos()
				}
			}
		case *ast.UnaryExpr:
			if n.Op != token.ARROW {
				return true
			}
			if sel, ok := ast.Unparen(n.X).(*ast.SelectorExpr); ok {
				if at, ok := sent[identObj(info, sel.X)]; ok && at < n.Pos() {
					if f := fieldVar(info, sel); f != nil {
						waits = append(waits, wait{f, n.Pos()})
					}
				}
			}
		case *ast.CallExpr:
			if a := ackOf(info, n); a != "" {
				acks = append(acks, ack{a, n.Pos()})
			} else if f, _ := closedField(info, n); f != nil && known[f] != "" {
				acks = append(acks, ack{known[f], n.Pos()})
			}
		}
		return true
	})
	out := map[*types.Var]string{}
	for _, wt := range waits {
		for _, a := range acks {
			if a.pos > wt.pos {
				out[wt.field] = a.name
				break
			}
		}
	}
	return out
}

// sentObj returns the variable a sent value (v or &v) names, or nil.
func sentObj(info *types.Info, e ast.Expr) types.Object {
	if u, ok := ast.Unparen(e).(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	if v, ok := identObj(info, e).(*types.Var); ok {
		return v
	}
	return nil
}

// hasChanField reports whether t is, or points to, a struct with a field
// of channel type.
func hasChanField(t types.Type) bool {
	return slices.ContainsFunc(structFields(t), func(f *types.Var) bool {
		_, ok := f.Type().Underlying().(*types.Chan)
		return ok
	})
}

// structFields returns the fields of the struct t is or points to (their
// generic origins), nil for another type.
func structFields(t types.Type) []*types.Var {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		return nil
	}
	out := make([]*types.Var, st.NumFields())
	for i := range out {
		out[i] = st.Field(i).Origin()
	}
	return out
}

// fieldVar returns the struct field of channel type sel selects, its
// generic origin, or nil.
func fieldVar(info *types.Info, sel *ast.SelectorExpr) *types.Var {
	s, ok := info.Selections[sel]
	if !ok || s.Kind() != types.FieldVal {
		return nil
	}
	v, ok := s.Obj().(*types.Var)
	if !ok {
		return nil
	}
	if _, ok := v.Type().Underlying().(*types.Chan); !ok {
		return nil
	}
	return v.Origin()
}

// closedField returns the struct field of channel type that call, a call
// of the builtin close, closes (close(msg.CommitCh)), and its selector;
// nil otherwise.
func closedField(info *types.Info, call *ast.CallExpr) (*types.Var, *ast.SelectorExpr) {
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	if !ok || len(call.Args) != 1 {
		return nil, nil
	}
	if _, ok := info.Uses[id].(*types.Builtin); !ok || id.Name != "close" {
		return nil, nil
	}
	sel, ok := ast.Unparen(call.Args[0]).(*ast.SelectorExpr)
	if !ok {
		return nil, nil
	}
	return fieldVar(info, sel), sel
}

// chanAck returns, in the whole-program mode, how call acks when it closes
// a hand-off's commit channel (see ackChanFields): "close(msg.CommitCh)
// (after which ... commits with ...)"; "" otherwise.
func (c *Consumers) chanAck(call *ast.CallExpr) string {
	if c.program == nil || len(c.program.ackChans) == 0 {
		return ""
	}
	f, sel := closedField(c.pass.TypesInfo, call)
	if f == nil || c.program.ackChans[f] == "" {
		return ""
	}
	return "close(" + types.ExprString(sel) + ") (a hand-off's commit channel: the receive loop then acks with " + c.program.ackChans[f] + ")"
}

// waitedOn reports whether a value of type t, sent to a worker, holds a
// hand-off's commit channel (see ackChanFields): the loop that sends it
// waits for the worker before it acks, so the worker's work is not async.
func (w *wholeProgram) waitedOn(t types.Type) bool {
	return slices.ContainsFunc(structFields(t), func(f *types.Var) bool { return w.ackChans[f] != "" })
}
