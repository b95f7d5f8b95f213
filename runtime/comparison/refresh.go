package comparison

import "encoding/json"

// NeedsRefresh says whether a stored report must be rebuilt (§2): it is missing, empty or not
// an object, its comparison_version is not 2, a comparison lacks parity (or, with a baseline,
// the parity's reasons), mechanism_delta_percent, significance (or its metrics their method) or (with a baseline)
// mechanisms, or a comparison with rate-stage rows lacks either side's
// configuration facts or has a row without guide or baseline.
func NeedsRefresh(stored json.RawMessage) bool {
	var report map[string]any
	if err := json.Unmarshal(stored, &report); err != nil || len(report) == 0 {
		return true
	}
	if v, ok := report["comparison_version"].(float64); !ok || v != Version {
		return true
	}
	var comparisons []any
	switch c := report["comparisons"].(type) {
	case nil:
	case []any:
		comparisons = c
	default:
		return true
	}
	for _, item := range comparisons {
		c, ok := item.(map[string]any)
		if !ok {
			return true
		}
		parity, ok := c["parity"].(map[string]any)
		if !ok {
			return true
		}
		if checks, _ := parity["checks"].(map[string]any); len(checks) > 0 {
			if _, ok := parity["reasons"]; !ok {
				return true // parity from before it named its reasons (and judged like-for-like pairs unequal)
			}
		}
		if _, ok := c["mechanism_delta_percent"]; !ok {
			return true
		}
		if _, ok := c["mechanisms"]; !ok && c["baseline_case_id"] != nil {
			return true // from before the report named the mechanisms
		}
		sig, ok := c["significance"]
		if !ok {
			return true // from before the confidence intervals (null when the runs keep no replicates)
		}
		if s, _ := sig.(map[string]any); s != nil {
			metrics, _ := s["metrics"].(map[string]any)
			for _, m := range metrics {
				if mm, _ := m.(map[string]any); mm["method"] == nil {
					return true // intervals from before Welch's t over repetitions, too narrow with few
				}
			}
		}
		stats, _ := c["rate_stage_statistics"].(map[string]any)
		rows, _ := stats["rows"].([]any)
		if len(rows) == 0 {
			continue
		}
		if !nonEmptyObject(c["guide_configuration"]) || !nonEmptyObject(c["baseline_configuration"]) {
			return true
		}
		for _, r := range rows {
			row, ok := r.(map[string]any)
			if !ok {
				return true
			}
			_, g := row["guide"]
			_, b := row["baseline"]
			if !g || !b {
				return true
			}
		}
	}
	return false
}

func nonEmptyObject(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) > 0
}
