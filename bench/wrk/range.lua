-- bench/media.sh's Range GET: each request asks for one MiB of the file at the URL given to
-- wrk, `Range: bytes=N-(N+1 MiB-1)` with N a random multiple of 1 MiB (BENCH_RANGE_BLOCKS
-- blocks: the file's size in MiB).
--
-- No `response` callback: with one, wrk copies every body into a Lua string, and at 1 MiB an
-- answer that load-generator work would be a large part of what is measured (wrk shares the
-- two CPUs with the server). So the checks are on the totals instead: any status outside
-- 2xx/3xx is unexpected, and the bytes per answer must be one MiB plus headers (a server
-- that ignored the range and sent the whole file, or sent less, fails the run).
dofile(os.getenv("BENCH_DIR") .. "/wrk/common.lua")
response = nil
local MIB = 1024 * 1024
local blocks = tonumber(os.getenv("BENCH_RANGE_BLOCKS") or "1")

function init(args)
   math.randomseed(os.time() + (thread_index or 0) * 7919)
end

function request()
   local n = math.random(0, blocks - 1) * MIB
   return wrk.format("GET", nil, { ["Range"] = string.format("bytes=%d-%d", n, n + MIB - 1) })
end

function done(summary, latency, requests)
   local e = summary.errors
   local per = summary.bytes / math.max(summary.requests, 1)
   local unexpected, sample = e.status, ""
   if e.status > 0 then sample = "answers outside 2xx/3xx" end
   -- Headers are a few hundred bytes (4 KiB leaves room); wrk also counts what it read of
   -- the answers still in flight when the run ended (at most one MiB a connection). That
   -- still tells one MiB from the whole file, or from a short answer.
   local conns = tonumber(os.getenv("BENCH_CONNECTIONS") or "1")
   local most = summary.requests * (MIB + 4096) + conns * MIB
   if summary.requests > 0 and (summary.bytes < summary.requests * MIB or summary.bytes > most) then
      unexpected = unexpected + summary.requests
      sample = string.format("%.0f bytes an answer, not 1 MiB plus headers", per)
   end
   io.write(string.format(
      'BENCH_JSON {"requests": %d, "duration_us": %d, "rps": %.2f, "p50_us": %d, ' ..
      '"p99_us": %d, "max_us": %d, "non2xx": %d, "socket_errors": %d, "exhausted": 0, ' ..
      '"bytes": %d, "sample": "%s"}\n',
      summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
      latency:percentile(50), latency:percentile(99), latency.max, unexpected,
      e.connect + e.read + e.write + e.timeout, summary.bytes, sample))
end
