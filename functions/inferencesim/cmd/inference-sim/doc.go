// Command inference-sim runs the vLLM-compatible inference simulator as a Knative function (see
// functions/inferencesim, whose Main reads the environment once: PORT, POD_NAME, K_SERVICE and
// the hostname, POD_NAMESPACE, POD_IP, SIM_MODEL, PYTHONHASHSEED, LENS_LISTEN_HOST, the module
// directories, and the secrets VLLM_API_KEY and LENS_SIM_ADMIN_TOKEN; the command line holds
// every other setting).
//
// It imports functions/inferencesim only.
package main
