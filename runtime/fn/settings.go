package fn

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// ReadSettings fills dst, a pointer to a function's own settings struct, from the environment
// the function started with: the one reader of function settings, as Knative's sharedmain reads
// its settings with envconfig. Each field names its variable in an `env` tag and may give a
// default in `envDefault` (github.com/caarlos0/env). A value that does not parse fails with an
// error naming the variable; a negative duration is refused the same way. When dst has a
// Validate() error method it runs last, for ranges and normalising (trimming, URL checks), and
// its errors name the variable too. A function calls it once, in its Builder, so a bad value
// stops the function at start.
func (c Config) ReadSettings(dst any) error {
	var environ map[string]string
	if c.environ != nil {
		environ = c.environ.vars
	}
	return readEnv(environ, dst)
}

// Validator is what a settings struct implements to check its values after they are read.
type Validator interface{ Validate() error }

func readEnv(environ map[string]string, dst any) error {
	if t := reflect.TypeOf(dst); t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("fn: settings must be read into a pointer to a struct, not %T", dst)
	}
	if environ == nil {
		environ = map[string]string{}
	}
	if err := env.ParseWithOptions(dst, env.Options{Environment: environ}); err != nil {
		return settingsError(environ, dst, err)
	}
	v := reflect.ValueOf(dst).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Type == reflect.TypeFor[time.Duration]() && v.Field(i).Int() < 0 {
			key := envKey(f)
			return fmt.Errorf("%s=%q is not a duration such as 2s", key, environ[key])
		}
	}
	if val, ok := dst.(Validator); ok {
		return val.Validate()
	}
	return nil
}

// settingsError rewrites the reader's errors, which name Go fields, so that they name the
// environment variable and the value it holds.
func settingsError(environ map[string]string, dst any, err error) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	t := reflect.TypeOf(dst).Elem()
	var out []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if !errors.As(e, &pe) {
			out = append(out, e)
			continue
		}
		f, ok := t.FieldByName(pe.Name)
		if !ok {
			out = append(out, e)
			continue
		}
		key := envKey(f)
		raw := environ[key]
		switch f.Type {
		case reflect.TypeFor[time.Duration]():
			out = append(out, fmt.Errorf("%s=%q is not a duration such as 2s", key, raw))
		case reflect.TypeFor[bool]():
			out = append(out, fmt.Errorf("%s %q is not true or false", key, raw))
		default:
			switch f.Type.Kind() {
			case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
				out = append(out, fmt.Errorf("%s=%q is not an integer", key, raw))
			default:
				out = append(out, fmt.Errorf("%s=%q: %v", key, raw, pe.Err))
			}
		}
	}
	return errors.Join(out...)
}

func envKey(f reflect.StructField) string {
	key, _, _ := strings.Cut(f.Tag.Get("env"), ",")
	return key
}
