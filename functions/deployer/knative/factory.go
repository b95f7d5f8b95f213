package knative

import (
	"github.com/lensfn/lensfn/functions/deployer"
	"github.com/lensfn/lensfn/runtime/inventory"
)

// Factory is the knative provider's deployer.ProviderFactory: its admission check is built once,
// when the deployer starts, so a deployer that cannot build it does not start.
var Factory = deployer.ProviderFactory{Name: deployer.ProviderKnative, New: func(s deployer.Settings, repo *inventory.Repo) (deployer.Provider, error) {
	admission, err := NewAdmission()
	if err != nil {
		return nil, err
	}
	return &Provider{Inventory: repo, ReadyTimeout: s.DeployTimeout, Admission: admission}, nil
}}
