// Package directory is the local tenant directory (a file in the data
// directory): the tenants of a deployment, which a tenant's host notes on
// its first use and when it goes from idle to having ready work (or
// back), as the module says in its stile-directory header; never on every
// request. On Cloudflare the same directory is a Durable Object of its
// own (the Directory class of host/workerd/js/worker.mjs). Executors that
// are given no tenants long-poll it for tenants that became ready.
package directory
