// Command trovesnap is the governed MCP server of TroveSnap, its approval
// terminal and its operator CLI.
package main

import (
	"os"

	"github.com/triunalabs/trovesnap/internal/cli"
)

func main() { os.Exit(int(cli.Main())) }
