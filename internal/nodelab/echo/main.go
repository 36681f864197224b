// Command echo is internal/nodelab's stand-in backend: it answers every TCP
// connection on -addr (default :8080) with the node's name (the NODE_NAME
// environment variable, which a pod sets from spec.nodeName) and a newline,
// then closes it, so a client sees which node's pod it reached. It exits 0
// on SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	addr := flag.String("addr", ":8080", "TCP address to answer on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	answer := []byte(os.Getenv("NODE_NAME") + "\n")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write(answer)
			c.Close()
		}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
