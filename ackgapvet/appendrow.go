package ackgapvet

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"regexp"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// AppendAnalyzer reports rows appended on every delivery by a consumer that
// records no dedupe.
var AppendAnalyzer = newAnalyzer("append",
	`report rows appended on every delivery by a consumer with no dedupe

An INSERT without ON CONFLICT (or INSERT IGNORE, ON DUPLICATE KEY, WHERE NOT
EXISTS), in SQL text or rendered by a query builder (squirrel's ToSql,
goqu's ToSQL, bob's Build), a GORM Create, an ent Create().Save, a MongoDB InsertOne (the driver's,
qmgo's or go-zero's mon and monc) or a bulk load (COPY ... FROM, pgx's CopyFrom) on a
consumer path adds a row each time the message is delivered; a Redis list
push (LPUSH, RPUSH) adds an entry, unless the package also pops lists (a
queue with a consumer of its own). When nothing on
the consumer's path records the event (no insert … ON CONFLICT, INSERT
IGNORE or ON DUPLICATE KEY, no Redis SETNX, not an ackgap handler) a
redelivery appends a second comment, order line, audit entry or outbox row
(and the outbox row a second publish). A create made only when a lookup
found no row (in a branch on gorm.ErrRecordNotFound, sql.ErrNoRows, a
NotFound error or !found, here or in a caller), or after a read that
skips the message when it finds one (a GORM Count into n, then
if n > 0 { m.Ack(); return }), is not reported: a
redelivery finds the row. Fix: key the row by the event id
under a unique constraint and insert with ON CONFLICT DO NOTHING, or record
the event id in an inbox row in the same transaction.`,
	func(pass *analysis.Pass, c *Consumers, r *reporter) {
		queues := popsLists(pass)
		walk(pass, c, callNode, func(n ast.Node, s *site) {
			call := n.(*ast.CallExpr)
			if s.Root == nil || s.Root.Kind == KindAckgap {
				return
			}
			d := appendOf(pass.TypesInfo, call)
			if d == "" {
				d = freshPut(pass.TypesInfo, funcBody(s.Inner()), call)
			}
			if d == "" && !queues {
				d = listPush(pass.TypesInfo, call)
			}
			if d == "" || c.deduped(s.Root, s.Inner()) || hasDedupeInsert(pass, funcBody(s.Inner())) {
				return
			}
			if absentAt(pass.TypesInfo, s.Inner(), call.Pos()) || c.lookedUp(s.Inner()) || skipsWhenRecorded(pass.TypesInfo, funcBody(s.Inner()), call.Pos()) {
				return // created only when a lookup found none: a redelivery finds it
			}
			names := append(s.names(), constStrings(pass.TypesInfo, call)...)
			msg := "%s %s appends a row on every delivery, and nothing on the consumer's path records the event: a redelivery adds a second row; key the row by the event id under a unique constraint (ON CONFLICT DO NOTHING) or record the event in an inbox row in the same transaction"
			if strings.HasPrefix(d, "a Redis list push") {
				msg = "%s %s appends an entry on every delivery, and nothing on the consumer's path records the event: a redelivery pushes it a second time; claim the event id first (SET NX keyed by the event id) and push only when the claim is new, or keep the entries in a hash or sorted set keyed by the event id"
			}
			r.report(call, SeverityOf(names...), fmt.Sprintf(msg, d, s.where()))
		})
	})

