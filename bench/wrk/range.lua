-- bench/media.sh's Range GETs. Each request asks for one range of the file at the URL given
-- to wrk, picked at random from a list:
--
-- - BENCH_RANGES, `OFFSET+LENGTH` pairs separated by commas: the HLS segments of a
--   rendition, as its playlist lists them (`#EXT-X-BYTERANGE`), which a player fetches;
-- - otherwise one MiB at a random multiple of 1 MiB (BENCH_RANGE_BLOCKS blocks: the file's
--   size in MiB), a player's seek into an MP4.
--
-- No `response` callback: with one, wrk copies every body into a Lua string, and at a MiB an
-- answer that load-generator work would be a large part of what is measured (wrk shares the
-- two CPUs with the server). So the checks are on the totals instead: any status outside
-- 2xx/3xx is unexpected, and the bytes per answer must lie between the shortest range and the
-- longest plus headers (a server that ignored the range and sent the whole file, or sent
-- less, fails the run).
dofile(os.getenv("BENCH_DIR") .. "/wrk/common.lua")
response = nil
local MIB = 1024 * 1024
local ranges = {}
local spec = os.getenv("BENCH_RANGES") or ""
for offset, length in string.gmatch(spec, "(%d+)%+(%d+)") do
   table.insert(ranges, { tonumber(offset), tonumber(length) })
end
if #ranges == 0 then
   for i = 0, tonumber(os.getenv("BENCH_RANGE_BLOCKS") or "1") - 1 do
      table.insert(ranges, { i * MIB, MIB })
   end
end
local shortest, longest = math.huge, 0
for _, r in ipairs(ranges) do
   shortest = math.min(shortest, r[2])
   longest = math.max(longest, r[2])
end

function init(args)
   math.randomseed(os.time() + (thread_index or 0) * 7919)
end

function request()
   local r = ranges[math.random(1, #ranges)]
   return wrk.format("GET", nil, { ["Range"] = string.format("bytes=%d-%d", r[1], r[1] + r[2] - 1) })
end

function done(summary, latency, requests)
   local e = summary.errors
   local per = summary.bytes / math.max(summary.requests, 1)
   local unexpected, sample = e.status, ""
   if e.status > 0 then sample = "answers outside 2xx/3xx" end
   -- Headers are a few hundred bytes (4 KiB leaves room); wrk also counts what it read of
   -- the answers still in flight when the run ended (at most the longest range a
   -- connection). That still tells a range from the whole file, or from a short answer.
   local conns = tonumber(os.getenv("BENCH_CONNECTIONS") or "1")
   local most = summary.requests * (longest + 4096) + conns * longest
   if summary.requests > 0 and (summary.bytes < summary.requests * shortest or summary.bytes > most) then
      unexpected = unexpected + summary.requests
      sample = string.format("%.0f bytes an answer, outside %d to %d plus headers", per,
         shortest, longest)
   end
   io.write(string.format(
      'BENCH_JSON {"requests": %d, "duration_us": %d, "rps": %.2f, "p50_us": %d, ' ..
      '"p99_us": %d, "max_us": %d, "non2xx": %d, "socket_errors": %d, "exhausted": 0, ' ..
      '"bytes": %d, "sample": "%s"}\n',
      summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
      latency:percentile(50), latency:percentile(99), latency.max, unexpected,
      e.connect + e.read + e.write + e.timeout, summary.bytes, sample))
end
