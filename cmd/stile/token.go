package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/token"
)

func runToken(args []string) error {
	if len(args) == 0 || args[0] != "mint" {
		return &exitError{exitUsage, errors.New("stile token mint --scope TENANT|PREFIX*|* --role ROLE --ttl DURATION [--id ID]")}
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
