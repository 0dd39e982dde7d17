package cli

import (
	"bytes"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/creack/pty"
)

// echoOn reads the terminal's ECHO flag (Linux termios).
func echoOn(t *testing.T, tty *os.File) bool {
	t.Helper()
	var tio syscall.Termios
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&tio))); errno != 0 {
		t.Fatalf("TCGETS: %v", errno)
	}
	return tio.Lflag&syscall.ECHO != 0
}

// On a terminal the password is read without echo, after a prompt on
// stderr.
func TestLogin_ReadsThePasswordFromATerminalWithoutEcho(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	echoed := make(chan []byte, 1)
	go func() {
		var all bytes.Buffer
		buf := make([]byte, 256)
		_ = ptmx.SetReadDeadline(time.Now().Add(3 * time.Second))
		for {
			n, err := ptmx.Read(buf)
			all.Write(buf[:n])
			if err != nil {
				echoed <- all.Bytes()
				return
			}
		}
	}()
	var prompt bytes.Buffer
	type answer struct {
		pw  string
		err error
	}
	got := make(chan answer, 1)
	go func() {
		pw, err := readPassword(IOStreams{In: tty, Out: tty, ErrOut: &prompt}, &LoginOptions{Email: "paul@heritage.test"})
		got <- answer{pw, err}
	}()
	// Type only once ReadPassword has switched echo off: before that, the
	// terminal itself would echo what is typed.
	for deadline := time.Now().Add(5 * time.Second); echoOn(t, tty); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the terminal's echo was never switched off")
		}
	}
	if _, err := io.WriteString(ptmx, "typed-secret\n"); err != nil {
		t.Fatal(err)
	}
	a := <-got
	if a.err != nil || a.pw != "typed-secret" {
		t.Fatalf("terminal password = %q, %v", a.pw, a.err)
	}
	if !strings.Contains(prompt.String(), "Password for paul@heritage.test: ") {
		t.Fatalf("prompt = %q", prompt.String())
	}
	_ = tty.Close()
	if out := <-echoed; bytes.Contains(out, []byte("typed-secret")) {
		t.Fatalf("the password was echoed: %q", out)
	}
}
