package local

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// The simulator's address is fixed (LENS_SIM_ADDR) so tasks survive a restart: its port is
// used as given, a taken or non-loopback address is refused saying what to change, and host:0
// picks a free port (tests); other functions always get a free port.
func TestTheSimulatorListensOnItsConfiguredAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := l.Addr().String()
	l.Close() // free again
	sim := Service{Name: SimulatorService}
	s := &Stack{opts: Options{SimulatorAddr: free}}
	if port, _, err := s.portFor(sim); err != nil || !strings.HasSuffix(free, ":"+strconv.Itoa(port)) {
		t.Fatalf("free address %s: port %d, %v", free, port, err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	s.opts.SimulatorAddr = busy.Addr().String()
	if _, _, err := s.portFor(sim); err == nil || !strings.Contains(err.Error(), "is taken") || !strings.Contains(err.Error(), "LENS_SIM_ADDR") {
		t.Fatalf("taken address: %v", err)
	}
	if port, _, err := s.portFor(Service{Name: "simulation-api"}); err != nil || s.opts.SimulatorAddr == "127.0.0.1:"+strconv.Itoa(port) {
		t.Fatalf("another function got %d, %v", port, err)
	}
	for _, bad := range []string{"0.0.0.0:8000", "8000", "127.0.0.1:99999"} {
		s.opts.SimulatorAddr = bad
		if _, _, err := s.portFor(sim); err == nil || !strings.Contains(err.Error(), "loopback host:port") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	s.opts.SimulatorAddr = "127.0.0.1:0"
	if port, _, err := s.portFor(sim); err != nil || port == 0 {
		t.Fatalf("127.0.0.1:0: %d %v", port, err)
	}
}
