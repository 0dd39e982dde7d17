package config

import (
	"errors"
	"strings"
	"testing"
)

// A TROVESNAP_CLIENT_TOKEN that is set must hold a credential; only an unset
// one means "no credential". The error names the variable, never the value.
func TestHardening_CheckClientTokenSetMeansAToken(t *testing.T) {
	good := "tsk_" + strings.Repeat("a", 52)
	for _, c := range []struct {
		name  string
		value string
		set   bool
		ok    bool
	}{
		{"unset", "", false, true},
		{"empty", "", true, false},
		{"blank", " \t\n", true, false},
		{"unexpanded reference", "${TROVESNAP_CLIENT_TOKEN}", true, false},
		{"malformed", "tsk_short", true, false},
		{"token", good, true, true},
		{"token with spaces", "  " + good + "\n", true, true},
		{"public", "public", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckClientToken(func(k string) (string, bool) {
				if k != EnvClientToken {
					return "", false
				}
				return c.value, c.set
			})
			if c.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), EnvClientToken) {
				t.Fatalf("err = %v; want ErrInvalid naming %s", err, EnvClientToken)
			}
			if v := strings.TrimSpace(c.value); v != "" && strings.Contains(err.Error(), v) {
				t.Errorf("error echoes the value: %v", err)
			}
		})
	}
}
