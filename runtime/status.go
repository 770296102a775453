package runtime

// HTTP status codes the tenant API answers with. The guest does not import
// net/http: its package initialisation alone would add hundreds of
// kilobytes to every tenant module.
const (
	statusOK               = 200
	statusCreated          = 201
	statusAccepted         = 202
	statusNoContent        = 204
	statusBadRequest       = 400
	statusNotFound         = 404
	statusMethodNotAllowed = 405
	statusConflict         = 409
	statusTooLarge         = 413
	statusUnprocessable    = 422
	statusInternal         = 500
)
