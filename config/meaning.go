package config

// Meaning is what a key does, in the words of the configuration reference
// (Reference for the worker-system keys, AppReference for the
// application's): Markdown, one or two sentences. It is "" for a name that
// is no key (an alias included).
func Meaning(key string) string {
	if m, ok := meanings[key]; ok {
		return m
	}
	for _, k := range appKeys {
		if k.Name == key {
			return k.Meaning
		}
	}
	return ""
}
