package ackgapvet

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// seenCheckName matches the names of calls that ask whether a message was
// already handled: IsProcessed, AlreadySeen, HasBeenHandled, IsDuplicate,
// Exists.
var seenCheckName = regexp.MustCompile(`(?i)processed|seen|handled|duplicate|dedup|exists`)

// seenMarkName matches the names of calls that record a message as handled:
// MarkProcessed, MarkAsDone, SaveProcessed, RecordSeen, SetHandled, Mark.
var seenMarkName = regexp.MustCompile(`(?i)^(mark|set|save|record|store|insert|add|put)\w*(processed|seen|handled|done|dedup|complete)|^mark(as)?$`)

// checkThenMark reports, in a function on a consumer path, a dedupe done in
// two separate steps around the work: a call that asks whether the message
// was handled (a bool result), then the work, then a call that marks it
// with the same key. Two concurrent deliveries both pass the check, and a crash between the
// work and the mark leaves the message unmarked, so its redelivery does the
// work again. A function that holds a database transaction over the three
// (a transaction parameter, or Begin before the check) is not reported.
func checkThenMark(pass *analysis.Pass, c *Consumers, r *reporter) {
	info := pass.TypesInfo
	for node, root := range c.reach {
		body := funcBody(node)
		if body == nil || root.Kind == KindAckgap || txParam(info, funcType(node)) != "" {
			continue
		}
		var check, mark *ast.CallExpr
		var work ast.Node
		workDesc := ""
		inTx := false
		ast.Inspect(body, func(m ast.Node) bool {
			if _, ok := m.(*ast.FuncLit); ok || mark != nil || inTx {
				return false
			}
			call, ok := m.(*ast.CallExpr)
			if !ok {
				return true
			}
			if isBeginTx(info, call) {
				inTx = true // a transaction holds what follows
				return false
			}
			name := calledName(call)
			switch {
			case check == nil:
				if seenCheckName.MatchString(name) && returnsBool(info, call) && len(keyArgs(info, call)) > 0 {
					check = call
				}
			case work == nil:
				if call == check {
					return true
				}
				if d, at := firstWork(pass, c, []ast.Stmt{&ast.ExprStmt{X: call}}); d != "" && !seenMarkName.MatchString(name) {
					work, workDesc = at, d
				} else if (dynamicCall(info, call) || handsOver(info, check, call)) && !seenMarkName.MatchString(name) && !seenCheckName.MatchString(name) && !decodeCall.MatchString(name) && !ackOrLog(info, call) {
					work, workDesc = call, "a call to "+types.ExprString(call.Fun)
				}
			default:
				if seenMarkName.MatchString(name) && sharesKey(info, check, call) {
					mark = call
				}
			}
			return true
		})
		if check == nil || work == nil || mark == nil {
			continue
		}
		r.report(check, SeverityOf(root.Name, calledName(check), calledName(mark), workDesc), fmt.Sprintf(
			"checks whether the message was handled (%s), does the work (%s at line %d), then marks it (%s at line %d) in a separate step: two concurrent deliveries both pass the check, and a crash between the work and the mark leaves it unmarked, so the redelivery does the work again; insert the mark first, under a unique constraint, in the same transaction as the work (an inbox row), and make external calls outbox rows",
			types.ExprString(check.Fun), workDesc, pass.Fset.Position(work.Pos()).Line,
			types.ExprString(mark.Fun), pass.Fset.Position(mark.Pos()).Line))
	}
}

// handsOver reports whether call is given what the check's key came from
// (job.Message for a key job.Message.ID): the work on the same message,
// whatever it reaches.
func handsOver(info *types.Info, check, call *ast.CallExpr) bool {
	var roots []types.Object
	for _, a := range check.Args {
		if t := info.TypeOf(a); t != nil && isNamed(t, "context", "Context") {
			continue
		}
		if o := rootObject(info, a); o != nil {
			roots = append(roots, o)
		}
	}
	for _, a := range call.Args {
		if o := rootObject(info, a); o != nil && slices.Contains(roots, o) {
			return true
		}
	}
	return false
}

