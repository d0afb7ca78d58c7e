// A client-go leader elector on a coordination.k8s.io/v1 Lease, for the
// interoperability test (it must never lead at the same time as a Rollcall
// candidate on the same Lease) and the benchmark's reference row. It prints
// one line per event to stdout:
//
//	STARTED <unix-nanos>
//	LEADER <unix-nanos> <identity>   (it saw a new leader, possibly itself)
//	ELECTED <unix-nanos>
//	LOST <unix-nanos>
//
// and exits 0 after LOST, or when its context ends.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	namespace := flag.String("namespace", "default", "namespace of the Lease")
	name := flag.String("lease", "", "Lease name")
	identity := flag.String("identity", "client-go", "holder identity")
	lease := flag.Duration("lease-duration", 4*time.Second, "lease duration")
	renew := flag.Duration("renew-deadline", 3*time.Second, "renew deadline")
	retry := flag.Duration("retry-period", 500*time.Millisecond, "retry period")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	client := kubernetes.NewForConfigOrDie(config)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: *name, Namespace: *namespace},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: *identity},
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	fmt.Println("STARTED", time.Now().UnixNano())
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   *lease,
		RenewDeadline:   *renew,
		RetryPeriod:     *retry,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { fmt.Println("ELECTED", time.Now().UnixNano()) },
			OnStoppedLeading: func() { fmt.Println("LOST", time.Now().UnixNano()) },
			OnNewLeader:      func(identity string) { fmt.Println("LEADER", time.Now().UnixNano(), identity) },
		},
	})
}
