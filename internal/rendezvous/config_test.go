package rendezvous

import (
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigFromEnv(t *testing.T) {
	full := func(over map[string]string) map[string]string {
		m := map[string]string{
			EnvRank: "2", EnvWorldSize: "4", EnvLocalRank: "1",
			EnvMasterAddr: "node0", EnvMasterPort: "29500", EnvToken: testToken,
		}
		for k, v := range over {
			if v == "-" {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	good := []struct {
		name string
		env  map[string]string
		want Config
	}{
		{"torchrun", full(nil), Config{Rank: 2, WorldSize: 4, LocalRank: 1, Addr: "node0:29500", Token: testToken}},
		{"IPv4", full(map[string]string{EnvMasterAddr: "10.0.0.7"}), Config{Rank: 2, WorldSize: 4, LocalRank: 1, Addr: "10.0.0.7:29500", Token: testToken}},
		{"IPv6", full(map[string]string{EnvMasterAddr: "::1"}), Config{Rank: 2, WorldSize: 4, LocalRank: 1, Addr: "[::1]:29500", Token: testToken}},
		{"IPv6 bracketed", full(map[string]string{EnvMasterAddr: "[fe80::1]"}), Config{Rank: 2, WorldSize: 4, LocalRank: 1, Addr: "[fe80::1]:29500", Token: testToken}},
		{"no LOCAL_RANK", full(map[string]string{EnvLocalRank: "-"}), Config{Rank: 2, WorldSize: 4, Addr: "node0:29500", Token: testToken}},
		{"alone", map[string]string{EnvRank: "0", EnvWorldSize: "1"}, Config{WorldSize: 1}},
	}
	for _, c := range good {
		got, err := ConfigFromEnv(envOf(c.env))
		if err != nil || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	bad := []struct {
		env     map[string]string
		mention string // the variable the error must name
	}{
		{full(map[string]string{EnvRank: "-"}), EnvRank},
		{full(map[string]string{EnvRank: "two"}), EnvRank},
		{full(map[string]string{EnvRank: "4"}), EnvRank},
		{full(map[string]string{EnvRank: "-1"}), EnvRank},
		{full(map[string]string{EnvWorldSize: "-"}), EnvWorldSize},
		{full(map[string]string{EnvWorldSize: "0"}), EnvWorldSize},
		{full(map[string]string{EnvWorldSize: "1e3"}), EnvWorldSize},
		{full(map[string]string{EnvWorldSize: "99999999"}), EnvWorldSize},
		{full(map[string]string{EnvLocalRank: "x"}), EnvLocalRank},
		{full(map[string]string{EnvLocalRank: "-2"}), EnvLocalRank},
		{full(map[string]string{EnvLocalRank: "4"}), EnvLocalRank},
		{full(map[string]string{EnvMasterAddr: "-"}), EnvMasterAddr},
		{full(map[string]string{EnvMasterAddr: "node0:29500"}), EnvMasterAddr},
		{full(map[string]string{EnvMasterAddr: "a b"}), EnvMasterAddr},
		{full(map[string]string{EnvMasterPort: "-"}), EnvMasterPort},
		{full(map[string]string{EnvMasterPort: "0"}), EnvMasterPort},
		{full(map[string]string{EnvMasterPort: "65536"}), EnvMasterPort},
		{full(map[string]string{EnvMasterPort: "http"}), EnvMasterPort},
		{full(map[string]string{EnvToken: "-"}), EnvToken},
		{full(map[string]string{EnvToken: "short"}), EnvToken},
		{full(map[string]string{EnvToken: strings.Repeat("t", MaxTokenLen+1)}), EnvToken},
		// Set, the variables are checked even in a world of 1.
		{map[string]string{EnvRank: "0", EnvWorldSize: "1", EnvMasterPort: "x", EnvMasterAddr: "h"}, EnvMasterPort},
	}
	for _, c := range bad {
		_, err := ConfigFromEnv(envOf(c.env))
		if err == nil || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%v: got %v, want an error naming %s", c.env, err, c.mention)
		}
	}
}