// notWorkName matches the names of calls that tidy up or report rather
// than do the message's work.
var notWorkName = regexp.MustCompile(`(?i)^(delete|ack|log|debug|info|warn|error|print)`)

// ackOrLog reports whether call acks the message or logs: neither is the
// work.
func ackOrLog(info *types.Info, call *ast.CallExpr) bool {
	if ackOf(info, call) != "" {
		return true
	}
	fn := callee(info, call)
	if fn == nil {
		return false
	}
	return logCall(info, call) || notWorkName.MatchString(fn.Name())
}

// logCall reports whether call writes a log line or formats text: the log,
// log/slog and fmt packages, zerolog, logrus, zap, klog, glog, a method of
// another logger named like a level (Infof, Errorw, Warn, Msg), and a
// function of the code's own logging package named like one
// (logger.Error("failed to publish to DLQ", ...): field trial, wave 30,
// topos H1). Its text says what happened; it sends nothing anywhere.
func logCall(info *types.Info, call *ast.CallExpr) bool {
	fn := callee(info, call)
	if fn == nil {
		return false
	}
	p := funcPath(fn)
	if p == "log" || p == "log/slog" || p == "fmt" || strings.Contains(p, "zerolog") || strings.Contains(p, "logrus") || strings.Contains(p, "zap") || strings.Contains(p, "klog") || strings.Contains(p, "glog") {
		return true
	}
	if recvName(fn) == "" && logPkgName.MatchString(fn.Pkg().Name()) {
		return logLevelName.MatchString(fn.Name())
	}
	return recvName(fn) != "" && logLevelName.MatchString(fn.Name())
}

// logPkgName matches the names of an application's own logging packages.
var logPkgName = regexp.MustCompile(`(?i)^(z|app|my)?log(s|ger|gers|ging|util|x)?$`)

// logLevelName matches the methods of a logger of the application's own.
var logLevelName = regexp.MustCompile(`^(Print|Info|Warn|Warning|Error|Debug|Trace|Log|Msg)(f|w|ln|Context|Ctx)?$`)

// calledName returns the last name of a call's function (Mark in s.store.Mark).
func calledName(call *ast.CallExpr) string {
	return lastName(call.Fun)
}

// returnsBool reports whether call's results include a bool.
func returnsBool(info *types.Info, call *ast.CallExpr) bool {
	t := info.TypeOf(call)
	if t == nil {
		return false
	}
	if tup, ok := t.(*types.Tuple); ok {
		for v := range tup.Variables() {
			if isBool(v.Type()) {
				return true
			}
		}
		return false
	}
	return isBool(t)
}

func isBool(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Kind() == types.Bool
}

// keyArgs returns the arguments of call that can be a dedupe key: not a
// context.
func keyArgs(info *types.Info, call *ast.CallExpr) []string {
	var out []string
	for _, a := range call.Args {
		if t := info.TypeOf(a); t != nil && isNamed(t, "context", "Context") {
			continue
		}
		out = append(out, types.ExprString(a))
	}
	return out
}

// sharesKey reports whether mark is given one of the keys check was given
// (the same expression): the check and the mark are about one message.
func sharesKey(info *types.Info, check, mark *ast.CallExpr) bool {
	keys := keyArgs(info, check)
	for _, k := range keyArgs(info, mark) {
		if slices.Contains(keys, k) {
			return true
		}
	}
	return false
}

