package redisstore

import (
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	for name, tc := range map[string]struct {
		url                        string
		addr, user, password, host string
		db                         int
		tls                        bool
	}{
		"plain":              {url: "redis://127.0.0.1:6380/2", addr: "127.0.0.1:6380", db: 2},
		"password only":      {url: "redis://:s3cret@redis:6379/0", addr: "redis:6379", password: "s3cret"},
		"ACL user":           {url: "redis://lens:s3cret@redis:6379", addr: "redis:6379", user: "lens", password: "s3cret"},
		"default port, host": {url: "redis:///", addr: "localhost:6379"},
		"TLS":                {url: "rediss://cache.example:6390/1", addr: "cache.example:6390", db: 1, tls: true, host: "cache.example"},
		"IPv6":               {url: "redis://[::1]:6379/0", addr: "[::1]:6379"},
		"IPv6, default port": {url: "rediss://[fe80::1]/0", addr: "[fe80::1]:6379", tls: true, host: "fe80::1"},
	} {
		ep, err := parseURL(tc.url)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if ep.addr != tc.addr || ep.username != tc.user || ep.password != tc.password || ep.db != tc.db || (ep.tls != nil) != tc.tls {
			t.Errorf("%s: %+v", name, ep)
		}
		if tc.tls && ep.tls.ServerName != tc.host {
			t.Errorf("%s: TLS server name %q, want %q", name, ep.tls.ServerName, tc.host)
		}
	}
	for name, bad := range map[string]string{
		"scheme":     "http://:s3cret@127.0.0.1/0",
		"database":   "redis://:s3cret@127.0.0.1/zero",
		"negative":   "redis://:s3cret@127.0.0.1/-1",
		"query":      "redis://:s3cret@127.0.0.1/0?dial_timeout=1s",
		"opaque":     "redis::s3cret@127.0.0.1",
		"bad host":   "redis://user:s3cret@[::1:bad/0",
		"bad escape": "redis://user:s3cret%zz@127.0.0.1/0",
		// an unescaped '?' ends the authority: url.Parse's cause names the password's start
		"unescaped ?": "redis://:s3c?ret@127.0.0.1:6379/0",
	} {
		_, err := parseURL(bad)
		if err == nil {
			t.Errorf("%s: %s accepted", name, bad)
		} else if strings.Contains(err.Error(), "s3c") { // any part of it
			t.Errorf("%s: the error repeats the password: %v", name, err)
		}
	}
}
