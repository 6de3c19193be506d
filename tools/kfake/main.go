// Command kfake runs an in-memory Kafka-protocol broker (franz-go's kfake)
// on 127.0.0.1 for tests and CI. Topics are created on first use.
//
// It prints "kfake listening on ADDR[,ADDR...]" once ready and shuts down on
// SIGINT or SIGTERM. Nothing is persisted, a restart starts empty, unless
// -data-dir names a directory: then kfake writes its topics, records,
// groups and committed offsets there as it goes and reloads them at start,
// so a process stopped and started again on the same directory resumes
// where it was (what the reconnect test of brokers/kafkabroker restarts).
//
//	kfake -port 9092 -partitions 4 -group-min-session 1s [-data-dir DIR]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 9092, "TCP port to listen on (127.0.0.1 only)")
	partitions := flag.Int("partitions", 4, "partitions of auto-created topics")
	minSession := flag.Duration("group-min-session", time.Second, "minimum consumer-group session timeout")
	dataDir := flag.String("data-dir", "", "directory to keep the cluster's state in across restarts (default: none, memory only)")
	flag.Parse()

	opts := []kfake.Opt{
		kfake.Ports(*port), // kfake binds 127.0.0.1:port
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(*partitions),
		kfake.GroupMinSessionTimeout(*minSession),
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		log.Fatalf("kfake: %v", err)
	}
	fmt.Printf("kfake listening on %s\n", strings.Join(c.ListenAddrs(), ","))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	log.Printf("kfake: %v, closing", s)
	c.Close()
}
