package runtime

// TimeoutOverride exposes, to tests, the time limit an aggregate sets
// for reaction name's events of its streams (0: none).
func (a *App) TimeoutOverride(name, aggregate string) int64 {
	return a.reactionBy[name].h.Overrides(aggregate)
}
