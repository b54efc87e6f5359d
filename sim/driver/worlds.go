package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"

	"github.com/corpsim/corpsim/clock"
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
	// Limits left at their defaults and given as the defaults are one key.
	key := worldKey{file: name, hash: hex.EncodeToString(sum[:]), lim: lim.WithDefaults()}
	if w := loaded.get(key); w != nil {
		return w, nil
	}
	w, err := worlds.LoadWith(name, src, worlds.Options{Limits: lim, Parallel: workers.Parallel})
	if err != nil {
		return nil, err
	}
	return loaded.put(key, w, WorldWeight(w)), nil
}

// WorldWeight estimates the bytes of memory loaded world w takes: a
// quarter of a megabyte, 1 KB a member, 400 bytes a project task and 48
// bytes a day of its calendars' holidays, which a long horizon multiplies
// apart from the file (a weekly rotation lists every week a member is
// off). Measured: a shipped world takes 160–500 KB; a 1.5 MB file of
// 2,000 members and 20,000 tasks, 9 MB.
func WorldWeight(w *worlds.World) int {
	n := 256<<10 + 1024*len(w.Members)
	for i := range w.Projects {
		n += 400 * len(w.Projects[i].Tasks)
	}
	seen := map[*clock.Calendar]bool{}
	add := func(c *clock.Calendar) {
		if c != nil && !seen[c] {
			seen[c] = true
			n += 48 * len(c.Holidays)
		}
	}
	add(&w.Calendar)
	for i := range w.Teams {
		add(w.Teams[i].Calendar)
		for k := range w.Teams[i].Shifts {
			add(&w.Teams[i].Shifts[k].Calendar)
		}
	}
	for i := range w.Members {
		if r, ok := w.Members[i].Schedule.(clock.Rota); ok {
			for _, c := range r {
				add(c)
			}
		}
	}
	return n
}

// The worlds a process keeps loaded: the most recently used, at most
// keptWorlds of them and keptBytes of their estimated memory
// (WorldWeight) together, whatever files strangers send. A world heavier than keptBytes
// is loaded every time.
var (
	keptWorlds = 16
	keptBytes  = 256 << 20 // of WorldWeight
	loaded     = &worldCache{}
)

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
	size  int // WorldWeight
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

// put keeps w, of weight size, under key, and returns the world kept
// under key: w, or the one another caller loaded meanwhile.
func (c *worldCache) put(key worldKey, w *worlds.World, size int) *worlds.World {
	if size > keptBytes {
		return w
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.kept {
		if k.key == key {
			return k.world // loaded meanwhile by another caller: share it
		}
	}
	c.kept = append(c.kept, keptWorld{key: key, world: w, size: size})
	c.bytes += size
	for len(c.kept) > keptWorlds || c.bytes > keptBytes {
		c.bytes -= c.kept[0].size
		c.kept = slices.Delete(c.kept, 0, 1)
	}
	return w
}
