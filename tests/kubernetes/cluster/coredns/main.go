// Command coredns is CoreDNS with only the plugins a test cluster's DNS needs (the Service and
// Pod records of the kubernetes plugin), built from CoreDNS's own packages at the version go.mod
// pins: the DNS every real cluster runs, for the pods' hostname.subdomain names.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	// The order CoreDNS's plugin.cfg gives these plugins: a query passes them in this order.
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "cache", "kubernetes"}
}

func main() {
	coremain.Run()
}
