package evaluationapi

import (
	"strings"

	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/problem"
)

// checkSpecificationFile decides what a run's specification_file may say. In llm-d-benchmark it
// selects the guide a standup deploys and the harness runs against; Lensfn benchmarks the
// target as the inventory has it and applies no specification. So the field is honoured only as
// a statement about the target: empty, or naming the guide ("guides/<name>" or "<name>") the
// deployer deployed the execution from. Anything else is refused with a 422 naming the field,
// rather than stored and ignored.
func checkSpecificationFile(file *string, target evalrun.Target) error {
	if file == nil || strings.TrimSpace(*file) == "" {
		return nil
	}
	guide := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(*file), "guides/"), "/")
	var msg string
	switch {
	case !deployconfig.Known(guide):
		msg = "names no guide Lensfn deploys (" + strings.Join(deployconfig.Providers(), ", ") +
			"); Lensfn benchmarks the target as it is and runs no llm-d-benchmark specification"
	case target.ProviderRef == "":
		msg = "names guide " + guide + ", but deployment execution " + target.ExecutionID +
			" is an existing endpoint, not deployed from a guide; leave specification_file empty"
	case target.ProviderRef != guide:
		msg = "names guide " + guide + ", but deployment execution " + target.ExecutionID + " was deployed from " + target.ProviderRef
	default:
		return nil
	}
	return problem.Validation(problem.Field(msg, "value_error", "body", "specification_file"))
}
