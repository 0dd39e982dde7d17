package live_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/zalando/go-keyring"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/contract"
)

// Without a credential store `trovesnap approve` signs in itself, for its
// own life: it asks for the email and then the password (without echo) on
// the terminal, then the approval passphrase, and runs as that seller.
// Nothing it signed in with is written anywhere, and the next command
// signs in again.
func TestCLI_LiveApproveSignsInPerSessionWithoutACredentialStore(t *testing.T) {
	keyring.MockInitWithError(errors.New("dbus: couldn't determine address of session bus"))
	t.Cleanup(keyring.MockInit)
	env := seeded(t)
	env.Endpoint.AddAuthUser("paul@heritage.test", "paul-pass-1", fixtures.DemoUserID)
	c := newSellerCLI(t, env)
	c.setPassphrase(t)

	lg := newLiveGate(t, env)
	res := call(t, connect(t, lg.g, contract.CredOwner), "trove_propose_candidate_promotion", map[string]any{
		"candidate_id": fixtures.DemoCandidateID, "expected_version": 3, "idempotency_key": "cli-live-approve-memory-1"})
	pid, _ := res["data"].(map[string]any)["proposal_id"].(string)
	if pid == "" {
		t.Fatalf("proposal = %v", res)
	}

	for run := range 2 { // each run signs in on its own
		signIns := env.Endpoint.AuthRequests()["POST /auth/v1/token"]
		term := startInProcessTerminal(t, c, "approve")
		term.waitFor(t, "No credential store keeps your session here (no OS credential store answered: dbus: couldn't determine")
		term.waitFor(t, "Email: ")
		term.press(t, "paul@heritage.test\r")
		term.waitFor(t, "Password for paul@heritage.test: ")
		for deadline := time.Now().Add(5 * time.Second); ttyEcho(t, term); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the terminal's echo was never switched off for the password")
			}
		}
		term.press(t, "paul-pass-1\r")
		term.waitFor(t, "approve: approval passphrase: ")
		term.press(t, livePass+"\r")
		term.waitFor(t, pid)
		term.press(t, "q")
		if code := term.wait(t); code != cli.ExitOK {
			t.Fatalf("run %d: approve exited %d: %s", run, code, term.errOut.String())
		}
		if n := env.Endpoint.AuthRequests()["POST /auth/v1/token"]; n != signIns+1 {
			t.Fatalf("run %d: token requests %d → %d: want one sign-in", run, signIns, n)
		}
		if strings.Contains(term.screen(), "paul-pass-1") {
			t.Fatalf("run %d: the password was echoed:\n%s", run, term.screen())
		}
		noSessionFiles(t, env, c.dir)
	}
}

// ttyEcho reads the terminal's ECHO flag (Linux termios).
func ttyEcho(t *testing.T, term *inProcessTerminal) bool {
	t.Helper()
	var tio syscall.Termios
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, term.tty.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&tio))); errno != 0 {
		t.Fatalf("TCGETS: %v", errno)
	}
	return tio.Lflag&syscall.ECHO != 0
}
