//go:build !linux

package pebblelog

import "github.com/cockroachdb/pebble/v2/vfs"

// readLockFS returns the file system a read-only Open gives Pebble: f
// itself, whose lock is Pebble's exclusive one (a read-only folder then
// cannot be opened; only Linux has the shared lock of lock_linux.go).
func readLockFS(f vfs.FS) vfs.FS { return f }
