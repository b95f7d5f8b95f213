// Package timingtest helps tests whose point is timing (a pacer's precision, a simulated
// latency, a load generator's schedule) tell a measurement the code got wrong from one the host
// spoiled: it reads how long this process waited for a CPU (Linux schedstat, summed over its
// threads) and how much time the hypervisor stole, across a measurement window, and repeats a
// failed window only when the host was what delayed it. It imports nothing of ours.
package timingtest