// freshPut describes a DynamoDB PutItem (aws-sdk-go v2 or v1, or the
// code's own interface over either) whose input is built from an id made
// afresh in body (uuid, ulid, ksuid, xid, math/rand: see freshRandom; not
// time.Now, which is as often a timestamp attribute as a key): PutItem
// overwrites an item with the same key, but each delivery's key is new, so
// a redelivery writes a second item (field trial, wave 40: eztoll's
// `ksuid.NewRandom()` toll ids). "" for any other call.
func freshPut(info *types.Info, body *ast.BlockStmt, call *ast.CallExpr) string {
	fn := callee(info, call)
	if fn == nil || body == nil {
		return ""
	}
	op := ""
	switch svc, ok := isAWSv1Client(fn); {
	case funcPath(fn) == pathAWSSvc+"dynamodb" && recvName(fn) == "Client":
		op = fn.Name()
	case ok && svc == "dynamodb":
		op = awsV1Op(fn.Name())
	default:
		if svc, o := appAWSOp(fn); svc == "dynamodb" {
			op = o
		}
	}
	if op != "PutItem" {
		return ""
	}
	fresh := map[types.Object]string{} // variables holding a fresh id, by its generator
	// genOf returns the generator of a fresh id e holds, "" if none: a
	// generator's call or a fresh variable, not as the value of a
	// literal's attribute whose name is not an id's or key's ("request":
	// uuid.NewString() beside the item's own key).
	genOf := func(e ast.Node) string {
		gen := ""
		var stack []ast.Node
		ast.Inspect(e, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			if gen != "" {
				return false
			}
			g := ""
			switch n := n.(type) {
			case *ast.Ident:
				g = fresh[info.Uses[n]]
			case *ast.CallExpr:
				if r := freshRandom(info, &ast.CallExpr{Fun: n.Fun}); r != "" && r != "time.Now" {
					g = r
				}
			}
			if g != "" && !otherAttribute(info, stack) {
				gen = g
			}
			stack = append(stack, n)
			return true
		})
		return gen
	}
	ast.Inspect(body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Rhs) != 1 {
			return true
		}
		if g := genOf(as.Rhs[0]); g != "" {
			for _, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok && info.ObjectOf(id) != nil && !isErrorType(info.ObjectOf(id).Type()) {
					fresh[info.ObjectOf(id)] = g
				}
			}
		}
		return true
	})
	gen := genOf(call)
	if gen == "" || messageKeyed(call) {
		return ""
	}
	return fmt.Sprintf("a DynamoDB PutItem (%s) keyed by an id made afresh with %s", qualName(fn), gen)
}

// idAttribute matches the names of a DynamoDB item's key attributes: id,
// pk, sk, key, and names ending in Id, ID, _id or _key.
var idAttribute = regexp.MustCompile(`(?i)^(id|pk|sk|key|hash|range)$|(Id|ID|_id|_key|Key)$`)

// otherAttribute reports whether the innermost composite literal element
// on stack (past the input's own Item field) is an attribute whose name is
// not an id's or key's (see idAttribute): a fresh value there is data, not
// the item's key.
func otherAttribute(info *types.Info, stack []ast.Node) bool {
	for i := len(stack) - 1; i >= 0; i-- {
		kv, ok := stack[i].(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		name := stringValue(info, kv.Key)
		if id, ok := kv.Key.(*ast.Ident); ok && name == "" {
			name = id.Name
		}
		if name == "Item" {
			continue // PutItemInput{Item: ...}: the item itself
		}
		return name != "" && !idAttribute.MatchString(name)
	}
	return false
}

// messageKeyed reports whether call's arguments read the message's own id
// (a selector named as [messageIDName]: an SQS MessageId, Watermill's
// UUID, an EventID): the item is keyed by it, and a fresh id beside it is
// data.
func messageKeyed(call *ast.CallExpr) bool {
	found := false
	ast.Inspect(call, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && messageIDName.MatchString(sel.Sel.Name) {
			found = true
		}
		return !found
	})
	return found
}

// keyedColumns matches an INSERT that writes a column named for a dedupe
// key (idempotency_key, event_id, message_id, dedup…): such a column is
// there to be unique, and a repeat is refused (or answered) by it.
var keyedColumns = regexp.MustCompile(`IDEMPOTENCY|EVENT_?ID|MESSAGE_?ID|MSG_?ID|DEDUP|DELIVERY_?ID`)

// dupCheck matches the names that test an error for a duplicate key: a
// plain INSERT whose failure is read that way is a dedupe record (the
// MySQL style: insert, and 1062 means "seen").
var dupCheck = regexp.MustCompile(`(?i)dup|unique|conflict|alreadyexists|23505|1062`)

// seenName matches identifiers that name a duplicate as "seen" (errSeen,
// ErrAlreadySeen, isSeen, wasProcessed, alreadyConsumed, a helper seen(err)):
// a sentinel renamed from gorm.ErrDuplicatedKey, or the code's own helper
// that tests it (a new user's report). Identifiers only: "last_seen" in SQL
// text is a column; and not a bare "processed" or "seen" (a counter, a map
// of a batch's keys): a bare "seen" counts only called (see
// readsDuplicate).
var seenName = regexp.MustCompile(`(?i)^(err|is|was|has)(already)?(seen|processed|consumed)(err|error)?$|already(seen|processed|consumed)`)