// isBeginTx reports whether call begins a database transaction (Begin,
// BeginTx, BeginTxx of database/sql, pgx or sqlx).
func isBeginTx(info *types.Info, call *ast.CallExpr) bool {
	fn := callee(info, call)
	if fn == nil {
		return false
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Results().Len() == 0 {
		return false
	}
	t := sig.Results().At(0).Type()
	return isTxType(t) || isNamedTx(t)
}

// markBeforeWork reports, in a function on a consumer path, a dedupe marker
// written before the effect it guards: the function skips a message it
// finds already recorded (a branch that returns without an error, or
// continues, on a value read from the database or on a call named like a
// seen-check), then writes the record, then makes an external effect. A
// crash or a failed effect after the write makes the redelivery find its
// own record and skip the message: the effect is never made (field trial,
// wave 4: cloud-connector H1). A write inside a transaction begun in the
// function is not reported.
func markBeforeWork(pass *analysis.Pass, c *Consumers, r *reporter) {
	for node, root := range c.reach {
		me := c.markThenEffect(node)
		if me == nil {
			continue
		}
		r.report(me.mark, SeverityOf(root.Name, me.markDesc, me.effectDesc), fmt.Sprintf(
			"writes the record that a redelivery is skipped on (line %d) before %s (line %d): a crash or a failed call after this write makes the redelivery find the record and skip the message, so the call is never made; write the record after the call, or record the call as an outbox row in the same transaction as the record",
			pass.Fset.Position(me.skip.Pos()).Line, me.effectDesc, pass.Fset.Position(me.effect.Pos()).Line))
	}
}

// markedEffect is a dedupe record written before the effect it guards
// (see markBeforeWork): the skip, the write, and the first effect after.
type markedEffect struct {
	skip                 *ast.IfStmt
	mark, effect         *ast.CallExpr
	markDesc, effectDesc string
}

// markThenEffect finds, in node (a function on a consumer path), a
// dedupe record written before an effect (see markBeforeWork); nil if
// none. The effect check asks it too: a redelivery skips such an effect
// rather than repeating it, so `effect` leaves it to `checkact`.
func (c *Consumers) markThenEffect(node ast.Node) *markedEffect {
	info := c.pass.TypesInfo
	root := c.reach[node]
	body := funcBody(node)
	if root == nil || body == nil || root.Kind == KindAckgap || txParam(info, funcType(node)) != "" {
		return nil
	}
	var found *markedEffect
	read := map[types.Object]bool{}
	var skip *ast.IfStmt
	var mark *ast.CallExpr
	markDesc := ""
	stop := false
	errFrom := map[types.Object]*ast.CallExpr{} // the call that last set an error variable
	ast.Inspect(body, func(m ast.Node) bool {
		if _, ok := m.(*ast.FuncLit); ok || stop {
			return false
		}
		switch m := m.(type) {
		case *ast.AssignStmt:
			if len(m.Rhs) == 1 {
				if call, ok := ast.Unparen(m.Rhs[0]).(*ast.CallExpr); ok {
					for _, l := range m.Lhs {
						if id, ok := l.(*ast.Ident); ok && info.ObjectOf(id) != nil && isErrorType(info.ObjectOf(id).Type()) {
							errFrom[info.ObjectOf(id)] = call
						}
					}
				}
			}
			if skip == nil && len(m.Rhs) == 1 {
				if call, ok := ast.Unparen(m.Rhs[0]).(*ast.CallExpr); ok && seenRead(info, call) {
					for _, l := range m.Lhs {
						// Not the error: a branch on it is error handling.
						if id, ok := l.(*ast.Ident); ok && info.ObjectOf(id) != nil && !isErrorType(info.ObjectOf(id).Type()) {
							read[info.ObjectOf(id)] = true
						}
					}
				}
			}
		case *ast.IfStmt:
			if skip == nil {
				if w, d := c.duplicateSkip(m, errFrom); w != nil {
					skip, mark, markDesc = m, w, d
					return false
				}
			}
			if skip == nil && skipsSeen(info, m, read) {
				skip = m
				return false // the skip branch itself
			}
		case *ast.CallExpr:
			if isBeginTx(info, m) {
				stop = true
				return false
			}
			if skip == nil {
				if isDBRead(info, m) && dbWriteOf(info, m) == "" {
					// GORM's First(&job, id): job holds what was read.
					for _, a := range m.Args {
						if u, ok := ast.Unparen(a).(*ast.UnaryExpr); ok && u.Op == token.AND {
							if o := baseObj(info, u.X); o != nil {
								read[o] = true
							}
						}
					}
				}
				if calledName(m) == "Scan" {
					// QueryRow(...).Scan(&v): v holds what was read.
					if sel, ok := m.Fun.(*ast.SelectorExpr); ok {
						if inner, ok := ast.Unparen(sel.X).(*ast.CallExpr); ok && seenRead(info, inner) {
							for _, a := range m.Args {
								if u, ok := a.(*ast.UnaryExpr); ok {
									if id, ok := u.X.(*ast.Ident); ok && info.ObjectOf(id) != nil {
										read[info.ObjectOf(id)] = true
									}
								}
							}
						}
					}
				}
				return true
			}
			if mark == nil {
				if d := c.writeOnly(m); d != "" {
					mark, markDesc = m, d
				}
				return mark == nil
			}
			d := effectOf(info, m)
			if d == "" {
				if cf := callee(info, m); cf != nil {
					if sum := c.Summary(cf); sum != nil && sum.Effect != "" {
						d = viaDesc(cf, sum.Effect)
					}
				}
			}
			if d == "" && c.program != nil && c.program.effectSites[m.Lparen] {
				d = "the call of " + types.ExprString(m.Fun) + ", below which an external call is made"
			}
			if d == "" {
				return true
			}
			found = &markedEffect{skip: skip, mark: mark, effect: m, markDesc: markDesc, effectDesc: d}
			stop = true
			return false
		}
		return true
	})
	return found
}

// writeOnly describes call when it writes to a database and makes no
// effect: a write itself, or a call of a function whose summary says so;
// "" otherwise.
func (c *Consumers) writeOnly(call *ast.CallExpr) string {
	if d := dbWriteOf(c.pass.TypesInfo, call); d != "" {
		return d
	}
	if cf := callee(c.pass.TypesInfo, call); cf != nil {
		if sum := c.Summary(cf); sum != nil && sum.Write != "" && sum.Effect == "" {
			return viaDesc(cf, sum.Write)
		}
	}
	return ""
}

// duplicateName matches the names of calls and errors that say a write
// failed on a unique key: IsDuplicateErr, isUniqueViolation, ErrConflict,
// ErrAlreadyExists.
var duplicateName = regexp.MustCompile(`(?i)dup|unique|conflict|already`)

// duplicateSkip matches a write whose unique-key failure is the dedupe
// skip: `if err != nil { if isDuplicate(err) { return nil } ... }` after
// (or in the init of) a database write, directly or through the code's
// function. The write, committed on its own, is then the record a
// redelivery is skipped on (field trial, wave 31: vulnerability-db's
// ProcessSourceExecution before its SNS notifications). It returns the
// write and its description, or nil.
func (c *Consumers) duplicateSkip(ifs *ast.IfStmt, errFrom map[types.Object]*ast.CallExpr) (*ast.CallExpr, string) {
	info := c.pass.TypesInfo
	// The error the if tests: `err != nil` around the skip, or the skip's
	// own `isDuplicate(err)`, `errors.Is(err, ErrAlreadyExists)`.
	var errObj types.Object
	ast.Inspect(ifs.Cond, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && errObj == nil {
			if o := info.ObjectOf(id); o != nil && isErrorType(o.Type()) {
				if _, isVar := o.(*types.Var); isVar && o.Parent() != types.Universe {
					errObj = o
				}
			}
		}
		return errObj == nil
	})
	if errObj == nil {
		return nil, ""
	}
	write := errFrom[errObj]
	if as, ok := ifs.Init.(*ast.AssignStmt); ok && len(as.Rhs) == 1 {
		if call, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr); ok {
			write = call
		}
	}
	if write == nil {
		return nil, ""
	}
	desc := c.writeOnly(write)
	if desc == "" && c.program != nil && c.program.workSites[write.Lparen] && !c.program.effectSites[write.Lparen] {
		desc = "the call of " + types.ExprString(write.Fun) + ", below which a database write is made"
	}
	if desc == "" {
		return nil, ""
	}
	if namesDuplicate(info, ifs.Cond, errObj) && leavesQuietly(info, ifs.Body) {
		return write, desc // if isDuplicate(err) { return nil }
	}
	if !errNotNil(info, ifs.Cond) {
		return nil, ""
	}
	for _, st := range ifs.Body.List { // if err != nil { if isDuplicate(err) { return nil }; ... }
		if inner, ok := st.(*ast.IfStmt); ok && namesDuplicate(info, inner.Cond, errObj) && leavesQuietly(info, inner.Body) {
			return write, desc
		}
	}
	return nil, ""
}

