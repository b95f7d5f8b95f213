package fn_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/state/redisstore/redistest"
)

// A function reaches a rediss:// store whose CA is private through REDIS_CA_FILE, with the
// password from REDIS_PASSWORD (the Knative Secret); without the CA file it refuses to start,
// saying why and without the password.
func TestAFunctionUsesATLSStoreWithAPrivateCA(t *testing.T) {
	const password = "fn-tls-pa55word"
	files := redistest.NewTLSFiles(t)
	server := redistest.StartServer(t, redistest.ServerOptions{Password: password, TLS: &files})
	environment := map[string]string{"HOME": t.TempDir(), "LENS_AUTH": "off", "REDIS_URL": "rediss://" + server.Addr() + "/0",
		"REDIS_PASSWORD": password, "LENS_STORE_PREFIX": "lens:{fn-tls}:"}
	build := func(ctx context.Context, d fn.Deps) (*fn.Function, error) {
		if _, err := d.Store.Incr(ctx, "starts"); err != nil {
			return nil, err
		}
		return &fn.Function{}, nil
	}

	cfg, err := fn.LoadConfig(env(environment))
	if err != nil {
		t.Fatal(err)
	}
	_, err = fn.NewServer(context.Background(), cfg, "tls", build)
	if err == nil || !strings.Contains(err.Error(), "is not trusted") || strings.Contains(err.Error(), password) {
		t.Errorf("without REDIS_CA_FILE: %v, want a refusal saying the certificate is not trusted, without the password", err)
	}

	environment["REDIS_CA_FILE"] = files.CA
	if cfg, err = fn.LoadConfig(env(environment)); err != nil {
		t.Fatal(err)
	}
	s, err := fn.NewServer(context.Background(), cfg, "tls", build)
	if err != nil {
		t.Fatalf("with REDIS_CA_FILE: %v", err)
	}
	_ = s.Close(context.Background())
}
