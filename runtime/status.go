package runtime

// HTTP status codes of the tenant API's successes; a refusal's status is
// its code's (api.Code.Status). The guest does not import net/http: its
// package initialisation alone would add hundreds of kilobytes to every
// tenant module.
const (
	statusOK        = 200
	statusCreated   = 201
	statusAccepted  = 202
	statusNoContent = 204
)
