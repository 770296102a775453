package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/token"
)

func runToken(args []string) error {
	if len(args) > 0 && args[0] == "revoke" {
		return revokeToken(args[1:])
	}
	if len(args) == 0 || args[0] != "mint" {
		return &exitError{exitUsage, errors.New("stile token mint --scope TENANT|PREFIX*|* --role ROLE --ttl DURATION [--id ID] | stile token revoke ID")}
	}
	fs := flag.NewFlagSet("token mint", flag.ContinueOnError)
	scope := fs.String("scope", "", "a tenant, a tenant prefix (acme-*) or * for every tenant")
	role := fs.String("role", "", "admin, operator, writer, worker or reader")
	ttl := fs.Duration("ttl", 24*time.Hour, "how long the token is valid")
	id := fs.String("id", "", "the token's id (default: the role and the time)")
	secret := fs.String("secret", "", "the deployment's secret (default: $STILE_TOKEN, else <data>/token of stile dev)")
	data := fs.String("data", ".stile", "the data directory of stile dev")
	if err := fs.Parse(args[1:]); err != nil {
		return &exitError{exitUsage, err}
	}
	key, err := findToken(*data, *secret, false)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	if *id == "" {
		*id = *role + "-" + time.Now().UTC().Format("20060102T150405")
	}
	tok, err := token.Mint(key, token.Claims{ID: *id, Scope: *scope, Role: api.Role(*role), Exp: time.Now().Add(*ttl).Unix()})
	if err != nil {
		return &exitError{exitUsage, err}
	}
	fmt.Println(tok)
	return nil
}

// revokeToken adds an id to stile dev's revoked list (<data>/revoked,
// read on every request), and says how to revoke it on Cloudflare.
func revokeToken(args []string) error {
	fs := flag.NewFlagSet("token revoke", flag.ContinueOnError)
	data := fs.String("data", ".stile", "the data directory of stile dev")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return &exitError{exitUsage, err}
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if len(pos) != 1 {
		return &exitError{exitUsage, errors.New("stile token revoke ID")}
	}
	id := pos[0]
	if !api.ValidName(id) {
		return &exitError{exitUsage, fmt.Errorf("token id %q is invalid: use %s", id, api.NameRule)}
	}
	path := filepath.Join(*data, "revoked")
	old, _ := os.ReadFile(path)
	ids := token.ParseRevoked(string(old))
	ids[id] = true
	list := slices.Sorted(maps.Keys(ids))
	if err := os.MkdirAll(*data, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(strings.Join(list, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Printf("revoked %s for stile dev (%s)\non Cloudflare, set the Worker's list and it applies at once:\n  echo %s | stile wrangler secret put STILE_REVOKED\n",
		id, path, strings.Join(list, ","))
	return nil
}

// revokedFile reads a revoked list when it changed (stat per request).
func revokedFile(path string) func() map[string]bool {
	var mu sync.Mutex
	var mod time.Time
	ids := map[string]bool{}
	return func() map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		st, err := os.Stat(path)
		if err != nil {
			return map[string]bool{}
		}
		if !st.ModTime().Equal(mod) {
			b, _ := os.ReadFile(path)
			ids, mod = token.ParseRevoked(string(b)), st.ModTime()
		}
		return ids
	}
}
