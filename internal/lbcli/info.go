package lbcli

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// infoField is one field of haproxy 2.6's `show info`: its position and
// name, and its tags and type as `show info typed` writes them (origin,
// nature and scope letters; measured with haproxy 2.6.12).
type infoField struct {
	pos  int
	name string
	tags string // e.g. "POS": Product, Output, Service
	typ  string // "str", "u32" or "u64"
}

// infoFields are the fields vipstack fills, in haproxy's order and
// positions. haproxy's fields that are left out have no truthful value
// here: its memory pools (PoolAlloc_*, PoolUsed_*, PoolFailed), its
// computed socket limits (Maxsock, Maxconn, Hard_maxconn), request and
// rate counters (CumReq, *Rate, Max*Rate), pipes, tasks and run queue,
// Idle_pct, Jobs, Listeners, DroppedLogs, BusyPolling, the byte totals,
// Release_date, Build info and Tainted. The fields that are 0 are 0 by
// what vipstack is: no memory limit (Memmax), no rate limit, no TLS
// termination, no compression, no peers, no run-time name resolution,
// no debug commands, no log receiver.
var infoFields = []infoField{
	{0, "Name", "POS", "str"},
	{1, "Version", "POS", "str"},
	{3, "Nbthread", "CGS", "u32"},
	{4, "Nbproc", "CGS", "u32"},
	{5, "Process_num", "KGP", "u32"},
	{6, "Pid", "SGP", "u32"},
	{7, "Uptime", "MDP", "str"},
	{8, "Uptime_sec", "MDP", "u32"},
	{9, "Memmax_MB", "CLP", "u32"},
	{13, "Ulimit-n", "CLP", "u32"},
	{17, "CurrConns", "MGP", "u32"},
	{18, "CumConns", "MCP", "u32"},
	{20, "MaxSslConns", "MMP", "u32"},
	{21, "CurrSslConns", "MGP", "u32"},
	{22, "CumSslConns", "MCP", "u32"},
	{27, "ConnRateLimit", "CLP", "u32"},
	{30, "SessRateLimit", "CLP", "u32"},
	{32, "SslRate", "MRP", "u32"},
	{33, "SslRateLimit", "CLP", "u32"},
	{34, "MaxSslRate", "MMP", "u32"},
	{35, "SslFrontendKeyRate", "MGP", "u32"},
	{36, "SslFrontendMaxKeyRate", "MMP", "u32"},
	{37, "SslFrontendSessionReuse_pct", "MGP", "u32"},
	{38, "SslBackendKeyRate", "MRP", "u32"},
	{39, "SslBackendMaxKeyRate", "MMP", "u32"},
	{40, "SslCacheLookups", "MCP", "u32"},
	{41, "SslCacheMisses", "MCP", "u32"},
	{42, "CompressBpsIn", "MRP", "u32"},
	{43, "CompressBpsOut", "MRP", "u32"},
	{44, "CompressBpsRateLim", "CLP", "u32"},
	{50, "node", "COS", "str"},
	{56, "ActivePeers", "MGP", "u32"},
	{57, "ConnectedPeers", "MGP", "u32"},
	{60, "FailedResolutions", "MGP", "u32"},
	{64, "DebugCommandsIssued", "MGP", "u32"},
	{65, "CumRecvLogs", "MCP", "u32"},
	{67, "Memmax_bytes", "CLP", "u32"},
	{70, "Start_time_sec", "MDP", "u32"},
}

// The words of a typed tag, for JSON (haproxy's names).
var (
	infoOrigin = map[byte]string{'K': "Key", 'M': "Metric", 'S': "Status", 'C': "Config", 'P': "Product"}
	infoNature = map[byte]string{'G': "Gauge", 'L': "Limit", 'O': "Output", 'a': "Avg", 'C': "Counter",
		'D': "Duration", 'M': "Max", 'R': "Rate", 'A': "Age", 'N': "Name", 'T': "Time"}
	infoScope = map[byte]string{'S': "Service", 'P': "Process"}
)

// infoValues returns each field's value by name; a field absent here is
// 0.
func (s *Server) infoValues() map[string]string {
	snap := s.opts.Balancer.Snapshot()
	var cur int64
	var cum uint64
	for _, f := range snap.Frontends {
		cur += f.Sessions
		cum += f.TotalSessions
	}
	up := max(s.opts.Now().Sub(s.opts.Started), 0)
	sec := int64(up / time.Second)
	node, _ := os.Hostname()
	v := map[string]string{
		"Name":    "vipstack",
		"Version": s.opts.Version,
		// Go runs Go code on at most GOMAXPROCS threads at once:
		// haproxy's threads.
		"Nbthread":       strconv.Itoa(runtime.GOMAXPROCS(0)),
		"Nbproc":         "1",
		"Process_num":    "1",
		"Pid":            strconv.Itoa(os.Getpid()),
		"Uptime":         fmt.Sprintf("%dd %dh%02dm%02ds", sec/86400, sec/3600%24, sec/60%60, sec%60),
		"Uptime_sec":     strconv.FormatInt(sec, 10),
		"CurrConns":      strconv.FormatInt(cur, 10),
		"CumConns":       strconv.FormatUint(cum, 10),
		"node":           node,
		"Start_time_sec": strconv.FormatInt(s.opts.Started.Unix(), 10),
	}
	if n, ok := openFilesLimit(); ok {
		v["Ulimit-n"] = strconv.FormatUint(n, 10)
	}
	return v
}

// showInfo is haproxy's `show info [json|typed]`: "Name: value" lines
// (what haproxy_exporter and the like parse), or typed lines
// "<pos>.<name>.1:<tags>:<type>:<value>", or a JSON array of fields. The
// last of json and typed wins, as in haproxy; desc and float change
// nothing here (no descriptions, no rates).
func (s *Server) showInfo(_ *session, args []string) string {
	form := ""
	for _, a := range args {
		if a == "json" || a == "typed" {
			form = a
		}
	}
	vals := s.infoValues()
	value := func(f infoField) string {
		if v, ok := vals[f.name]; ok {
			return v
		}
		return "0"
	}
	var b strings.Builder
	switch form {
	case "typed":
		for _, f := range infoFields {
			fmt.Fprintf(&b, "%d.%s.1:%s:%s:%s\n", f.pos, f.name, f.tags, f.typ, value(f))
		}
	case "json":
		type jsonField struct {
			Field struct {
				Pos  int    `json:"pos"`
				Name string `json:"name"`
			} `json:"field"`
			ProcessNum int `json:"processNum"`
			Tags       struct {
				Origin string `json:"origin"`
				Nature string `json:"nature"`
				Scope  string `json:"scope"`
			} `json:"tags"`
			Value struct {
				Type  string `json:"type"`
				Value any    `json:"value"`
			} `json:"value"`
		}
		out := make([]jsonField, 0, len(infoFields))
		for _, f := range infoFields {
			var j jsonField
			j.Field.Pos, j.Field.Name, j.ProcessNum = f.pos, f.name, 1
			j.Tags.Origin, j.Tags.Nature, j.Tags.Scope = infoOrigin[f.tags[0]], infoNature[f.tags[1]], infoScope[f.tags[2]]
			j.Value.Type = f.typ
			j.Value.Value = value(f)
			if f.typ != "str" {
				n, _ := strconv.ParseUint(value(f), 10, 64)
				j.Value.Value = n
			}
			out = append(out, j)
		}
		enc, _ := json.Marshal(out)
		b.Write(enc)
		b.WriteString("\n")
	default:
		for _, f := range infoFields {
			b.WriteString(f.name + ": " + value(f) + "\n")
		}
	}
	return b.String()
}
