package auth

import "context"

type recheckKey struct{}

// WithRecheck returns ctx carrying recheck, which says whether the credential a request was
// authenticated with still holds. runtime/fn sets it on every authenticated request, so a
// long-lived answer (an event stream) can end once its token is revoked.
func WithRecheck(ctx context.Context, recheck func(context.Context) error) context.Context {
	return context.WithValue(ctx, recheckKey{}, recheck)
}

// Recheck asks again whether the request's credential holds: ErrInvalid once its token is
// revoked (or no longer carries the route's scope), a store error as it is, nil for a request
// that was not authenticated.
func Recheck(ctx context.Context) error {
	if recheck, ok := ctx.Value(recheckKey{}).(func(context.Context) error); ok {
		return recheck(ctx)
	}
	return nil
}
