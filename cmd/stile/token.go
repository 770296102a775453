package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/atomicfile"
	"github.com/stile-run/stile/token"
)

func runToken(args []string) error {
	if len(args) > 0 && args[0] == "revoke" {
		return revokeToken(args[1:])
	}
	if len(args) > 0 && args[0] == "secret" {
		if len(args) > 1 {
			return &exitError{exitUsage, errors.New("stile token secret takes no arguments")}
		}
		s, err := newSecret()
		if err != nil {
			return err
		}
		fmt.Println(s)
		return nil
	}
	if len(args) == 0 || args[0] != "mint" {
		return &exitError{exitUsage, errors.New("stile token mint --scope TENANT|PREFIX*|* --role ROLE --ttl DURATION [--id ID] | stile token revoke ID | stile token secret")}
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
	if *ttl <= 0 {
		return &exitError{exitUsage, fmt.Errorf("--ttl %s: a token needs a positive lifetime (720h, say)", *ttl)}
	}
	key, err := findSecret(*data, *secret)
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
	if err := atomicfile.Write(path, []byte(strings.Join(list, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Printf("revoked %s for stile dev (%s)\non Cloudflare, set the Worker's list and it applies at once:\n  echo %s | stile wrangler secret put STILE_REVOKED\n",
		id, path, strings.Join(list, ","))
	return nil
}

// newSecret is a strong deployment secret: 32 random bytes, base64url.
func newSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// findSecret is the secret that signs tokens: --secret, else $STILE_TOKEN,
// else stile dev's <data>/token. A weak one is refused.
func findSecret(data, flagValue string) (string, error) {
	secret, name := flagValue, "--secret"
	if secret == "" {
		secret, name = os.Getenv("STILE_TOKEN"), "STILE_TOKEN"
	}
	if secret == "" {
		path := filepath.Join(data, "token")
		b, err := os.ReadFile(path)
		if err != nil || strings.TrimSpace(string(b)) == "" {
			return "", fmt.Errorf("no secret: pass --secret, set STILE_TOKEN, or run `stile dev` here first (it keeps one in %s; --data names another directory)", path)
		}
		secret, name = strings.TrimSpace(string(b)), path
	}
	return secret, token.CheckSecret(name, secret)
}

// revokedFile reads the revoked list at path when it changed: it stats
// the path per request and reads it again when it is another file (each
// `stile token revoke` renames a new one over it), or its time or size
// changed. It fails closed: a list that cannot be read (or is gone) is an
// error, and the server then refuses every scoped token until it can.
func revokedFile(path string) func() (map[string]bool, error) {
	var mu sync.Mutex
	var seen os.FileInfo
	var ids map[string]bool
	return func() (map[string]bool, error) {
		mu.Lock()
		defer mu.Unlock()
		st, err := os.Stat(path)
		if err != nil {
			seen = nil
			return nil, fmt.Errorf("the revoked list: %w", err)
		}
		if seen != nil && os.SameFile(seen, st) && st.ModTime().Equal(seen.ModTime()) && st.Size() == seen.Size() {
			return ids, nil
		}
		f, err := os.Open(path)
		if err != nil {
			seen = nil
			return nil, fmt.Errorf("the revoked list: %w", err)
		}
		defer f.Close()
		// What was read is keyed by the file it was read from: a rewrite
		// in place while reading leaves another time or size behind.
		fst, err := f.Stat()
		if err != nil {
			seen = nil
			return nil, fmt.Errorf("the revoked list: %w", err)
		}
		b, err := io.ReadAll(f)
		if err != nil {
			seen = nil
			return nil, fmt.Errorf("the revoked list: %w", err)
		}
		ids, seen = token.ParseRevoked(string(b)), fst
		return ids, nil
	}
}

// ensureRevokedFile creates an empty revoked list at path if there is none,
// so that a list gone later is noticed (and fails closed) rather than read
// as "nothing revoked".
func ensureRevokedFile(path string) error {
	_, err := os.Stat(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, nil, 0o600)
}
