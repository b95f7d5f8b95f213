package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lensfn/lensfn/deploy/local"
	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/state"
)

const tokenUsage = `usage:
  lensfn-local token create --data-dir DIR --scopes simulation:read,simulation:run [--name NAME]
  lensfn-local token list   --data-dir DIR
  lensfn-local token revoke --data-dir DIR ID
--redis-url URL [--store-prefix P] replaces --data-dir to reach another Redis (a cluster's,
through kubectl port-forward). Scopes: ` + "simulation:read, simulation:run, evaluate:run:read, evaluate:run:write, inventory:admin\n"

// tokenCommand creates, lists and revokes API tokens in the Redis of a running stack (found
// through its data dir) or any Redis given by URL. create prints the token, and only the token,
// on stdout; it is shown once and stored only as a hash.
func tokenCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, tokenUsage)
		return 2
	}
	verb := args[0]
	fs := flag.NewFlagSet("token "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	home, _ := os.UserHomeDir()
	dataDir := os.Getenv("LENS_DATA_DIR")
	if dataDir == "" {
		dataDir = filepath.Join(home, ".local", "share", "lensfn")
	}
	fs.StringVar(&dataDir, "data-dir", dataDir, "the stack's data directory (LENS_DATA_DIR)")
	redisURL := fs.String("redis-url", "", "a Redis to use instead of the stack's")
	prefix := fs.String("store-prefix", "", "the store key prefix (LENS_STORE_PREFIX)")
	scopes := fs.String("scopes", "", "comma-separated scopes (create)")
	name := fs.String("name", "", "what the token is for (create)")
	// Flags may come before or after the token id.
	var positional []string
	for rest := args[1:]; ; {
		if err := fs.Parse(rest); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional, rest = append(positional, fs.Arg(0)), fs.Args()[1:]
	}
	fail := func(err error) int { fmt.Fprintf(stderr, "lensfn-local token %s: %v\n", verb, err); return 1 }
	if *redisURL == "" {
		f, err := local.ReadStackFile(dataDir)
		if err != nil {
			return fail(err)
		}
		*redisURL = f.RedisURL
		if *prefix == "" {
			*prefix = f.StorePrefix
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tokens, closeStore, err := local.OpenTokens(ctx, *redisURL, *prefix)
	if err != nil {
		return fail(fmt.Errorf("%w (is the stack running?)", err))
	}
	defer closeStore()
	switch verb {
	case "create":
		list, err := auth.ParseScopes(*scopes)
		if err != nil {
			return fail(err)
		}
		secret, tok, err := tokens.Create(ctx, *name, list)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintln(stdout, secret)
		fmt.Fprintf(stderr, "token %s created with scopes %s; it is shown only now\n", tok.ID, auth.JoinScopes(tok.Scopes))
	case "list":
		list, err := tokens.List(ctx)
		if err != nil {
			return fail(err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSCOPES\tCREATED")
		for _, t := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, t.Name, auth.JoinScopes(t.Scopes), t.CreatedAt.Format(time.RFC3339))
		}
		_ = tw.Flush()
	case "revoke":
		if len(positional) != 1 {
			fmt.Fprint(stderr, tokenUsage)
			return 2
		}
		id := strings.TrimSpace(positional[0])
		if err := tokens.Revoke(ctx, id); errors.Is(err, state.ErrNotFound) {
			return fail(fmt.Errorf("no token %q (token list shows them)", id))
		} else if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stderr, "token %s revoked\n", id)
	default:
		fmt.Fprint(stderr, tokenUsage)
		return 2
	}
	return 0
}
