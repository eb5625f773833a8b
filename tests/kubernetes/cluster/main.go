// Command kube is the real Kubernetes components in one binary, for hpcplane's tests on a real
// cluster: the first argument names the component (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kubelet, kube-proxy), the rest are its own flags. One binary links the packages
// they share once; the code is Kubernetes' and etcd's own, at the versions go.mod pins. kubectl,
// CoreDNS and Helm are built from this module too (tests/kubernetes/realcluster.py), each a
// binary of its own: kubectl runs hundreds of times a test run, and the components' package
// initialisation would make each start twice as costly.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	components := map[string]func() *cobra.Command{
		"kube-apiserver":          apiserver.NewAPIServerCommand,
		"kube-controller-manager": controllermanager.NewControllerManagerCommand,
		"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
		"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
		"kube-proxy":              proxy.NewProxyCommand,
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kube-proxy [flags]")
		os.Exit(2)
	}
	name := os.Args[1]
	if name == "etcd" {
		etcdmain.Main(append([]string{"etcd"}, os.Args[2:]...))
		return
	}
	newCommand, ok := components[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "kube: no component %q\n", name)
		os.Exit(2)
	}
	os.Args = append([]string{name}, os.Args[2:]...)
	os.Exit(cli.Run(newCommand()))
}
