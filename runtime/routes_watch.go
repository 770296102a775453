package runtime

import "github.com/stile-run/stile/api"

// watch answers GET /watch: the filter of the watch, checked. The host
// upgrades the request to a WebSocket when the module answered 200, and
// sends it the changes of every later request (stile-changes) that the
// filter lets through; the module reads nothing for it.
func (t *Tenant) watch(raw string) (route, *api.Error) {
	q, e := query(raw)
	if e != nil {
		return nil, e
	}
	var f api.WatchFilter
	for k, v := range q {
		switch k {
		case "job":
			id, e := parseJobID(v)
			if e != nil {
				return nil, api.Refuse(api.CodeInvalidRequest, "job=%q is not a job id", v)
			}
			f.Job = fmtID(id)
		case "kind":
			if !api.ValidName(v) {
				return nil, api.Refuse(api.CodeInvalidRequest, "kind=%q is not a kind's name", v)
			}
			f.Kind = v
		default:
			return nil, api.Refuse(api.CodeInvalidRequest, "unknown query parameter %q: use job or kind", k)
		}
	}
	return func(int64) (result, error) {
		return result{status: statusOK, body: f.AppendJSON}, nil
	}, nil
}
