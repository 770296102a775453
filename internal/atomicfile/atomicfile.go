// Package atomicfile replaces a file whole: after a crash or a power loss
// a reader finds the old content or the new, never a part of either.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// Write replaces path with b, with mode perm: it writes a temporary file
// in path's directory, syncs it, renames it over path, and syncs the
// directory (which holds the rename) where the system can.
func Write(path string, b []byte, perm os.FileMode) error { return write(path, b, perm, true) }

// WriteUnsynced is Write without waiting for the disk: a crash of the
// process still leaves the old content or the new, but a power loss or an
// OS crash may leave the old one, or (where the system does not keep a
// rename after its data) an empty or torn file. It is for files whose
// loss costs work, not correctness, and whose reader rebuilds them.
func WriteUnsynced(path string, b []byte, perm os.FileMode) error {
	return write(path, b, perm, false)
}

func write(path string, b []byte, perm os.FileMode, sync bool) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // a no-op once renamed
	_, err = f.Write(b)
	err = errors.Join(err, f.Chmod(perm))
	if sync {
		err = errors.Join(err, f.Sync())
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
