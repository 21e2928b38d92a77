package perf

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// roundConfig writes the configuration round `round` runs: the test cases of
// performance-config.yaml in an order of their own, drawn from the run's
// seed and the round, so that no mode always runs first (or last, on a
// machine that grows busier) and the per-round ratios compare modes whose
// positions vary. Returns the file's name (scheduler_perf reads it relative
// to the working directory) and the order.
func (h *benchHarness) roundConfig(round int) (string, []string, error) {
	src, err := os.ReadFile(filepath.Join(h.outDir, "performance-config.yaml"))
	if err != nil {
		return "", nil, err
	}
	out, order, err := shuffledConfig(src, rand.New(rand.NewSource(h.seed+int64(round))))
	if err != nil {
		return "", nil, err
	}
	name := fmt.Sprintf("performance-config-round%d.yaml", round)
	if err := os.WriteFile(filepath.Join(h.outDir, name), out, 0o644); err != nil {
		return "", nil, err
	}
	return name, order, nil
}

// shuffledConfig is a scheduler_perf configuration (a list of test cases;
// YAML anchors resolved) with its test cases in random order, and the names
// in that order.
func shuffledConfig(src []byte, rng *rand.Rand) ([]byte, []string, error) {
	var cases []map[string]any
	if err := yaml.Unmarshal(src, &cases); err != nil {
		return nil, nil, fmt.Errorf("performance-config.yaml: %w", err)
	}
	if len(cases) == 0 {
		return nil, nil, fmt.Errorf("performance-config.yaml has no test cases")
	}
	rng.Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
	order := make([]string, len(cases))
	for i, c := range cases {
		name, ok := c["name"].(string)
		if !ok || name == "" {
			return nil, nil, fmt.Errorf("performance-config.yaml: test case %d has no name", i)
		}
		order[i] = name
	}
	out, err := yaml.Marshal(cases)
	if err != nil {
		return nil, nil, err
	}
	return out, order, nil
}
