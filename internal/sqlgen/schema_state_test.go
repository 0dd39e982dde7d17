package sqlgen_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/sqlgen"
)

// liveSchema is what the live migrations leave behind, read without
// PostgreSQL: a migration that redefines a function, a policy or a
// constraint replaces the earlier text, so only the newest definition of
// each is held to the domain.
type liveSchema struct {
	funcs    map[string]string // "schema.name" → newest body (between $$)
	policies map[string]string // "table/policy" → its USING / WITH CHECK text
	columns  map[string]string // "table.column" → its newest definition, with an inline CHECK
	// checks holds the table-level constraints by table, then name.
	checks map[string]map[string]string
}

var (
	stmtRE = regexp.MustCompile(`(?is)` +
		`(CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+([\w.]+)\s*\()` + // 1, 2
		`|(DROP\s+FUNCTION\s+(?:IF\s+EXISTS\s+)?([\w.]+))` + // 3, 4
		`|(CREATE\s+POLICY\s+(\w+)\s+ON\s+([\w.]+)([^;]*);)` + // 5, 6, 7, 8
		`|(DROP\s+POLICY\s+(?:IF\s+EXISTS\s+)?(\w+)\s+ON\s+([\w.]+))` + // 9, 10, 11
		`|(CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([\w.]+)\s*\()` + // 12, 13
		`|(ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?([\w.]+)\s+([^;]*);)`) // 14, 15, 16
	wordRE       = regexp.MustCompile(`^"?(\w+)"?`)
	tableLevelRE = regexp.MustCompile(`(?i)^(CONSTRAINT|CHECK|PRIMARY|UNIQUE|FOREIGN|EXCLUDE)\b`)
	addColumnRE  = regexp.MustCompile(`(?is)^ADD\s+COLUMN\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\b`)
	addCheckRE   = regexp.MustCompile(`(?is)^ADD\s+(?:CONSTRAINT\s+(\w+)\s+)?CHECK\b`)
	dropCheckRE  = regexp.MustCompile(`(?is)^DROP\s+CONSTRAINT\s+(?:IF\s+EXISTS\s+)?(\w+)`)
)

// closing returns the index just past the parenthesis that closes the one
// open before s[from].
func closing(s string, from int) int {
	depth := 1
	inStr := false
	for i := from; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			inStr = !inStr
		case inStr:
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(s)
}

// splitTop splits s at the commas outside parentheses and strings.
func splitTop(s string) []string {
	var out []string
	depth, start, inStr := 0, 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			inStr = !inStr
		case inStr:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

func stripComments(s string) string {
	return regexp.MustCompile(`(?m)--[^\n']*$`).ReplaceAllString(s, "")
}

func readLiveSchema(t *testing.T) liveSchema {
	t.Helper()
	ms, err := sqlgen.List(migrations)
	if err != nil {
		t.Fatal(err)
	}
	ls := liveSchema{funcs: map[string]string{}, policies: map[string]string{}, columns: map[string]string{},
		checks: map[string]map[string]string{}}
	for _, m := range ms {
		b, err := os.ReadFile(filepath.Join(migrations, m.Name))
		if err != nil {
			t.Fatal(err)
		}
		s := stripComments(string(b))
		for pos := 0; pos < len(s); {
			g := stmtRE.FindStringSubmatchIndex(s[pos:])
			if g == nil {
				break
			}
			at := func(i int) string {
				if g[2*i] < 0 {
					return ""
				}
				return s[pos+g[2*i] : pos+g[2*i+1]]
			}
			next := pos + g[1]
			switch {
			case at(1) != "":
				open := strings.Index(s[next:], "$$")
				if open < 0 {
					t.Fatalf("%s: function %s has no $$ body", m.Name, at(2))
				}
				open += next + 2
				end := strings.Index(s[open:], "$$")
				if end < 0 {
					t.Fatalf("%s: function %s: unterminated body", m.Name, at(2))
				}
				ls.funcs[strings.ToLower(at(2))] = s[open : open+end]
				next = open + end + 2
			case at(3) != "":
				delete(ls.funcs, strings.ToLower(at(4)))
			case at(5) != "":
				ls.policies[at(7)+"/"+at(6)] = at(8)
			case at(9) != "":
				delete(ls.policies, at(11)+"/"+at(10))
			case at(12) != "":
				end := closing(s, next)
				for _, e := range splitTop(s[next : end-1]) {
					if w := wordRE.FindStringSubmatch(e); w != nil && !tableLevelRE.MatchString(e) {
						ls.columns[at(13)+"."+w[1]] = e
					} else {
						ls.addCheck(at(13), "", e)
					}
				}
				next = end
			case at(14) != "":
				for _, a := range splitTop(at(16)) {
					if c := addColumnRE.FindStringSubmatch(a); c != nil {
						ls.columns[at(15)+"."+c[1]] = a
					} else if c := addCheckRE.FindStringSubmatch(a); c != nil {
						ls.addCheck(at(15), c[1], a)
					} else if c := dropCheckRE.FindStringSubmatch(a); c != nil {
						ls.dropCheck(at(15), c[1])
					}
				}
			}
			pos = next
		}
	}
	if len(ls.funcs) < 100 || len(ls.columns) < 100 {
		t.Fatalf("read %d functions and %d columns from %s: the reader no longer understands the migrations",
			len(ls.funcs), len(ls.columns), migrations)
	}
	return ls
}

// addCheck records a table-level constraint (an unnamed one gets a name
// of its own: it can only be dropped by the name PostgreSQL gives it,
// which no migration here relies on).
func (ls liveSchema) addCheck(table, name, check string) {
	if ls.checks[table] == nil {
		ls.checks[table] = map[string]string{}
	}
	if name == "" {
		name = "unnamed_" + strconv.Itoa(len(ls.checks[table]))
	}
	ls.checks[table][name] = check
}

// dropCheck removes a constraint by name; "<table>_<column>_check" is the
// name PostgreSQL gives a column's inline CHECK, so dropping it leaves the
// column's definition without one.
func (ls liveSchema) dropCheck(table, name string) {
	delete(ls.checks[table], name)
	bare := table[strings.LastIndex(table, ".")+1:]
	if col, ok := strings.CutSuffix(strings.TrimPrefix(name, bare+"_"), "_check"); ok {
		if def, ok := ls.columns[table+"."+col]; ok {
			if i := regexp.MustCompile(`(?i)\bCHECK\b`).FindStringIndex(def); i != nil {
				ls.columns[table+"."+col] = def[:i[0]]
			}
		}
	}
}

// texts names every newest SQL text of the live schema, for the tests that
// scan them all.
func (ls liveSchema) texts() map[string]string {
	out := map[string]string{}
	for k, v := range ls.funcs {
		out["function "+k] = v
	}
	for k, v := range ls.policies {
		out["policy "+k] = v
	}
	for k, v := range ls.columns {
		table, col := k[:strings.LastIndex(k, ".")], k[strings.LastIndex(k, ".")+1:]
		word := regexp.MustCompile(`\b` + col + `\b`)
		for _, c := range ls.checks[table] {
			if word.MatchString(c) {
				v += "\n" + c
			}
		}
		out["column "+k] = v
	}
	return out
}
