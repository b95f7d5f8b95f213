// Package conntest holds test helpers about connections, shared by the tests of the packages
// that manage them (the load generator's lean client, the inference router's upstream
// pool): a test asserts how many connections a client opened, not only what it was answered.
// Only tests import it. It imports nothing of ours.
package conntest
