// Command gopeer stands in for a Go Gazette process in keepalive tests: a
// grpc-go server with default ServerOptions (so grpc-go's default keepalive
// enforcement: pings at most every 5 minutes, none without streams, GOAWAY
// "too_many_pings" after two strikes), or a grpc-go client holding a stream.
//
// It needs no generated code: messages travel as raw bytes through a codec
// registered under the "proto" name, and the server answers any method of the
// protocol.Journal service by echoing every message of its stream back, as a
// Go broker holds a Replicate stream open. Other methods are UNIMPLEMENTED,
// which is what a Go broker answers to a method it does not know.
//
//	gopeer serve
//	    Listen on 127.0.0.1 and print "listening HOST:PORT".
//	gopeer hold TARGET METHOD REQUEST_HEX PING_INTERVAL
//	    Open METHOD on TARGET, send the request, half-close, and print
//	    "message HEX" per response and "ended CODE: DETAILS" when the stream
//	    ends. PING_INTERVAL 0 keeps grpc-go's client defaults (no keepalive
//	    pings); otherwise keepalive pings go out that often, streams or not.
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
	_ "unsafe" // go:linkname

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// grpc-go raises any client ping interval below this floor (10 s) to it. Its
// own keepalive tests lower the floor to keep them short; so do ours.
//
//go:linkname minPingInterval google.golang.org/grpc/internal.KeepaliveMinPingTime
var minPingInterval time.Duration

type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) { return *(v.(*[]byte)), nil }

func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

func echo(_ interface{}, stream grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(stream)
	if !strings.HasPrefix(method, "/protocol.Journal/") {
		return status.Errorf(codes.Unimplemented, "unknown method %s", method)
	}
	for {
		var msg []byte
		if err := stream.RecvMsg(&msg); err != nil {
			return nil // the client half-closed or went away
		}
		if err := stream.SendMsg(&msg); err != nil {
			return err
		}
	}
}

func serve() error {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(echo))
	fmt.Printf("listening %s\n", lis.Addr())
	return srv.Serve(lis)
}

func hold(target, method, requestHex, interval string) error {
	request, err := hex.DecodeString(requestHex)
	if err != nil {
		return err
	}
	every, err := time.ParseDuration(interval)
	if err != nil {
		return err
	}
	options := []grpc.DialOption{grpc.WithInsecure()}
	if every > 0 {
		minPingInterval = every
		options = append(options, grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time: every, PermitWithoutStream: true}))
	}
	conn, err := grpc.Dial(target, options...)
	if err != nil {
		return err
	}
	defer conn.Close()
	desc := &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}
	stream, err := conn.NewStream(context.Background(), desc, method)
	if err != nil {
		return err
	}
	if err := stream.SendMsg(&request); err != nil {
		return err
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	for {
		var msg []byte
		err := stream.RecvMsg(&msg)
		if err != nil {
			st := status.Convert(err)
			fmt.Fprintf(out, "ended %s: %s\n", st.Code(), st.Message())
			return out.Flush()
		}
		fmt.Fprintf(out, "message %s\n", hex.EncodeToString(msg))
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

func main() {
	encoding.RegisterCodec(rawCodec{})
	var err error
	switch {
	case len(os.Args) == 2 && os.Args[1] == "serve":
		err = serve()
	case len(os.Args) == 6 && os.Args[1] == "hold":
		err = hold(os.Args[2], os.Args[3], os.Args[4], os.Args[5])
	default:
		err = fmt.Errorf("usage: gopeer serve | gopeer hold TARGET METHOD REQUEST_HEX PING_INTERVAL")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gopeer:", err)
		os.Exit(1)
	}
}