// namesDuplicate reports whether cond reads errObj and names a duplicate
// (see duplicateName) in a call, an identifier or a selector.
func namesDuplicate(info *types.Info, cond ast.Expr, errObj types.Object) bool {
	reads, named := false, false
	ast.Inspect(cond, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			named = named || duplicateName.MatchString(calledName(n))
		case *ast.Ident:
			if info.ObjectOf(n) == errObj {
				reads = true
			} else {
				named = named || duplicateName.MatchString(n.Name)
			}
		case *ast.SelectorExpr:
			named = named || duplicateName.MatchString(n.Sel.Name)
		}
		return true
	})
	return reads && named
}

// seenRead reports whether call reads what a skip could be decided on: a
// database read (a query, not a write) or a call named like a seen-check
// (IsProcessed, AlreadySeen, Exists).
func seenRead(info *types.Info, call *ast.CallExpr) bool {
	if seenCheckName.MatchString(calledName(call)) {
		return true
	}
	h, _ := dbCall(info, call)
	return h != handleNone && dbWriteOf(info, call) == "" && sqlText(info, call) != ""
}

// skipsSeen reports whether ifs skips the message on a read value: its
// condition uses a variable in read (or calls a seen-check itself) and its
// branch, at most a log line and the leaving statement, returns without an
// error or continues.
func skipsSeen(info *types.Info, ifs *ast.IfStmt, read map[types.Object]bool) bool {
	uses := false
	ast.Inspect(ifs.Cond, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if read[info.ObjectOf(n)] {
				uses = true
			}
		case *ast.CallExpr:
			if seenCheckName.MatchString(calledName(n)) && returnsBool(info, n) {
				uses = true
			}
		}
		return !uses
	})
	return uses && leavesQuietly(info, ifs.Body)
}

