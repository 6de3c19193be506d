package ackgapvet

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// site is where a node sits: the functions around it and what they give.
type site struct {
	// Funcs are the enclosing FuncDecl/FuncLit nodes, outermost first.
	Funcs []ast.Node
	// Root is the consumer entry point that reaches the innermost function
	// (or an enclosing one), nil off consumer paths.
	Root *Root
	// Tx is the name of a transaction parameter in scope, "" if none.
	Tx string
	// Ctx is the name of a context parameter in scope, "" if none.
	Ctx string
	// Path is the chain of functions from the entry point to the innermost
	// function, in the whole-program mode; nil otherwise.
	Path []string
	// InTx reports whether a database transaction is open here: a
	// transaction parameter is in scope, or the node lies between a Begin
	// and its Commit in the same function.
	InTx bool
}

// Inner returns the innermost enclosing function.
func (s *site) Inner() ast.Node {
	if len(s.Funcs) == 0 {
		return nil
	}
	return s.Funcs[len(s.Funcs)-1]
}

// names returns the names of the enclosing functions and root, for severity.
func (s *site) names() []string {
	var ns []string
	for _, f := range s.Funcs {
		if fd, ok := f.(*ast.FuncDecl); ok {
			ns = append(ns, fd.Name.Name)
		}
	}
	if s.Root != nil {
		ns = append(ns, s.Root.Name)
	}
	return ns
}

// where describes the site for messages.
func (s *site) where() string {
	var parts []string
	if s.Root != nil {
		name := s.Root.Name
		if name == "func literal" {
			name = "(func literal)"
		}
		p := "on the consumer path of " + s.Root.Kind + " " + name
		if strings.HasSuffix(s.Root.Kind, " "+name) {
			p = "on the consumer path of " + s.Root.Kind // Sarama ConsumeClaim, not "ConsumeClaim ConsumeClaim"
		}
		if len(s.Path) > 1 {
			p += " (" + pathString(s.Path) + ")"
		}
		parts = append(parts, p)
	}
	if s.InTx {
		parts = append(parts, "while a database transaction is open")
	}
	return strings.Join(parts, ", ")
}

// walk calls visit for every node of the given types with its site.
func walk(pass *analysis.Pass, c *Consumers, types []ast.Node, visit func(n ast.Node, s *site)) {
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	ranges := txRanges(pass)
	filter := append([]ast.Node{(*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)}, types...)
	want := map[string]bool{}
	for _, t := range types {
		want[nodeKind(t)] = true
	}
	ins.WithStack(filter, func(n ast.Node, push bool, stack []ast.Node) bool {
		if !push || !want[nodeKind(n)] {
			return true
		}
		if unreachable(stack) {
			return true // after a return in its block: never runs (field trial, wave 48: galaxy_service's stubbed SendEmail)
		}
		s := &site{}
		for _, p := range stack[:len(stack)-1] {
			switch p.(type) {
			case *ast.FuncDecl, *ast.FuncLit:
				s.Funcs = append(s.Funcs, p)
				if r := c.RootOf(p); r != nil {
					s.Root = r
				}
				if tx := txParam(pass.TypesInfo, funcType(p)); tx != "" {
					s.Tx, s.InTx = tx, true
				}
				if cx := ctxParam(pass.TypesInfo, funcType(p)); cx != "" {
					s.Ctx = cx
				}
			}
		}
		if f := s.Inner(); f != nil {
			if s.Root != nil {
				s.Path = c.PathOf(f)
			}
			for _, r := range ranges[f] {
				if n.Pos() >= r[0] && n.Pos() < r[1] {
					s.InTx = true
				}
			}
		}
		visit(n, s)
		return true
	})
}

// unreachable reports whether the node at the end of stack lies in a
// statement that follows a return statement of the same block (`return
// nil` left above a function's old body): code that never runs.
func unreachable(stack []ast.Node) bool {
	for i := len(stack) - 2; i >= 0; i-- {
		b, ok := stack[i].(*ast.BlockStmt)
		if !ok {
			continue
		}
		for _, st := range b.List {
			if st == stack[i+1] {
				break
			}
			if _, ret := st.(*ast.ReturnStmt); ret {
				return true
			}
		}
	}
	return false
}

// deadSpans returns the spans of body's statements that follow a return
// statement of their block (see unreachable).
func deadSpans(body ast.Node) [][2]token.Pos {
	var out [][2]token.Pos
	ast.Inspect(body, func(n ast.Node) bool {
		b, ok := n.(*ast.BlockStmt)
		if !ok {
			return true
		}
		for i, st := range b.List {
			if _, ret := st.(*ast.ReturnStmt); ret && i+1 < len(b.List) {
				out = append(out, [2]token.Pos{b.List[i+1].Pos(), b.List[len(b.List)-1].End()})
				break
			}
		}
		return true
	})
	return out
}

