package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// One argument-size rule: ArgumentLimit (which the gate and the stdio
// guard refuse by) is the limit each tool's own decode holds, an unknown
// tool gets the default, and MaxToolArgumentBytes (the stdio frame and the
// gate's default budget) is the largest of them.
func TestArgumentLimit_OneRuleForDecodeGateAndFrame(t *testing.T) {
	if got := ArgumentLimit("trove_no_such_tool"); got != MaxArgumentBytes {
		t.Errorf("unknown tool: limit %d, want %d", got, MaxArgumentBytes)
	}
	largest := 0
	for i := range All() {
		tool := &All()[i]
		limit := ArgumentLimit(tool.Name)
		want := MaxArgumentBytes
		if tool.MaxArgumentBytes > 0 {
			want = tool.MaxArgumentBytes
		}
		if limit != want {
			t.Errorf("%s: ArgumentLimit %d, want %d", tool.Name, limit, want)
		}
		largest = max(largest, limit)
		// An object exactly one byte over the limit: decode refuses it on
		// its size, before anything else.
		pad := limit + 1 - len(`{"x":""}`)
		raw := json.RawMessage(`{"x":"` + strings.Repeat("a", pad) + `"}`)
		if _, err := tool.Decode(raw); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("larger than %d bytes", limit)) {
			t.Errorf("%s: %d bytes decoded with %v, want refused as larger than %d", tool.Name, len(raw), err, limit)
		}
	}
	if got := MaxToolArgumentBytes(); got != largest || largest <= MaxArgumentBytes {
		t.Errorf("MaxToolArgumentBytes %d, largest tool limit %d (default %d)", got, largest, MaxArgumentBytes)
	}
}
