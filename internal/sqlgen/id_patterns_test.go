package sqlgen_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// sqlLiteralRE matches a SQL string literal; idLiteralRE one that begins
// like an id pattern: an anchor, an optional "word:" namespace, then a
// lower-case prefix and its underscore.
var (
	sqlLiteralRE = regexp.MustCompile(`'(?:[^']|'')*'`)
	idLiteralRE  = regexp.MustCompile(`^\^([a-z]+:)?[a-z][a-z_]*_`)
)

// idPatternProblems checks every id pattern SQL spells out in text against
// the rule domain declares for its prefix: the whole pattern is
// domain.IDPattern(prefix) (after the one namespace domain declares,
// ImportedSourcePrefix), or it is only the anchored prefix ("^item_") that
// dispatches on an id's type. It returns what it found and what is wrong.
func idPatternProblems(where, text string) (found int, problems []string) {
	prefixes := domain.IDPrefixes()
	sort.Slice(prefixes, func(i, j int) bool { return len(prefixes[i]) > len(prefixes[j]) }) // longest first: mcp_client before mcp_…
	for _, lit := range sqlLiteralRE.FindAllString(text, -1) {
		v := strings.ReplaceAll(lit[1:len(lit)-1], "''", "'")
		m := idLiteralRE.FindStringSubmatch(v)
		if m == nil {
			continue
		}
		found++
		ns := m[1]
		if ns != "" && ns != domain.ImportedSourcePrefix {
			problems = append(problems, where+": "+lit+": namespace "+ns+" is not one domain declares")
			continue
		}
		rest := strings.TrimPrefix(v, "^"+ns)
		prefix := ""
		for _, p := range prefixes {
			if strings.HasPrefix(rest, p+"_") {
				prefix = p
				break
			}
		}
		switch {
		case prefix == "":
			problems = append(problems, where+": "+lit+": no id prefix domain declares (domain.IDPrefixes)")
		case rest == prefix+"_":
		case v != "^"+ns+strings.TrimPrefix(domain.IDPattern(prefix), "^"):
			problems = append(problems, where+": "+lit+" is not domain.IDPattern("+prefix+") = "+domain.IDPattern(prefix))
		}
	}
	return found, problems
}

// The live RPCs check ids with patterns PostgreSQL needs spelled out; each
// is the pattern domain.ValidID declares for its prefix, in the newest
// definition of every function, policy and constraint (and in the SQLite
// migrations, which today spell none).
func TestIDPatterns_EverySQLIDPatternIsTheDomains(t *testing.T) {
	total := 0
	var problems []string
	for where, text := range readLiveSchema(t).texts() {
		n, p := idPatternProblems(where, text)
		total += n
		problems = append(problems, p...)
	}
	if total < 10 {
		t.Fatalf("found %d id patterns in the live schema; the reader no longer sees them", total)
	}
	store, err := filepath.Glob("../../store/migrations/*.sql")
	if err != nil || len(store) == 0 {
		t.Fatalf("no store migrations: %v", err)
	}
	for _, f := range store {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, p := idPatternProblems(filepath.Base(f), string(b))
		problems = append(problems, p...)
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

func TestIDPatterns_SeesAWrongPattern(t *testing.T) {
	for _, text := range []string{
		`IF v !~ '^sale_[A-Za-z0-9]{1,41}$' THEN`,
		`IF v !~ '^sales_[A-Za-z0-9]{1,40}$' THEN`,
		`IF v !~ '^exported:candidate_[A-Za-z0-9]{1,40}$' THEN`,
		`IF v ~ '^lot_' THEN`,
	} {
		if n, p := idPatternProblems("f", text); n != 1 || len(p) != 1 {
			t.Errorf("%s: found %d, problems %v; want one of each", text, n, p)
		}
	}
	if n, p := idPatternProblems("f", `'^imported:candidate_[A-Za-z0-9]{1,40}$' '^item_' '^mcp_client_[A-Za-z0-9]{1,40}$'`); n != 3 || len(p) != 0 {
		t.Errorf("the domain's own patterns: found %d, problems %v", n, p)
	}
}