func isErrorType(t types.Type) bool {
	return types.Identical(t, types.Universe.Lookup("error").Type())
}

// redisClaimCmd names the Redis commands that set a key or member only
// when it is new and say whether they did (SETNX, HSETNX: a bool; SADD:
// the number of members added): used as a dedupe claim.
var redisClaimCmd = map[string]bool{"SetNX": true, "HSetNX": true, "SAdd": true}

// redisReleaseCmd names the Redis commands that give such a claim back.
var redisReleaseCmd = map[string]bool{"Del": true, "Unlink": true, "SRem": true, "HDel": true}

// redisCmd returns the name of call when it is a Redis client's command
// (a method of a package whose path holds "redis"), or "". Names are
// go-redis's: go-zero's redis.Redis spells them in its own case with an
// optional Ctx suffix (HincrbyCtx, Setnx, SetnxEx), which redisCanon maps
// (field trial wave 33, zfeed H2).
func redisCmd(info *types.Info, call *ast.CallExpr) string {
	fn := callee(info, call)
	if fn == nil || !strings.Contains(funcPath(fn), "redis") || recvName(fn) == "" {
		return ""
	}
	if strings.Contains(funcPath(fn), "zeromicro/go-zero") {
		name := strings.ToLower(strings.TrimSuffix(fn.Name(), "Ctx"))
		if c, ok := redisCanon[name]; ok {
			return c
		}
	}
	return fn.Name()
}

// redisCanon maps go-zero's lower-cased command names to go-redis's, for
// the commands the checks name (claims, releases, counters, state
// writes, expiries).
var redisCanon = func() map[string]string {
	m := map[string]string{"setnxex": "SetNX", "expireat": "ExpireAt", "expire": "Expire"}
	for _, set := range []map[string]bool{redisClaimCmd, redisReleaseCmd, redisIncrCmd, redisStateCmd} {
		for name := range set {
			m[strings.ToLower(name)] = name
		}
	}
	return m
}()

