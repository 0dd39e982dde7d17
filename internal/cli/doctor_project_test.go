package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/cli"
)

// Issue 13: `trovesnap doctor` says whether the data lies inside the
// current project (the working directory's git root), where a sandboxed
// agent may write, and warns with what to do; outside, it says so.
func TestHardening_DoctorWarnsWhenTheDataLiesInsideTheProject(t *testing.T) {
	base := t.TempDir()
	project := filepath.Join(base, "shop")
	work := filepath.Join(project, "src", "app")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	realProject, err := filepath.EvalSymlinks(project)
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(base, "data")

	for _, c := range []struct {
		name            string
		env             map[string]string
		argv            []string
		dataIn, dbIn    bool
		warningMentions string
	}{
		{"data dir in the git root", map[string]string{"HOME": base, "TROVESNAP_DATA_DIR": filepath.Join(project, ".trovesnap")}, nil, true, true, "TROVESNAP_DATA_DIR"},
		{"relative data dir in the working directory", map[string]string{"HOME": base, "TROVESNAP_DATA_DIR": "trove-data"}, nil, true, true, "the data directory"},
		{"database in the project", map[string]string{"HOME": base, "XDG_DATA_HOME": outside}, []string{"--db", filepath.Join(project, "t.db")}, false, true, "the database"},
		{"all outside", map[string]string{"HOME": base, "XDG_DATA_HOME": outside}, nil, false, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, c.env, append(c.argv, "doctor", "--json")...)
			var rep cli.DoctorReport
			if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != cli.ExitOK {
				t.Fatalf("%+v (%v)", r, err)
			}
			p := rep.Project
			if p.Root != realProject || p.DataDirInside != c.dataIn || p.DBInside != c.dbIn {
				t.Fatalf("project check = %+v; want root %s, data inside %v, db inside %v", p, realProject, c.dataIn, c.dbIn)
			}
			if (p.Warning != "") != (c.warningMentions != "") || !strings.Contains(p.Warning, c.warningMentions) {
				t.Fatalf("warning = %q; want one mentioning %q", p.Warning, c.warningMentions)
			}
			text := run(t, c.env, append(c.argv, "doctor")...)
			if strings.Contains(text.out, "WARNING") != c.dbIn {
				t.Errorf("text output:\n%s", text.out)
			}
		})
	}
}