// appendOf describes a call that inserts a row with no conflict clause, ""
// for any other call: SQL whose text is an INSERT without ON CONFLICT, OR
// IGNORE, INSERT IGNORE, ON DUPLICATE KEY or WHERE NOT EXISTS; a GORM
// Create or CreateInBatches not chained after Clauses (an upsert), gorm.io/gen's
// generated ones too; an ent
// builder's Save/Exec on a XCreate or XCreateBulk (ent's upserts are
// XUpsertOne); a bun NewInsert()...Exec without On("CONFLICT ...") or
// Ignore(); a MongoDB InsertOne or InsertMany.
func appendOf(info *types.Info, call *ast.CallExpr) string {
	fn := callee(info, call)
	if fn == nil {
		return ""
	}
	path, recv, name := funcPath(fn), recvName(fn), fn.Name()
	chain := types.ExprString(call.Fun)
	switch {
	case (path == "gorm.io/gorm" || path == "github.com/jinzhu/gorm") && recv == "DB" && (name == "Create" || name == "CreateInBatches"):
		if strings.Contains(chain, "Clauses(") || strings.Contains(chain, "OnConflict") {
			return ""
		}
		return "a GORM insert (" + qualName(fn) + ")"
	case genDAO(fn) && (name == "Create" || name == "CreateInBatches"):
		if strings.Contains(chain, "Clauses(") || path == pathGormGen {
			// An upsert (Clauses(clause.OnConflict{...})); or gen.DO's
			// own Create inside the generated file, whose caller
			// (reported at its call) shows the chain.
			return ""
		}
		return "a gorm.io/gen insert (" + qualName(fn) + ")"
	case entCreate(fn):
		return "an ent insert (" + qualName(fn) + ")"
	case path == pathBun && recv == "InsertQuery" && name == "Exec":
		if strings.Contains(chain, ".On(") || strings.Contains(chain, ".Ignore(") {
			return "" // ON CONFLICT ..., INSERT IGNORE
		}
		return "a bun insert (" + qualName(fn) + ")"
	case (strings.HasPrefix(path, "go.mongodb.org/mongo-driver") || path == "github.com/qiniu/qmgo") && recv == "Collection" && (name == "InsertOne" || name == "InsertMany"),
		goZeroMongoWrite(fn) && strings.HasPrefix(name, "Insert"):
		return "a MongoDB insert (" + qualName(fn) + ")"
	case strings.HasPrefix(path, "github.com/jackc/pgx") && name == "CopyFrom" && recv != "":
		// A bulk load: the COPY protocol has no conflict clause (field
		// trial, wave 41: tipoca-stream's loads, committed before the
		// offset).
		return "a bulk COPY (" + qualName(fn) + ")"
	}
	if h, _ := dbCall(info, call); h == handleNone {
		return ""
	}
	sql := sqlText(info, call)
	if strings.HasPrefix(sql, "COPY ") && strings.Contains(sql, " FROM ") {
		return "a bulk COPY ... FROM (" + qualName(fn) + ")" // Postgres, Redshift: no conflict clause
	}
	if !strings.HasPrefix(sql, "INSERT") || guardedInsert(sql) || strings.Contains(sql, "INSERT IGNORE") || strings.Contains(sql, "NOT EXISTS") || keyedColumns.MatchString(sql) {
		return ""
	}
	return "an INSERT without ON CONFLICT (" + qualName(fn) + ")"
}

// redisListPush names the go-redis commands that append to a list: unlike a
// SET or HSET, a repeat adds a second entry.
var redisListPush = map[string]bool{"LPush": true, "RPush": true, "LPushX": true, "RPushX": true}

// listPush describes call when it is a Redis list push (see
// redisListPush), "" otherwise: a redelivery pushes the same entry again
// (field trial, wave 58: crypto-trade's moving-average windows, where a
// candle pushed twice is counted twice).
func listPush(info *types.Info, call *ast.CallExpr) string {
	if !redisListPush[redisCmd(info, call)] {
		return ""
	}
	return "a Redis list push (" + qualName(callee(info, call)) + ")"
}

