// Command haroute is a declarative, file-driven HAProxy router.
package main

import (
	"context"
	"os"

	"github.com/haroute/haroute/internal/cli"
)

func main() {
	os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
