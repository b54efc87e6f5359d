package driver

// KeepWorlds bounds the worlds LoadWorld keeps to n and bytes of weight,
// and forgets those kept, until the returned func restores the bounds.
func KeepWorlds(n, bytes int) (restore func()) {
	oldN, oldBytes := keptWorlds, keptBytes
	keptWorlds, keptBytes, loaded = n, bytes, &worldCache{}
	return func() { keptWorlds, keptBytes, loaded = oldN, oldBytes, &worldCache{} }
}