// popsLists reports whether pass's package takes entries off a Redis list
// (BRPOP, LPOP, BLMOVE and their kin: see redisReceive and redisTakes): its
// pushes then feed a queue whose consumer is an entry point of its own,
// and append does not report them.
func popsLists(pass *analysis.Pass) bool {
	for _, f := range pass.Files {
		found := false
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && !found {
				cmd := redisCmd(pass.TypesInfo, call)
				found = redisReceive[cmd] || redisTakes[cmd] || cmd == "LMove" || cmd == "RPopLPush"
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// entCreate reports whether fn is the Save, SaveX, Exec or ExecX method of
// an ent create builder (a generated type named XCreate or XCreateBulk
// whose package imports entgo.io/ent).
func entCreate(fn *types.Func) bool {
	switch fn.Name() {
	case "Save", "SaveX", "Exec", "ExecX":
	default:
		return false
	}
	r := recvName(fn)
	if !strings.HasSuffix(r, "Create") && !strings.HasSuffix(r, "CreateBulk") || fn.Pkg() == nil {
		return false
	}
	for _, imp := range fn.Pkg().Imports() {
		if strings.HasPrefix(imp.Path(), "entgo.io/ent") {
			return true
		}
	}
	return false
}

// deduped reports whether something on root's path records the event: an
// insert … ON CONFLICT (INSERT IGNORE, ON DUPLICATE KEY), an insert whose
// duplicate-key failure is tested, or a Redis SETNX (see recordsEvent)
// in a function it reaches (in the whole-program mode, anywhere on its
// walk; otherwise in this package).
func (c *Consumers) deduped(root *Root, at ast.Node) bool {
	if c.program != nil && c.program.dedupe != nil {
		if v, ok := c.program.dedupe[root]; ok {
			return v && !c.program.undeduped[root][at]
		}
	}
	for n, r := range c.reach {
		if r == root && recordsEvent(c.pass.TypesInfo, n) {
			return true
		}
	}
	return false
}

// recordsEvent reports whether the function node n makes a dedupe record:
// an insert with a conflict clause, a plain insert (SQL text, or a GORM,
// ent, bun or MongoDB create) in a function that tests an error for a
// duplicate key (gorm.ErrDuplicatedKey, 23505, 1062: "seen"), a Redis
// SetNX, or a Redis SADD or HSETNX whose reply the function reads (a skip
// on "already there").
func recordsEvent(info *types.Info, n ast.Node) bool {
	found := false
	dupChecked := -1 // readsDuplicate(n), asked once: -1 not yet, 0 no, 1 yes
	ast.Inspect(n, func(m ast.Node) bool {
		call, ok := m.(*ast.CallExpr)
		if !ok || found {
			return !found
		}
		if fn := callee(info, call); fn != nil && strings.EqualFold(fn.Name(), "SetNX") || testedClaim(info, n, call) {
			found = true
			return false
		}
		plain := false // an insert whose duplicate-key failure may be read as "seen"
		if h, _ := dbCall(info, call); h != handleNone {
			sql := sqlText(info, call)
			if dedupeInsert(sql) || strings.Contains(sql, "INSERT IGNORE") {
				found = true
			}
			plain = strings.HasPrefix(sql, "INSERT")
		}
		if !plain && !found && appendOf(info, call) != "" {
			plain = true // a GORM, ent, bun or MongoDB insert: no SQL text
		}
		if gormDoNothing(info, call) {
			found = true
		}
		if plain {
			if dupChecked < 0 {
				dupChecked = 0
				if readsDuplicate(n) {
					dupChecked = 1
				}
			}
			found = found || dupChecked == 1
		}
		return !found
	})
	return found
}

// gormDoNothing reports whether call is a GORM Create chained after
// Clauses(clause.OnConflict{DoNothing: true}): INSERT ... ON CONFLICT DO
// NOTHING, GORM's form of an inbox row (a new user's report).
func gormDoNothing(info *types.Info, call *ast.CallExpr) bool {
	fn := callee(info, call)
	if fn == nil || funcPath(fn) != "gorm.io/gorm" || recvName(fn) != "DB" || fn.Name() != "Create" {
		return false
	}
	found := false
	ast.Inspect(call.Fun, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "DoNothing" {
				if v, ok := ast.Unparen(kv.Value).(*ast.Ident); ok && v.Name == "true" {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// readsDuplicate reports whether the function n tests an error for a
// duplicate key: a call or an identifier named like one (isDupEntry,
// IsUniqueViolation, ErrConflict, ErrAlreadySeen: see seenName; a call of
// a function named seen), or the codes 23505 (PostgreSQL unique_violation)
// and 1062 (MySQL ER_DUP_ENTRY).
func readsDuplicate(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(m ast.Node) bool {
		switch m := m.(type) {
		case *ast.Ident:
			if dupCheck.MatchString(m.Name) || seenName.MatchString(m.Name) {
				found = true
			}
		case *ast.CallExpr:
			if id, ok := ast.Unparen(m.Fun).(*ast.Ident); ok && strings.EqualFold(id.Name, "seen") && len(m.Args) > 0 {
				found = true // if seen(err) { ... }
			}
		case *ast.BasicLit:
			if dupCheck.MatchString(m.Value) {
				found = true
			}
		}
		return !found
	})
	return found
}

// testedClaim reports whether call is a Redis SADD or HSETNX (see
// redisClaimCmd) whose reply n reads: assigned to a variable, or in an if
// condition. A plain SADD to a set (followers, tags) is not a claim.
func testedClaim(info *types.Info, n ast.Node, call *ast.CallExpr) bool {
	if !redisClaimCmd[redisCmd(info, call)] {
		return false
	}
	tested := false
	ast.Inspect(n, func(m ast.Node) bool {
		var e ast.Node
		switch m := m.(type) {
		case *ast.AssignStmt:
			if len(m.Rhs) == 1 && !(len(m.Lhs) > 0 && isBlank(m.Lhs[0])) {
				e = m.Rhs[0]
			}
		case *ast.IfStmt:
			e = m.Cond
		}
		if e != nil && e.Pos() <= call.Pos() && call.End() <= e.End() {
			tested = true
		}
		return !tested
	})
	return tested
}

// isBlank reports whether e is the blank identifier.
func isBlank(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "_"
}

// redisGated reports whether body takes a Redis claim whose reply it reads
// (SETNX, or SADD or HSETNX tested): the function skips what it has seen.
func redisGated(info *types.Info, body *ast.BlockStmt) bool {
	if body == nil {
		return false
	}
	found := false
	inspectOwn(body, func(n ast.Node) {
		if call, ok := n.(*ast.CallExpr); ok && !found && testedClaim(info, body, call) {
			found = true
		}
	})
	return found
}

// skipsWhenRecorded reports whether, before pos in body, the function
// reads the database into a variable (a query's Scan, GORM's First, Find,
// Take, Last or Count into &v) and then skips the message on it (a branch
// that returns without an error, continues, or acks and returns: see
// leavesQuietly): `Count(&n)` then `if n > 0 { _ = m.Ack(); return }` is
// the consumer's dedupe check, and what is inserted after it is the
// record a redelivery finds (field trial, wave 47: fyredocs' notification
// and document subscribers; the race between two deliveries is
// checkact's).
func skipsWhenRecorded(info *types.Info, body *ast.BlockStmt, pos token.Pos) bool {
	if body == nil {
		return false
	}
	read := map[types.Object]bool{}
	mark := func(args []ast.Expr) {
		for _, a := range args {
			if u, ok := ast.Unparen(a).(*ast.UnaryExpr); ok && u.Op == token.AND {
				if o := baseObj(info, u.X); o != nil {
					read[o] = true
				}
			}
		}
	}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if found || n == nil || n.Pos() >= pos {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			fn := callee(info, n)
			switch {
			case fn != nil && isGORM(fn) && (fn.Name() == "Count" || isDBRead(info, n)):
				mark(n.Args)
			case calledName(n) == "Scan":
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					if inner, ok := ast.Unparen(sel.X).(*ast.CallExpr); ok && seenRead(info, inner) {
						mark(n.Args)
					}
				}
			}
		case *ast.IfStmt:
			if n.End() < pos && skipsSeen(info, n, read) {
				found = true
				return false
			}
		}
		return true
	})
	return found
}

// isGORM reports whether fn is a method of GORM's DB (gorm.io/gorm or
// jinzhu/gorm).
func isGORM(fn *types.Func) bool {
	return (funcPath(fn) == "gorm.io/gorm" || funcPath(fn) == "github.com/jinzhu/gorm") && recvName(fn) == "DB"
}
