package sqlgen

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Migration is one file of supabase/migrations. Its version is its place
// in name order, counting from 1, as live.SchemaVersion counts them.
type Migration struct {
	Name      string // file name, e.g. 20261201120800_trovesnap_domain_rules.sql
	Version   int
	Generated bool // its first line is GeneratedHeader
}

// Base is the name without .sql, as schema_migrations records it.
func (m Migration) Base() string { return strings.TrimSuffix(m.Name, ".sql") }

// List reads the migrations of dir (supabase/migrations) in order.
func List(dir string) ([]Migration, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := make([]Migration, len(files))
	for i, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		first, _, _ := bytes.Cut(body, []byte("\n"))
		out[i] = Migration{Name: filepath.Base(f), Version: i + 1, Generated: string(first) == GeneratedHeader}
	}
	return out, nil
}

// NewestGenerated is the last generated migration of ms; false when there
// is none.
func NewestGenerated(ms []Migration) (Migration, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Generated {
			return ms[i], true
		}
	}
	return Migration{}, false
}

// Current reports whether the newest generated migration of dir holds
// exactly today's rules (File of its version and name).
func Current(dir string) (bool, error) {
	ms, err := List(dir)
	if err != nil {
		return false, err
	}
	m, ok := NewestGenerated(ms)
	if !ok {
		return false, nil
	}
	want, err := File(m.Version, m.Base())
	if err != nil {
		return false, err
	}
	got, err := os.ReadFile(filepath.Join(dir, m.Name))
	if err != nil {
		return false, err
	}
	return bytes.Equal(got, want), nil
}

// stampLayout is the timestamp that starts a migration's name.
const stampLayout = "20060102150405"

// NextName names the migration after the newest of ms: its timestamp plus
// one minute (the spacing the project uses), so it sorts last.
func NextName(ms []Migration, suffix string) (string, error) {
	if len(ms) == 0 {
		return "", errors.New("no migrations")
	}
	last := ms[len(ms)-1].Name
	if len(last) < len(stampLayout) {
		return "", fmt.Errorf("%s: no timestamp", last)
	}
	t, err := time.Parse(stampLayout, last[:len(stampLayout)])
	if err != nil {
		return "", fmt.Errorf("%s: %w", last, err)
	}
	return t.Add(time.Minute).Format(stampLayout) + suffix, nil
}

// Generate writes a new generated migration into dir when the newest one
// does not hold today's rules, and returns its name ("" when nothing was
// written). An applied migration is never rewritten.
func Generate(dir string) (string, error) {
	ok, err := Current(dir)
	if err != nil || ok {
		return "", err
	}
	ms, err := List(dir)
	if err != nil {
		return "", err
	}
	name, err := NextName(ms, GeneratedSuffix)
	if err != nil {
		return "", err
	}
	body, err := File(len(ms)+1, strings.TrimSuffix(name, ".sql"))
	if err != nil {
		return "", err
	}
	return name, os.WriteFile(filepath.Join(dir, name), body, 0o644)
}

// Sums maps a migration file name to the hex sha256 of its bytes.
type Sums map[string]string

// ReadSums reads a sum file: lines of "<sha256>  <file name>", as
// sha256sum prints them. A missing file is an empty list.
func ReadSums(path string) (Sums, error) {
	body, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Sums{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := Sums{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for n := 1; sc.Scan(); n++ {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 || name == "" {
			return nil, fmt.Errorf("%s:%d: want \"<sha256>  <file>\"", path, n)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s recorded twice", path, n, name)
		}
		out[name] = sum
	}
	return out, sc.Err()
}

// FileSums computes the sums of every migration of dir.
func FileSums(dir string) (Sums, error) {
	ms, err := List(dir)
	if err != nil {
		return nil, err
	}
	out := Sums{}
	for _, m := range ms {
		body, err := os.ReadFile(filepath.Join(dir, m.Name))
		if err != nil {
			return nil, err
		}
		h := sha256.Sum256(body)
		out[m.Name] = hex.EncodeToString(h[:])
	}
	return out, nil
}

// Verify compares the migrations of dir with the recorded sums: a recorded
// file that changed or vanished, and a file not recorded, each make one
// problem.
func Verify(dir, sumPath string) ([]string, error) {
	rec, err := ReadSums(sumPath)
	if err != nil {
		return nil, err
	}
	have, err := FileSums(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for name, sum := range rec {
		switch got, ok := have[name]; {
		case !ok:
			out = append(out, name+": recorded but gone (applied migrations are never removed)")
		case got != sum:
			out = append(out, name+": changed since it was recorded (applied migrations are never edited: write a new one)")
		}
	}
	for name := range have {
		if _, ok := rec[name]; !ok {
			out = append(out, name+": not recorded (run `go generate ./internal/sqlgen` to record it)")
		}
	}
	slices.Sort(out)
	return out, nil
}

// Record appends the sums of the migrations of dir not yet recorded to the
// sum file; recorded lines are never changed. It returns the names added.
func Record(dir, sumPath string) ([]string, error) {
	rec, err := ReadSums(sumPath)
	if err != nil {
		return nil, err
	}
	have, err := FileSums(dir)
	if err != nil {
		return nil, err
	}
	ms, err := List(dir)
	if err != nil {
		return nil, err
	}
	var added []string
	var b strings.Builder
	for _, m := range ms {
		if _, ok := rec[m.Name]; !ok {
			fmt.Fprintf(&b, "%s  %s\n", have[m.Name], m.Name)
			added = append(added, m.Name)
		}
	}
	if len(added) == 0 {
		return nil, nil
	}
	f, err := os.OpenFile(sumPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return nil, err
	}
	return added, f.Close()
}
