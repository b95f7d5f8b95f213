// Package egress owns the operator's policy for endpoints users give (endpoint_url of model
// discovery, simulation tasks, and every endpoint field the evaluation side adds): allowed and
// denied CIDRs and host names (LENS_ENDPOINT_ALLOW, LENS_ENDPOINT_DENY), with link-local and
// cloud-metadata addresses denied by default. The policy is checked on the URL, again on every
// address DNS resolves it to (in the dialer, so a rebinding answer cannot slip through), and on
// every redirect. Its errors say only "not allowed" or "unreachable", so the API cannot be used
// to map which ports are open or what a host answers.
//
// It imports the standard library only.
package egress
