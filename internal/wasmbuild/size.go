package wasmbuild

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Cloudflare's limits on a Worker's script, compressed (checked
// 2026-12): the free plan's and the paid plan's. "MB" is read as 10^6
// bytes, the stricter reading. `stile build` compares the script it
// writes (the tenant module, the glue and, with handlers, the edge
// executor) with them.
const (
	FreeScriptLimit = 3_000_000
	PaidScriptLimit = 10_000_000
)

// GzipSize is the size of b compressed as Cloudflare measures a script:
// gzip, best compression.
func GzipSize(b []byte) int {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return buf.Len()
}

// PackageSize is the code one Go package contributes to a module.
type PackageSize struct {
	Package string
	Bytes   int // function bodies, uncompressed
}

// PackageSizes reads a Wasm module built with its name section (BuildWasm,
// not BuildDeploy) and sums the size of its function bodies by Go package,
// largest first; packages are the import paths the module was built from
// (Deps), whose names the linker wrote with every character but letters,
// digits, '.' and '_' made '_'. `go tool nm` does not read Wasm; the name
// section says which function each body is.
func PackageSizes(wasm []byte, packages []string) ([]PackageSize, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return nil, errors.New("package sizes: not a Wasm module")
	}
	r := &reader{b: wasm, off: 8}
	var imported int
	var bodies []int
	names := map[int]string{}
	for r.off < len(r.b) {
		id := r.byte()
		size := int(r.uvarint())
		end := r.off + size
		if r.err != nil || end > len(r.b) {
			return nil, errors.New("package sizes: a section runs past the module's end")
		}
		switch id {
		case 2: // imports: function imports come first in the index space
			s := &reader{b: r.b[:end], off: r.off}
			for n := s.uvarint(); n > 0 && s.err == nil; n-- {
				s.name()
				s.name()
				switch kind := s.byte(); kind {
				case 0:
					s.uvarint()
					imported++
				case 1: // table: type, limits
					s.byte()
					s.limits()
				case 2:
					s.limits()
				case 3: // global: type, mutability
					s.byte()
					s.byte()
				default:
					return nil, fmt.Errorf("package sizes: import kind %d", kind)
				}
			}
		case 10: // code
			s := &reader{b: r.b[:end], off: r.off}
			for n := s.uvarint(); n > 0 && s.err == nil; n-- {
				body := int(s.uvarint())
				bodies = append(bodies, body)
				s.off += body
			}
		case 0:
			s := &reader{b: r.b[:end], off: r.off}
			if s.name() == "name" {
				for s.off < end && s.err == nil {
					sub := s.byte()
					subEnd := s.off + int(s.uvarint())
					if sub == 1 { // function names
						for n := s.uvarint(); n > 0 && s.err == nil; n-- {
							idx := int(s.uvarint())
							names[idx] = s.name()
						}
					}
					s.off = subEnd
				}
			}
		}
		r.off = end
	}
	if len(names) == 0 {
		return nil, errors.New("package sizes: the module has no name section (build it without -ldflags=-s)")
	}
	mangled := make([][2]string, len(packages))
	for i, p := range packages {
		mangled[i] = [2]string{mangle(p) + ".", p}
	}
	// Longest first, so a package wins over its parent directory's.
	slices.SortFunc(mangled, func(a, b [2]string) int { return len(b[0]) - len(a[0]) })
	byPkg := map[string]int{}
	for i, size := range bodies {
		byPkg[packageOf(names[imported+i], mangled)] += size
	}
	out := make([]PackageSize, 0, len(byPkg))
	for p, n := range byPkg {
		out = append(out, PackageSize{Package: p, Bytes: n})
	}
	slices.SortFunc(out, func(a, b PackageSize) int {
		if a.Bytes != b.Bytes {
			return b.Bytes - a.Bytes
		}
		return strings.Compare(a.Package, b.Package)
	})
	return out, nil
}

// packageOf is the Go package of a function's (mangled) symbol name.
func packageOf(sym string, mangled [][2]string) string {
	for _, m := range mangled {
		if strings.HasPrefix(sym, m[0]) {
			return m[1]
		}
	}
	return "(type equality, wrappers and the rest)"
}

func mangle(p string) string {
	b := []byte(p)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Deps lists the packages pkg's module is built from, for PackageSizes.
func Deps(ctx context.Context, dir, pkg string) ([]string, error) {
	if pkg == "" {
		pkg = DefaultPackage
	}
	cmd := exec.CommandContext(ctx, GoTool(), "list", "-deps", "-f", "{{.ImportPath}}", pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("list the packages of %s: %w", pkg, err)
	}
	return strings.Fields(string(out)), nil
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) byte() byte {
	if r.off >= len(r.b) {
		r.err = errors.New("short")
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *reader) uvarint() uint64 {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		c := r.byte()
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	return v
}

func (r *reader) name() string {
	n := int(r.uvarint())
	if r.off+n > len(r.b) {
		r.err = errors.New("short")
		return ""
	}
	r.off += n
	return string(r.b[r.off-n : r.off])
}

func (r *reader) limits() {
	if r.byte() == 0 {
		r.uvarint()
	} else {
		r.uvarint()
		r.uvarint()
	}
}