// claimBeforeWork reports, in a function on a consumer path, a dedupe
// claim taken in Redis before the work it guards, with a skip on it and no
// release: SADD or SETNX, a branch that skips the message when the claim
// was already there, then a database write or an external effect. If the
// work fails, or the process dies before it is done, the redelivery finds
// the claim and skips the message: the work is lost, in another store than
// the claim (field trial, wave 14: redyx H2). A function that deletes the
// claim (DEL, SREM) on some path is not reported, nor a SETNX before an
// external effect, which earlyack reports (claimFirst).
func claimBeforeWork(pass *analysis.Pass, c *Consumers, r *reporter) {
	info := pass.TypesInfo
	for node, root := range c.reach {
		body := funcBody(node)
		if body == nil || root.Kind == KindAckgap {
			continue
		}
		var claim, work *ast.CallExpr
		var skip *ast.IfStmt
		workDesc := ""
		claimed := map[types.Object]bool{}
		released := false
		inspectOwn(body, func(n ast.Node) {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if claim != nil || len(n.Rhs) != 1 {
					return
				}
				ast.Inspect(n.Rhs[0], func(m ast.Node) bool {
					if call, ok := m.(*ast.CallExpr); ok && redisClaimCmd[redisCmd(info, call)] {
						claim = call
					}
					return claim == nil
				})
				if claim == nil {
					return
				}
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok && info.ObjectOf(id) != nil && !isErrorType(info.ObjectOf(id).Type()) {
						claimed[info.ObjectOf(id)] = true
					}
				}
			case *ast.IfStmt:
				if skip != nil {
					return
				}
				inline := false
				ast.Inspect(n.Cond, func(m ast.Node) bool {
					if call, ok := m.(*ast.CallExpr); ok && redisClaimCmd[redisCmd(info, call)] {
						inline = true
						if claim == nil {
							claim = call
						}
					}
					return !inline
				})
				if (inline || claim != nil && skipsSeen(info, n, claimed)) && leavesQuietly(info, n.Body) {
					skip = n
				}
			case *ast.CallExpr:
				if redisReleaseCmd[redisCmd(info, n)] && claim != nil {
					released = true
				}
				if skip == nil || work != nil || n.Pos() < skip.End() {
					return
				}
				if d := dbWriteOf(info, n); d != "" {
					work, workDesc = n, d
				} else if d := effectOf(info, n); d != "" {
					work, workDesc = n, d
				} else if cf := callee(info, n); cf != nil {
					if sum := c.Summary(cf); sum != nil && (sum.Write != "" || sum.Effect != "") {
						work, workDesc = n, viaDesc(cf, cmp.Or(sum.Effect, sum.Write))
					}
				}
			}
		})
		if claim == nil || skip == nil || work == nil || released {
			continue
		}
		if effectOf(info, work) != "" && claimVerb.MatchString(calledName(claim)) {
			continue // SETNX before an effect: earlyack's claimFirst
		}
		r.report(claim, SeverityOf(root.Name, workDesc), fmt.Sprintf(
			"claims the message in Redis (%s) before its work (%s, line %d), skips it when the claim is already there (line %d), and never gives the claim back: if the work fails or the process dies before it is done, the redelivery finds the claim and skips the message, so the work is lost; delete the claim when the work fails (DEL, SREM), or record the message in the same transaction as the work (an inbox row under a unique constraint)",
			qualName(callee(info, claim)), workDesc, pass.Fset.Position(work.Pos()).Line, pass.Fset.Position(skip.Pos()).Line))
	}
}

// leavesQuietly reports whether a branch of at most three statements ends
// by returning without an error or with continue, or returns from a
// function with no results (acking the message itself first or not: `_ =
// m.Ack(); return` in a callback, field trial, wave 47, fyredocs' status
// guard; a bare `return` that leaves an SQS message undeleted, wave 50,
// video_transcoding's "uploading" guard, skips the work on every
// redelivery alike).
func leavesQuietly(info *types.Info, body *ast.BlockStmt) bool {
	if len(body.List) == 0 || len(body.List) > 3 {
		return false
	}
	if returnsNoError(info, body) != nil {
		return true
	}
	if ret, ok := body.List[len(body.List)-1].(*ast.ReturnStmt); ok && len(ret.Results) == 0 {
		return true
	}
	br, ok := body.List[len(body.List)-1].(*ast.BranchStmt)
	return ok && br.Tok.String() == "continue"
}
