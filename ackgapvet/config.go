package ackgapvet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ConfigFile is the name of the optional project configuration file. It is
// read from the module root: the first directory holding a go.mod, from the
// directory being checked upwards. See [Config] for its fields.
//
//	{
//	  "entries": ["example.com/shop/worker.Run", "example.com/shop/worker.Consumer.Loop"],
//	  "effects": {"github.com/acme/ledger-go": "payment"},
//	  "not_effects": ["github.com/foo/certcheck"]
//	}
const ConfigFile = ".ackgapvet.json"

// Config is the project configuration: entry points declared by name and
// overrides of how calls into packages are classified. The zero Config
// changes nothing.
type Config struct {
	// Entries are functions to treat as consumer entry points, each
	// "pkgpath.Func" or "pkgpath.Type.Method" (a method declared on Type or
	// *Type), e.g. "example.com/shop/worker.Consumer.Loop". An entry that
	// names no function of the loaded packages declares nothing, and [Run]
	// lists it in Report.UnknownEntries. Default: none.
	Entries []string `json:"entries,omitempty"`
	// Effects maps import path prefixes to an effect class (ClassPayment,
	// ClassEmail, ClassSMS, ClassNotification, ClassStorage, ClassPublish,
	// ClassKubernetes, ClassHTTP, ClassSearch): a call into a package at or below a prefix that changes
	// something (see [KnownSDKs] for the rule) is an effect of that class.
	// It overrides [KnownSDKs] for the same packages. Default: none.
	Effects map[string]string `json:"effects,omitempty"`
	// NotEffects are import path prefixes whose calls are never effects,
	// and whose functions' own effects (an HTTP request inside a database
	// driver's certificate check) are not followed. It wins over Effects
	// and [KnownSDKs]. Default: none.
	NotEffects []string `json:"not_effects,omitempty"`
}

// validate reports every bad field at once.
func (c *Config) validate() error {
	var errs []error
	for _, e := range c.Entries {
		slash := strings.LastIndex(e, "/")
		if strings.TrimSpace(e) != e || e == "" || !strings.Contains(e[slash+1:], ".") || strings.HasSuffix(e, ".") {
			errs = append(errs, fmt.Errorf("entries: %q: want pkgpath.Func or pkgpath.Type.Method", e))
		}
	}
	for p, class := range c.Effects {
		if p == "" {
			errs = append(errs, errors.New("effects: empty package path prefix"))
		}
		if classDesc[class] == "" {
			errs = append(errs, fmt.Errorf("effects: %q: class %q: want one of payment, email, sms, notification, storage, publish, http", p, class))
		}
	}
	for _, p := range c.NotEffects {
		if p == "" {
			errs = append(errs, errors.New("not_effects: empty package path prefix"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// LoadConfig finds the module root at or above dir (the first directory
// holding a go.mod) and reads [ConfigFile] there. It returns the
// configuration and the file's path; a nil *Config and "" when there is no
// module root or no file. A file that does not parse, has unknown fields or
// fails validation is an error naming the file.
func LoadConfig(dir string) (*Config, string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(abs, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(abs)
		if up == abs {
			return nil, "", nil
		}
		abs = up
	}
	path := filepath.Join(abs, ConfigFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	if err := cfg.validate(); err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return &cfg, path, nil
}

// compiledConfig is a validated [Config] ready for lookups.
type compiledConfig struct {
	entries    map[string]bool
	effects    map[string]string
	notEffects []string
	// loadErr is the error of loading the default file (then the rest is
	// empty).
	loadErr error
}

func (c *compiledConfig) notEffect(path string) bool {
	return slices.ContainsFunc(c.notEffects, func(p string) bool { return underPrefix(path, p) })
}

func compileConfig(cfg *Config) (*compiledConfig, error) {
	cc := &compiledConfig{entries: map[string]bool{}, effects: map[string]string{}}
	if cfg == nil {
		return cc, nil
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	for _, e := range cfg.Entries {
		cc.entries[e] = true
	}
	for p, c := range cfg.Effects {
		cc.effects[p] = c
	}
	cc.notEffects = slices.Clone(cfg.NotEffects)
	return cc, nil
}

var (
	configPtr      atomic.Pointer[compiledConfig]
	configLoadOnce sync.Once
)

// SetConfig installs cfg for every check in this process, replacing the
// configuration found by default; nil means no configuration. It returns the
// validation error (all bad fields at once) and then changes nothing. [Run]
// calls it with the file found for its directory plus [RunConfig].Entries.
// Without a call, the checks read [ConfigFile] from the module root above
// the working directory on first use (go vet runs the tool in each
// package's directory).
func SetConfig(cfg *Config) error {
	cc, err := compileConfig(cfg)
	if err != nil {
		return err
	}
	configLoadOnce.Do(func() {}) // an explicit configuration: no default load
	configPtr.Store(cc)
	return nil
}

// activeConfig returns the installed configuration, loading the default one
// on first use.
func activeConfig() *compiledConfig {
	configLoadOnce.Do(func() {
		cfg, _, err := LoadConfig(".")
		cc, cerr := compileConfig(cfg)
		if err = errors.Join(err, cerr); err != nil {
			cc = &compiledConfig{entries: map[string]bool{}, effects: map[string]string{}, loadErr: err}
		}
		configPtr.Store(cc)
	})
	return configPtr.Load()
}

// configError is the error of loading the default configuration file, nil
// when it loaded or [SetConfig] replaced it.
func configError() error { return activeConfig().loadErr }

// applyConfig installs the configuration of a [Run]: [ConfigFile] from the
// module root above cfg.Dir, plus cfg.Entries.
func applyConfig(cfg *RunConfig) error {
	file, _, err := LoadConfig(cfg.Dir)
	if err != nil {
		return err
	}
	merged := Config{}
	if file != nil {
		merged = *file
	}
	merged.Entries = append(slices.Clone(merged.Entries), cfg.Entries...)
	return SetConfig(&merged)
}
