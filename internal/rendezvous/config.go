package rendezvous

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
)

// The environment variables ConfigFromEnv reads: torchrun's names, so that
// a job started by torchrun, Slurm scripts written for it or Kubernetes'
// PyTorchJob works unchanged, plus the job token.
const (
	EnvRank       = "RANK"
	EnvWorldSize  = "WORLD_SIZE"
	EnvLocalRank  = "LOCAL_RANK"
	EnvMasterAddr = "MASTER_ADDR"
	EnvMasterPort = "MASTER_PORT"
	EnvToken      = "PURECUDA_JOB_TOKEN"
)

// Limits of a Config.
const (
	// MaxWorldSize is the largest WorldSize accepted: rank 0 holds one
	// connection for each other rank until all of them have arrived.
	MaxWorldSize = 1 << 16
	// MinTokenLen and MaxTokenLen bound the job token's length in bytes.
	// A token is a secret shared by every rank of a job (32 random hex
	// digits, as Launch makes, is a good one); a short one is refused
	// rather than guessed.
	MinTokenLen = 16
	MaxTokenLen = 256
)

// Config says who a process is in a job and where it meets the others.
type Config struct {
	// Rank is this process' rank, 0 ≤ Rank < WorldSize. Rank 0 serves
	// the payload; the others fetch it.
	Rank int
	// WorldSize is the number of ranks of the job, at least 1.
	WorldSize int
	// LocalRank is this process' rank among the ranks of its host (which
	// GPU it should take). Exchange does not use it.
	LocalRank int
	// Addr is rank 0's address, host:port (MASTER_ADDR:MASTER_PORT);
	// an IPv6 host is bracketed, as in "[::1]:29500". Rank 0 listens on
	// this address only, the others connect to it. Unused when
	// WorldSize is 1.
	Addr string
	// Token is the job's shared secret (PURECUDA_JOB_TOKEN): a rank
	// proves to rank 0, and rank 0 to it, that it knows the token,
	// without sending it. Needed when WorldSize is more than 1.
	Token string
	// Log receives rank 0's reports of refused connections (a wrong
	// token, malformed bytes, a duplicate rank). Nil means
	// slog.Default().
	Log *slog.Logger
}

// ConfigFromEnv reads a Config from the environment through getenv
// (os.Getenv, or a map's lookup in a test): RANK and WORLD_SIZE always;
// MASTER_ADDR, MASTER_PORT and PURECUDA_JOB_TOKEN when WORLD_SIZE is more
// than 1 (read and checked whenever they are set); LOCAL_RANK when set,
// else 0 (PyTorchJob sets none for a process of its own pod). The error
// names the variable that is missing, malformed or out of range.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var cfg Config
	world, err := envInt(getenv, EnvWorldSize, true)
	if err != nil {
		return Config{}, err
	}
	if world < 1 || world > MaxWorldSize {
		return Config{}, fmt.Errorf("rendezvous: %s=%d is out of range: it must be 1 to %d", EnvWorldSize, world, MaxWorldSize)
	}
	cfg.WorldSize = world
	rank, err := envInt(getenv, EnvRank, true)
	if err != nil {
		return Config{}, err
	}
	if rank < 0 || rank >= world {
		return Config{}, fmt.Errorf("%w: %s=%d with %s=%d: a rank must be 0 to %d", ErrRankRange, EnvRank, rank, EnvWorldSize, world, world-1)
	}
	cfg.Rank = rank
	if getenv(EnvLocalRank) != "" {
		local, err := envInt(getenv, EnvLocalRank, false)
		if err != nil {
			return Config{}, err
		}
		if local < 0 || local >= world {
			return Config{}, fmt.Errorf("rendezvous: %s=%d is out of range: it must be 0 to %d", EnvLocalRank, local, world-1)
		}
		cfg.LocalRank = local
	}
	need := world > 1
	host := getenv(EnvMasterAddr)
	port := getenv(EnvMasterPort)
	if host != "" || port != "" || need {
		if host == "" {
			return Config{}, fmt.Errorf("rendezvous: %s is not set: rank 0's host name or address is needed when %s=%d", EnvMasterAddr, EnvWorldSize, world)
		}
		h := host
		if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
			h = h[1 : len(h)-1]
		}
		if h == "" || strings.ContainsAny(h, "[]/ \t\r\n") || strings.Count(h, ":") == 1 {
			return Config{}, fmt.Errorf("rendezvous: %s=%q is not a host name or an IP address", EnvMasterAddr, host)
		}
		if port == "" {
			return Config{}, fmt.Errorf("rendezvous: %s is not set: rank 0's TCP port is needed when %s=%d", EnvMasterPort, EnvWorldSize, world)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return Config{}, fmt.Errorf("rendezvous: %s=%q is not a TCP port (1 to 65535)", EnvMasterPort, port)
		}
		cfg.Addr = net.JoinHostPort(h, strconv.Itoa(p))
	}
	tok := getenv(EnvToken)
	if tok != "" || need {
		if tok == "" {
			return Config{}, fmt.Errorf("rendezvous: %s is not set: every rank of a job of %d must share a secret token of at least %d bytes (for example, export %s=$(openssl rand -hex 16) before starting the job)", EnvToken, world, MinTokenLen, EnvToken)
		}
		if err := checkToken(tok, EnvToken); err != nil {
			return Config{}, err
		}
		cfg.Token = tok
	}
	return cfg, nil
}

// envInt reads a decimal integer variable.
func envInt(getenv func(string) string, name string, required bool) (int, error) {
	s := getenv(name)
	if s == "" {
		if required {
			return 0, fmt.Errorf("rendezvous: %s is not set", name)
		}
		return 0, nil
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("rendezvous: %s=%q is not a decimal integer", name, s)
	}
	return v, nil
}

func checkToken(tok, what string) error {
	if len(tok) < MinTokenLen || len(tok) > MaxTokenLen {
		return fmt.Errorf("rendezvous: %s is %d bytes long: a job token must be %d to %d bytes", what, len(tok), MinTokenLen, MaxTokenLen)
	}
	return nil
}

// check reports what is wrong with a Config given to Exchange.
func (c Config) check() error {
	if c.WorldSize < 1 || c.WorldSize > MaxWorldSize {
		return fmt.Errorf("rendezvous: world size %d is out of range: it must be 1 to %d", c.WorldSize, MaxWorldSize)
	}
	if c.Rank < 0 || c.Rank >= c.WorldSize {
		return fmt.Errorf("%w: rank %d in a world of %d", ErrRankRange, c.Rank, c.WorldSize)
	}
	if c.WorldSize == 1 {
		return nil
	}
	if err := checkToken(c.Token, "the job token"); err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil || host == "" || port == "" || port == "0" {
		return fmt.Errorf("rendezvous: rank 0's address %q is not host:port (IPv6 as [::1]:29500)", c.Addr)
	}
	return nil
}

func (c Config) logger() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}