// inSpans reports whether pos lies in one of spans.
func inSpans(spans [][2]token.Pos, pos token.Pos) bool {
	for _, s := range spans {
		if s[0] <= pos && pos < s[1] {
			return true
		}
	}
	return false
}

func nodeKind(n ast.Node) string {
	switch n.(type) {
	case *ast.CallExpr:
		return "call"
	case *ast.CompositeLit:
		return "lit"
	case *ast.SelectorExpr:
		return "sel"
	case *ast.Ident:
		return "ident"
	case *ast.ReturnStmt:
		return "return"
	case *ast.FuncDecl, *ast.FuncLit:
		return "func"
	}
	return ""
}

// inspectStack walks files as ast.Inspect does, handing visit each node
// with the stack of the nodes above it (the node itself last); visit's
// false skips the node's children.
func inspectStack(files []*ast.File, visit func(n ast.Node, stack []ast.Node) bool) {
	for _, f := range files {
		var stack []ast.Node
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			stack = append(stack, n)
			if !visit(n, stack) {
				stack = stack[:len(stack)-1] // no f(nil) comes for a node whose children are skipped
				return false
			}
			return true
		})
	}
}

// txRanges finds, per function, the spans between a Begin call and the
// first non-deferred Commit after it (or the function's end).
func txRanges(pass *analysis.Pass) map[ast.Node][][2]token.Pos {
	out := map[ast.Node][][2]token.Pos{}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			fnNode, ok := n.(*ast.FuncDecl)
			var body *ast.BlockStmt
			if ok {
				body = fnNode.Body
			} else if lit, ok := n.(*ast.FuncLit); ok {
				body = lit.Body
			}
			if body == nil {
				return true
			}
			var begins, commits []token.Pos
			ast.Inspect(body, func(m ast.Node) bool {
				switch m := m.(type) {
				case *ast.FuncLit:
					return false
				case *ast.DeferStmt:
					return false
				case *ast.CallExpr:
					fn := callee(pass.TypesInfo, m)
					if fn == nil {
						return true
					}
					path, recv, name := funcPath(fn), recvName(fn), fn.Name()
					db := path == "database/sql" || isPgx(path) || isPgxpool(path)
					if db && (name == "Begin" || name == "BeginTx") && recv != "" {
						begins = append(begins, m.End())
					}
					if db && (name == "Commit" || name == "Rollback") && recv == "Tx" {
						commits = append(commits, m.Pos())
					}
				}
				return true
			})
			for _, b := range begins {
				end := body.End()
				for _, cm := range commits {
					if cm > b && cm < end {
						end = cm
					}
				}
				out[n] = append(out[n], [2]token.Pos{b, end})
			}
			return true
		})
	}
	return out
}

// constStrings returns the string constants in a call's arguments, nested
// ones included (a topic in a record literal), for severity and messages.
func constStrings(info *types.Info, call *ast.CallExpr) []string {
	var out []string
	for _, a := range call.Args {
		ast.Inspect(a, func(n ast.Node) bool {
			e, ok := n.(ast.Expr)
			if !ok {
				return true
			}
			if tv, ok := info.Types[e]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
				out = append(out, constant.StringVal(tv.Value))
				return false
			}
			return true
		})
	}
	return out
}

// pathString renders a call path: "a → b → c", eliding the middle of long
// ones.
func pathString(path []string) string {
	if len(path) > 6 {
		path = append(append(append([]string{}, path[:2]...), "…"), path[len(path)-3:]...)
	}
	return strings.Join(path, " → ")
}

// stmtBlock returns the statement list n holds as a block: a block itself,
// or the body of a switch or select case (`case *kafka.Message:` of a
// confluent-kafka-go Poll loop is where its work and its commit are), as
// a block of the same statements.
func stmtBlock(n ast.Node) (*ast.BlockStmt, bool) {
	switch n := n.(type) {
	case *ast.BlockStmt:
		return n, true
	case *ast.CaseClause:
		return &ast.BlockStmt{Lbrace: n.Colon, List: n.Body, Rbrace: n.End()}, true
	case *ast.CommClause:
		return &ast.BlockStmt{Lbrace: n.Colon, List: n.Body, Rbrace: n.End()}, true
	}
	return nil, false
}
