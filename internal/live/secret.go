package live

import "log/slog"

// secret holds the server key. Every way of printing it prints a
// placeholder, so a stray %v, a JSON encoding or a slog attribute of an
// Options or a Backend cannot leak it.
type secret string

const redacted = "[redacted]"

func (secret) String() string               { return redacted }
func (secret) GoString() string             { return redacted }
func (secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
func (secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
func (secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (s secret) reveal() string             { return string(s) }
