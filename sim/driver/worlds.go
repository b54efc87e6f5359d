package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"

	"github.com/corpsim/corpsim/sim/workers"
	"github.com/corpsim/corpsim/worlds"
)

// LoadWorld loads the world file name of bytes src within lim, or returns
// the one this process loaded already from the same name and bytes within
// the same limits. A loaded World is read-only (no engine changes it), so
// sessions share it: a server asked for thousands of sessions of one world,
// or a rollout farm forking one session thousands of times, reads its file
// once instead of at every create, reset or fork (26 ms for portfolio, 1.6
// s of CPU for a 2,000-member world). A large file's parts are decoded on
// every processor. Errors are not kept: a file that does not load is read
// again when asked again.
func LoadWorld(name string, src []byte, lim worlds.Limits) (*worlds.World, error) {
	sum := sha256.Sum256(src)
	key := worldKey{file: name, hash: hex.EncodeToString(sum[:]), lim: lim}
	if w := loaded.get(key); w != nil {
		return w, nil
	}
	w, err := worlds.LoadWith(name, src, worlds.Options{Limits: lim, Parallel: workers.Parallel})
	if err != nil {
		return nil, err
	}
	loaded.put(key, w, len(src))
	return w, nil
}

// The worlds a process keeps loaded: the most recently used, at most
// keptWorlds of them and keptBytes of their files together. A loaded
// world takes about 6 to 10 times its file's bytes in memory (a 1.5 MB
// file of 2,000 members and 20,000 tasks: 9 MB), and a small one about
// 0.5 MB, so what is kept stays under about 160 MB whatever files
// strangers send. A file larger than keptBytes is loaded every time.
const (
	keptWorlds = 16
	keptBytes  = 16 << 20
)

var loaded = &worldCache{}

type worldKey struct {
	file, hash string // hash: hex SHA-256 of the file's bytes (World.Hash)
	lim        worlds.Limits
}

// worldCache is the worlds kept, least recently used first.
type worldCache struct {
	mu    sync.Mutex
	kept  []keptWorld
	bytes int
}

type keptWorld struct {
	key   worldKey
	world *worlds.World
	size  int
}

func (c *worldCache) get(key worldKey) *worlds.World {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range c.kept {
		if k.key == key {
			copy(c.kept[i:], c.kept[i+1:]) // now the most recent
			c.kept[len(c.kept)-1] = k
			return k.world
		}
	}
	return nil
}

func (c *worldCache) put(key worldKey, w *worlds.World, size int) {
	if size > keptBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.kept {
		if k.key == key {
			return // loaded meanwhile by another caller
		}
	}
	c.kept = append(c.kept, keptWorld{key: key, world: w, size: size})
	c.bytes += size
	for len(c.kept) > keptWorlds || c.bytes > keptBytes {
		c.bytes -= c.kept[0].size
		c.kept = slices.Delete(c.kept, 0, 1)
	}
}
