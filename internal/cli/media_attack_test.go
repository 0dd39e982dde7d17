package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
)

// Attack (issue 16, files in): the agent, with a shell as the seller's
// user, plants a named pipe among the photos the seller adds (`media add
// ~/photos/*`) or hands it to `import csv`. Opening a FIFO for reading
// blocks until a writer comes: the command must refuse it as not a regular
// file, without hanging, and still add the other photos.
func TestAttack_MediaAddAndImportRefuseAFIFOWithoutHanging(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "m.db")
	fifo := filepath.Join(dir, "pipe.jpg")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// Whatever happens, unblock a reader stuck on the FIFO when the test ends.
	t.Cleanup(func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = w.Close()
		}
	})
	good := writeFile(t, dir, "chair.jpg", photoWithGPS(t, 32, 32, 9))
	type outcome struct {
		res cli.MediaAddResult
		r   result
	}
	done := make(chan outcome, 1)
	go func() {
		res, r := mediaAdd(t, env, "--db", db, "--candidate", fixtures.DemoCandidateID, fifo, good)
		done <- outcome{res, r}
	}()
	select {
	case o := <-done:
		if o.res.Added != 1 || o.res.Failed != 1 || o.res.Photos[0].Error == nil || o.res.Photos[0].Error.Code != "file_not_regular" ||
			o.res.Photos[1].Status != "added" {
			t.Fatalf("media add with a FIFO: %+v", o.r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("media add hangs on a named pipe given as a photo")
	}

	csvDone := make(chan result, 1)
	go func() {
		csvDone <- run(t, env, "--db", db, "import", "csv", fifo, "--sale", fixtures.PublishedSaleID, "--preview")
	}()
	select {
	case r := <-csvDone:
		if r.code == cli.ExitOK || !strings.Contains(r.err+r.out, "not a regular file") {
			t.Fatalf("import csv of a FIFO: %+v", r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("import csv hangs on a named pipe given as the CSV file")
	}
}

// Attack: a file name is the agent's to choose (it writes files into the
// seller's photo folder). `media add` without --json prints each path in
// its table on the seller's terminal: a name carrying terminal control
// sequences (clear the screen, set the title, OSC 52 writes the clipboard)
// must not reach the terminal raw.
func TestAttack_MediaAddTableDoesNotPrintControlCharactersOfAFileName(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "m.db")
	name := "x\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\r\x1b[1A42 added.jpg"
	p := writeFile(t, dir, name, []byte("not a photo"))
	good := writeFile(t, dir, "chair.jpg", photoWithGPS(t, 32, 32, 10))
	r := run(t, env, "--db", db, "media", "add", "--candidate", fixtures.DemoCandidateID, p, good)
	if r.code == cli.ExitOK {
		t.Fatalf("a non-photo was added: %+v", r)
	}
	for _, c := range []string{"\x1b", "\x07", "\r"} {
		if strings.Contains(r.out, c) || strings.Contains(r.err, c) {
			t.Errorf("media add printed a control character %q of a file name: out %q err %q", c, r.out, r.err)
		}
	}
}
