package worlds

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed shipped/*.yaml
var shipped embed.FS

// Names lists the shipped worlds, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(shipped, "shipped")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// Source returns the bytes of a shipped world file.
func Source(name string) ([]byte, error) {
	b, err := shipped.ReadFile("shipped/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("worlds: no shipped world %q (shipped: %s)", name, strings.Join(Names(), ", "))
	}
	return b, nil
}

// Shipped loads a shipped world by name.
func Shipped(name string) (*World, error) {
	src, err := Source(name)
	if err != nil {
		return nil, err
	}
	return Load(name+".yaml", src)
}
